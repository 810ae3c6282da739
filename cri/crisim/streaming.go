package crisim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/syncpod/syncpod/internal/chunkio"
)

// The streaming server: Exec, Attach and PortForward answer with a URL on
// a loopback HTTP server that speaks the Kubernetes CRI streaming
// protocols (SPDY and WebSocket), served by the upstream
// k8s.io/cri-streaming library, the one the kubelet uses, so crictl exec
// and port-forward work against crisim. Exec runs the command as a host
// process with the container's working directory and environment (in its
// process group, unless it has a terminal); port-forward connects to the
// port on 127.0.0.1, where a crisim container, a host process, listens.
// Attach shows a process container's live output and writes to the input
// of one created with stdin (attach.go).

// ErrStreamingNotStarted: Exec, Attach or PortForward before ServeStreams.
var ErrStreamingNotStarted = fmt.Errorf("%w: the streaming server is not running", ErrFailedPrecondition)

// streams is the running streaming server of a Runtime.
type streams struct {
	mu  sync.Mutex
	srv streaming.Server
}

func (s *streams) get() (streaming.Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil, ErrStreamingNotStarted
	}
	return s.srv, nil
}

// ServeStreams serves the streaming protocols on lis (a loopback TCP
// listener) until ctx ends. Exec, Attach and PortForward are refused
// until it runs.
func (r *Runtime) ServeStreams(ctx context.Context, lis net.Listener) error {
	cfg := streaming.DefaultConfig
	cfg.Addr = lis.Addr().String()
	cfg.BaseURL = &url.URL{Scheme: "http", Host: lis.Addr().String()}
	srv, err := streaming.NewServer(cfg, streamRuntime{r})
	if err != nil {
		return err
	}
	r.streams.mu.Lock()
	r.streams.srv = srv
	r.streams.mu.Unlock()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(lis) }()
	r.log.Info("streaming server listening", "address", lis.Addr().String())
	select {
	case <-ctx.Done():
		r.streams.mu.Lock()
		r.streams.srv = nil
		r.streams.mu.Unlock()
		_ = hs.Close()
		<-errc
		return nil
	case err := <-errc:
		return err
	}
}

// Exec returns the URL of an exec session.
func (r *Runtime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	srv, err := r.streams.get()
	if err != nil {
		return nil, err
	}
	if _, err := r.execTarget(req.GetContainerId()); err != nil {
		return nil, err
	}
	return srv.GetExec(req)
}

// Attach returns the URL of an attach session to a running process
// container (see attach.go). Standard input is refused when the
// container was not created with stdin.
func (r *Runtime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	srv, err := r.streams.get()
	if err != nil {
		return nil, err
	}
	if _, err := r.attachTarget(req.GetContainerId(), req.GetStdin()); err != nil {
		return nil, err
	}
	return srv.GetAttach(req)
}

// PortForward returns the URL of a port-forward session.
func (r *Runtime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	srv, err := r.streams.get()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	sb, ok := r.sandboxes[req.GetPodSandboxId()]
	ready := ok && sb.state == runtimeapi.PodSandboxState_SANDBOX_READY
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: sandbox %q", ErrNotFound, req.GetPodSandboxId())
	}
	if !ready {
		return nil, fmt.Errorf("%w: sandbox %q is not ready", ErrFailedPrecondition, req.GetPodSandboxId())
	}
	return srv.GetPortForward(req)
}

// execTarget is what an exec needs of a running process-mode container.
type execTarget struct {
	dir string
	env []string
	// pgid is the container's process group the command joins, so that
	// it ends with the container; 0 for a group of its own.
	pgid int
	// pathMap rewrites the command's paths (mounts.go).
	pathMap []pathMapping
}

func (r *Runtime) execTarget(id string) (execTarget, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return execTarget{}, fmt.Errorf("%w: container %q", ErrNotFound, id)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return execTarget{}, fmt.Errorf("%w: container %q is not running", ErrFailedPrecondition, id)
	}
	t := execTarget{dir: c.workingDir, env: c.env, pathMap: c.pathMap}
	switch p := c.run.(type) {
	case *procRunner:
		if !p.session {
			t.pgid = p.pgid
		} // a container with a terminal leads a session no other may join
	case *shimRunner:
		// The container's group lives in its shim's session, which no
		// process of crisim's may join: the command gets a group of its
		// own and ends with its session instead.
	default:
		return execTarget{}, fmt.Errorf("%w: container %q is simulated: there is no process to exec beside", ErrFailedPrecondition, id)
	}
	return t, nil
}

// streamRuntime carries out the sessions the streaming server accepts.
type streamRuntime struct{ r *Runtime }

func (s streamRuntime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	if len(cmd) == 0 {
		return fmt.Errorf("%w: an empty command", ErrInvalid)
	}
	t, err := s.r.execTarget(id)
	if err != nil {
		return err
	}
	cmd = mapArgv(cmd, t.pathMap)
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Dir, c.Env = t.dir, t.env
	if tty {
		ptmx, err := pty.Start(c)
		if err != nil {
			return err
		}
		return runInTerminal(c, ptmx, in, out, resize)
	}
	// In the container's process group where it can be (so it ends with
	// the container), else in one of its own.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: t.pgid}
	if in != nil {
		c.Stdin = in
	}
	if out != nil {
		c.Stdout = out
	}
	if errw != nil {
		c.Stderr = errw
	}
	return exitError(c.Run())
}

// ptyDrainTimeout bounds how long a terminal's output is read after its
// command ended (a background child may keep the terminal open).
const ptyDrainTimeout = 2 * time.Second

// runInTerminal carries a started command's terminal: input and resizes
// in, output out, until the command has ended and its output is read.
// The terminal is closed only once no goroutine uses it.
func runInTerminal(c *exec.Cmd, ptmx *os.File, in io.Reader, out io.Writer, resize <-chan remotecommandserver.TerminalSize) error {
	var mu sync.Mutex // guards ptmx against Close while writing or resizing
	closed := false
	locked := func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			f()
		}
	}
	go func() {
		for size := range resize {
			locked(func() { _ = pty.Setsize(ptmx, &pty.Winsize{Rows: size.Height, Cols: size.Width}) })
		}
	}()
	if in != nil {
		go chunkio.Pump(in, func(b []byte) error {
			locked(func() { _, _ = ptmx.Write(b) })
			return nil
		})
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		if out == nil {
			out = io.Discard
		}
		_, _ = io.Copy(out, ptmx) // ends with EIO once the command's side is closed
	}()
	err := c.Wait()
	select {
	case <-copied:
	case <-time.After(ptyDrainTimeout):
	}
	mu.Lock()
	closed = true
	_ = ptmx.Close()
	mu.Unlock()
	<-copied
	return exitError(err)
}

// exitError gives a non-zero exit the form the streaming library reports
// to the client as an exit code.
func exitError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}

func (s streamRuntime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("sandbox %s: port %d: %w", sandboxID, port, err)
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); _ = conn.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}
