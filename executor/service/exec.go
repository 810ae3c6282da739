package service

import (
	"context"
	"errors"
	"io"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	clientexec "k8s.io/client-go/util/exec"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// streamingRuntime is a runtime whose raw CRI service can be had, for
// the streaming calls.
type streamingRuntime interface {
	Service(ctx context.Context) (internalapi.RuntimeService, error)
	ClientContext(ctx context.Context) context.Context
}

// criService returns the runner's raw CRI runtime service, and ctx as
// the calls on it take it (carrying the CRI client's logger).
func (s *Service) criService(ctx context.Context) (internalapi.RuntimeService, context.Context, error) {
	rt, ok := s.runner.Runtime().(streamingRuntime)
	if !ok {
		return nil, ctx, errgrpc.New(errgrpc.ErrUnimplemented, "this runtime client cannot stream")
	}
	rs, err := rt.Service(ctx)
	return rs, rt.ClientContext(ctx), err
}

// ValidateExecStart checks the first message of an Exec session, every
// problem at once.
func ValidateExecStart(start *executorv1.ExecStart) error {
	var l fielderr.List
	if start == nil {
		l.Add("start", "required in the first message")
		return l.Err()
	}
	containerIDProblems(&l, start.GetContainerId())
	l.Append("", validation.CommandProblems("start.command", start.GetCommand()))
	return l.Err()
}

// containerIDProblems checks a session's container id: required, bounded.
func containerIDProblems(l *fielderr.List, id string) {
	switch {
	case id == "":
		l.Add("start.container_id", "required")
	case len(id) > validation.MaxIDLen:
		l.Add("start.container_id", "%d bytes exceed the limit of %d", len(id), validation.MaxIDLen)
	}
}

// inputProblems checks a message of a session after its start (or the
// input beside it): no second start, bounded input.
func inputProblems(hasStart bool, in *syncpodv1.StreamInput) error {
	var l fielderr.List
	if hasStart {
		l.Add("start", "only in the first message")
	}
	l.Append("", validation.StreamInputProblems("input", in))
	return l.Err()
}

// Exec runs a command in a container through the runtime's streaming
// server, with client-go's remote command client (SPDY, as the kubelet's
// clients speak to CRI streaming servers).
func (s *Service) Exec(stream executorv1.ExecutorService_ExecServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if err := firstProblems(ValidateExecStart(start), first.GetInput()); err != nil {
		return errgrpc.ToGRPC(err)
	}
	ctx := stream.Context()
	rs, ctx, err := s.criService(ctx)
	if err != nil {
		return errgrpc.ToGRPC(classify(err))
	}
	resp, err := rs.Exec(ctx, &runtimeapi.ExecRequest{
		ContainerId: start.GetContainerId(), Cmd: start.GetCommand(), Tty: start.GetTty(),
		Stdin: start.GetStdin(), Stdout: true, Stderr: !start.GetTty(),
	})
	if err != nil {
		return errgrpc.ToGRPC(classify(err))
	}
	s.log.Debug("exec", "container_id", start.GetContainerId(), "tty", start.GetTty())
	code, err := runRemoteCommand(ctx, resp.GetUrl(), start.GetStdin(), start.GetTty(), stream.Recv, func(m *executorv1.ExecRequest) bool { return m.GetStart() != nil }, func(out *syncpodv1.StreamOutput) error {
		return stream.Send(&executorv1.ExecResponse{Output: out})
	})
	if err != nil {
		return err
	}
	return stream.Send(&executorv1.ExecResponse{Output: &syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_ExitCode{ExitCode: code}}})
}

// inputMessage is a request that may carry session input.
type inputMessage interface{ GetInput() *syncpodv1.StreamInput }

// firstProblems joins the problems of a session's start with those of
// the input its first message may carry.
func firstProblems(startErr error, in *syncpodv1.StreamInput) error {
	var l fielderr.List
	l.Append("", fielderr.As(startErr))
	l.Append("", fielderr.As(inputProblems(false, in)))
	return l.Err()
}

