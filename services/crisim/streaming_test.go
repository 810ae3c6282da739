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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- r.ServeStreams(sctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeStreams: %v", err)
		}
	})
	sb := sandboxFor(t, r, "streams")
	id, err := containerIn(t, r, sb, "app", []string{"sleep", "60"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	// The server is up once a URL can be had (ServeStreams set it).
	for {
		if _, err := r.streams.get(); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return r, sb, id
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
	if _, err := r.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "x", Stdout: true}); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("attach: %v", err)
	}
	if _, err := r.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "nosuch"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("port-forward to an unknown sandbox: %v", err)
	}
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
