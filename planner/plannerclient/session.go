package plannerclient

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/syncpod/syncpod/internal/chunkio"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Session is an open interactive session of the planner (Exec, Attach),
// reduced to what carrying a terminal or standard streams over it needs.
// Send and CloseSend may be called from several goroutines (standard
// input and terminal resizes, say): they take turns, as a gRPC stream
// allows one sender at a time. Recv is for one goroutine.
type Session struct {
	// Send sends input: bytes of standard input, its end, or a terminal
	// size.
	Send func(*syncpodv1.StreamInput) error
	// Recv receives the next output: bytes of standard output or error,
	// or the exit code; io.EOF once the planner has ended the stream.
	Recv func() (*syncpodv1.StreamOutput, error)
	// CloseSend says that no more input will come.
	CloseSend func() error
}

// SendStdin sends what in reads as standard input through send, a chunk
// at a time, then says that it has ended; it returns then, or as soon as
// send fails (the session takes no more input). It blocks: run it in a
// goroutine of its own.
func SendStdin(in io.Reader, send func(*syncpodv1.StreamInput) error) {
	ended := chunkio.Pump(in, func(b []byte) error {
		return send(&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_Stdin{Stdin: b}})
	})
	if ended {
		_ = send(&syncpodv1.StreamInput{Input: &syncpodv1.StreamInput_StdinClosed{StdinClosed: true}})
	}
}

// Exec opens an Exec session on the planner and sends its start. The
// session lives until ctx ends or the planner ends it.
func Exec(ctx context.Context, client plannerv1.PlannerServiceClient, start *plannerv1.ExecStart) (*Session, error) {
	return open(ctx, client.Exec, &plannerv1.ExecRequest{Start: start},
		func(in *syncpodv1.StreamInput) *plannerv1.ExecRequest { return &plannerv1.ExecRequest{Input: in} },
		(*plannerv1.ExecResponse).GetOutput)
}

// Attach opens an Attach session on the planner and sends its start. The
// session lives until ctx ends or the planner ends it.
func Attach(ctx context.Context, client plannerv1.PlannerServiceClient, start *plannerv1.AttachStart) (*Session, error) {
	return open(ctx, client.Attach, &plannerv1.AttachRequest{Start: start},
		func(in *syncpodv1.StreamInput) *plannerv1.AttachRequest { return &plannerv1.AttachRequest{Input: in} },
		(*plannerv1.AttachResponse).GetOutput)
}

// open opens a session stream with call, sends first, and wraps the
// stream: input makes a request of an input, output takes a response's
// output.
func open[Req, Resp any](ctx context.Context, call func(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[Req, Resp], error),
	first *Req, input func(*syncpodv1.StreamInput) *Req, output func(*Resp) *syncpodv1.StreamOutput,
) (*Session, error) {
	stream, err := call(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(first); err != nil {
		return nil, sendErr(stream, err)
	}
	var sending sync.Mutex
	return &Session{
		Send: func(in *syncpodv1.StreamInput) error {
			sending.Lock()
			defer sending.Unlock()
			return sendErr(stream, stream.Send(input(in)))
		},
		Recv: func() (*syncpodv1.StreamOutput, error) {
			msg, err := stream.Recv()
			return output(msg), err
		},
		CloseSend: func() error {
			sending.Lock()
			defer sending.Unlock()
			return stream.CloseSend()
		},
	}, nil
}

// sendErr is what a failed Send means: io.EOF says only that the stream
// has ended (refused by the server, say, before it read anything), and
// its status, the real error, comes from receiving.
func sendErr(stream grpc.ClientStream, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	for {
		if rerr := stream.RecvMsg(new(emptypb.Empty)); rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return err
			}
			return rerr
		}
	}
}