// runRemoteCommand connects to a CRI streaming URL and carries a session:
// input read by recv goes to the command, its output to send. It returns
// the command's exit code.
func runRemoteCommand[M inputMessage](ctx context.Context, rawURL string, withStdin, tty bool, recv func() (M, error), hasStart func(M) bool, send func(*syncpodv1.StreamOutput) error) (int32, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, errgrpc.ToGRPC(errgrpc.Errorf(errgrpc.ErrInternal, "the runtime's streaming URL %q: %v", rawURL, err))
	}
	exe, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	if err != nil {
		return 0, errgrpc.ToGRPC(errgrpc.Errorf(errgrpc.ErrInternal, "streaming client: %v", err))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdinR, stdinW := io.Pipe()
	sizes := &sizeQueue{ch: make(chan remotecommand.TerminalSize, 4), done: ctx.Done()}
	bad := make(chan error, 1) // a bad input message ends the session
	go func() {
		defer stdinW.Close()
		for {
			msg, err := recv()
			if err != nil {
				// The caller closed its side, or went away.
				return
			}
			if err := inputProblems(hasStart(msg), msg.GetInput()); err != nil {
				bad <- errgrpc.ToGRPC(err)
				cancel()
				return
			}
			switch in := msg.GetInput().GetInput().(type) {
			case *syncpodv1.StreamInput_Stdin:
				if _, err := stdinW.Write(in.Stdin); err != nil {
					return
				}
			case *syncpodv1.StreamInput_StdinClosed:
				_ = stdinW.Close()
			case *syncpodv1.StreamInput_Resize:
				select {
				case sizes.ch <- remotecommand.TerminalSize{Width: uint16(in.Resize.GetWidth()), Height: uint16(in.Resize.GetHeight())}:
				default: // a newer size follows; never block input on resizes
				}
			}
		}
	}()
	// The client's copy goroutines may still write after StreamWithContext
	// returns (its context cancelled): sendErr and ended are theirs and
	// ours under sendMu, and nothing is sent once the session has ended.
	var sendMu sync.Mutex
	var sendErr error
	ended := false
	out := func(wrap func([]byte) *syncpodv1.StreamOutput) io.Writer {
		return writerFunc(func(p []byte) (int, error) {
			sendMu.Lock()
			defer sendMu.Unlock()
			if ended {
				return 0, io.ErrClosedPipe
			}
			if sendErr == nil {
				sendErr = send(wrap(append([]byte(nil), p...)))
			}
			if sendErr != nil {
				cancel()
				return 0, sendErr
			}
			return len(p), nil
		})
	}
	opts := remotecommand.StreamOptions{
		Stdout: out(func(b []byte) *syncpodv1.StreamOutput {
			return &syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stdout{Stdout: b}}
		}),
		Tty: tty,
	}
	if !tty {
		opts.Stderr = out(func(b []byte) *syncpodv1.StreamOutput {
			return &syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stderr{Stderr: b}}
		})
	} else {
		opts.TerminalSizeQueue = sizes
	}
	if withStdin {
		opts.Stdin = stdinR
	}
	err = exe.StreamWithContext(ctx, opts)
	_ = stdinR.Close()
	sendMu.Lock()
	ended = true
	sent := sendErr
	sendMu.Unlock()
	select {
	case b := <-bad:
		return 0, b
	default:
	}
	var exit clientexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return int32(exit.Code), nil
	case sent != nil:
		return 0, sent
	case ctx.Err() != nil:
		return 0, errgrpc.ToGRPC(ctx.Err())
	}
	return 0, errgrpc.ToGRPC(errgrpc.Errorf(errgrpc.ErrUnavailable, "streaming session: %v", err))
}

// sizeQueue hands terminal sizes to the remote command client.
type sizeQueue struct {
	ch   chan remotecommand.TerminalSize
	done <-chan struct{}
}

// Next blocks for the next size; nil ends the resizes.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s := <-q.ch:
		return &s
	case <-q.done:
		return nil
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
