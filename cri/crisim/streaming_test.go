package crisim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	clientexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// streamingRuntime is a process-mode runtime with its streaming server
// on a loopback port and one running container.
func streamingRuntime(t *testing.T) (r *Runtime, sandboxID, containerID string) {
	t.Helper()
	r, _ = newTestRuntime(t, Options{Mode: ModeProcess})
	ctx := context.Background()
	if _, err := r.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "x", Cmd: []string{"true"}, Stdout: true}); !errors.Is(err, ErrStreamingNotStarted) {
		t.Fatalf("Exec before the streaming server runs: %v", err)
	}
	serveStreams(t, r)
	sb := sandboxFor(t, r, "streams")
	id, err := containerIn(t, r, sb, "app", []string{"sleep", "60"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	return r, sb, id
}

// serveStreams runs r's streaming server on a loopback port for the
// test, and returns once it is up.
func serveStreams(t *testing.T, r *Runtime) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.ServeStreams(sctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeStreams: %v", err)
		}
	})
	// The server is up once a URL can be had (ServeStreams set it).
	for {
		if _, err := r.streams.get(); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func execURL(t *testing.T, r *Runtime, req *runtimeapi.ExecRequest) *url.URL {
	t.Helper()
	resp, err := r.Exec(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("streaming URL %s is not on loopback", u)
	}
	return u
}

// Exec through client-go's SPDY executor, as crictl and the executor
// connect: stdin in, stdout and stderr apart, the exit code back.
func TestExecWithoutATerminal(t *testing.T) {
	r, _, id := streamingRuntime(t)
	u := execURL(t, r, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "echo out; echo err >&2; read x; echo got $x; exit 7"},
		Stdin: true, Stdout: true, Stderr: true})
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: strings.NewReader("hi\n"), Stdout: &out, Stderr: &errb})
	var code clientexec.CodeExitError
	if !errors.As(err, &code) || code.Code != 7 {
		t.Fatalf("exit: %v, want code 7", err)
	}
	if out.String() != "out\ngot hi\n" || errb.String() != "err\n" {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}
}

type fixedSize struct{ sent bool }

func (f *fixedSize) Next() *remotecommand.TerminalSize {
	if f.sent {
		return nil
	}
	f.sent = true
	return &remotecommand.TerminalSize{Width: 100, Height: 40}
}

func TestExecInATerminal(t *testing.T) {
	r, _, id := streamingRuntime(t)
	u := execURL(t, r, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "tty; exit 3"}, Stdout: true, Tty: true})
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: &fixedSize{}})
	var code clientexec.CodeExitError
	if !errors.As(err, &code) || code.Code != 3 {
		t.Fatalf("exit: %v, want code 3", err)
	}
	if !strings.HasPrefix(out.String(), "/dev/pts/") {
		t.Fatalf("the command has no terminal: %q", out.String())
	}
}

func TestExecRefusals(t *testing.T) {
	r, _, _ := streamingRuntime(t)
	ctx := context.Background()
	if _, err := r.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "nosuch", Cmd: []string{"true"}, Stdout: true}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("exec in an unknown container: %v", err)
	}
	if _, err := r.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "x", Stdout: true}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("attach to an unknown container: %v", err)
	}
	if _, err := r.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "nosuch"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("port-forward to an unknown sandbox: %v", err)
	}
}

// attachTo opens an attach session to id through client-go's SPDY
// executor, as crictl and the executor connect.
func attachTo(t *testing.T, r *Runtime, req *runtimeapi.AttachRequest) remotecommand.Executor {
	t.Helper()
	resp, err := r.Attach(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// A container created with stdin (and stdinOnce) takes what an attach
// session writes, and the session shows its output, stdout and stderr
// apart, until the container ends, with its exit code; a container without
// stdin is attached to for its output only.
func TestAttachToAContainerReadingStdin(t *testing.T) {
	r, sb, sleeper := streamingRuntime(t)
	ctx := context.Background()
	id := startStdioContainer(t, r, sb, "reader", []string{"sh", "-c", `while read l; do echo "got $l"; echo "seen $l" >&2; done; exit 4`}, false)
	ex := attachTo(t, r, &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Stderr: true})
	var out, errb bytes.Buffer
	// The session ends with the container (attach carries no exit code).
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("one\ntwo\n"), Stdout: &out, Stderr: &errb}); err != nil {
		t.Fatalf("attach: %v", err)
	}
	if st := waitExited(t, r, id); st.GetExitCode() != 4 {
		t.Fatalf("the container exited %d, want 4 (its input closed)", st.GetExitCode())
	}
	if out.String() != "got one\ngot two\n" || errb.String() != "seen one\nseen two\n" {
		t.Fatalf("stdout %q stderr %q", out.String(), errb.String())
	}
	// stdinOnce: the input is closed for good, so a second attach with
	// input is refused (the container is gone anyway).
	if _, err := r.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true}); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("attach with stdin to an ended container: %v", err)
	}
	// A container without stdin: output only; input is refused saying why.
	if _, err := r.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: sleeper, Stdin: true, Stdout: true}); !errors.Is(err, ErrFailedPrecondition) || !strings.Contains(err.Error(), "stdin: true") {
		t.Fatalf("attach with stdin to a container without: %v", err)
	}
}

// A container with a terminal: attach writes to it and follows its size.
func TestAttachToAContainerWithATerminal(t *testing.T) {
	r, sb, _ := streamingRuntime(t)
	ctx := context.Background()
	id := startStdioContainer(t, r, sb, "term", []string{"sh", "-c", `while read l; do stty size; done`}, true)
	ex := attachTo(t, r, &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true, Tty: true})
	var out bytes.Buffer
	// The size and the input travel on streams of their own: a line is
	// typed until the command's answer shows the new size.
	in, inW := io.Pipe()
	done := make(chan error, 1)
	var mu sync.Mutex
	go func() {
		done <- ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: lockedWriter{&mu, &out}, Tty: true, TerminalSizeQueue: &fixedSize{}})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		got := out.String()
		mu.Unlock()
		if strings.Contains(got, "40 100") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal's size never showed: %q", got)
		}
		_, _ = inW.Write([]byte("\n"))
		time.Sleep(50 * time.Millisecond)
	}
	_ = inW.Close() // stdinOnce: the terminal closes, read ends, the container exits 0
	if err := <-done; err != nil {
		t.Fatalf("attach: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(out.String(), "stderr") || strings.Contains(out.String(), "not a tty") {
		t.Fatalf("no terminal: %q", out.String())
	}
}

// startStdioContainer starts a container created with stdin and
// stdinOnce (and a terminal with tty).
func startStdioContainer(t *testing.T, r *Runtime, sb, name string, cmd []string, tty bool) string {
	t.Helper()
	ctx := context.Background()
	if _, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "img"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "img"}, Command: cmd, LogPath: name + ".log",
		Stdin: true, StdinOnce: true, Tty: tty}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.GetContainerId()}); err != nil {
		t.Fatal(err)
	}
	return resp.GetContainerId()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Port-forward through client-go's port forwarder to a server on a
// loopback port, as a host-network pod's would be.
func TestPortForwardToALoopbackPort(t *testing.T) {
	r, sb, _ := streamingRuntime(t)
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := io.ReadAll(io.LimitReader(c, 5))
				_, _ = c.Write(append([]byte("hello "), line...))
			}()
		}
	}()
	port := backend.Addr().(*net.TCPAddr).Port
	resp, err := r.PortForward(context.Background(), &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{int32(port)}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		t.Fatal(err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	var pfOut, pfErr bytes.Buffer
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, &pfOut, &pfErr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	<-ready
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("ports %v %v", ports, err)
	}
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("world")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(got) != "hello world" {
		t.Fatalf("through the forward: %q %v (forwarder said %q %q)", got, err, pfOut.String(), pfErr.String())
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
