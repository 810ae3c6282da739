package ctl

import (
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/planner/plannerclient"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Exec: the fake echoes standard input in upper case and exits with the
// number of bytes it read.
func (f *fakePlanner) Exec(stream plannerv1.PlannerService_ExecServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.execStarts = append(f.execStarts, first.GetStart())
	f.mu.Unlock()
	out := func(o *syncpodv1.StreamOutput) error { return stream.Send(&plannerv1.ExecResponse{Output: o}) }
	if err := out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stderr{Stderr: []byte("running " + strings.Join(first.GetStart().GetCommand(), " ") + "\n")}}); err != nil {
		return err
	}
	n := 0
	for first.GetStart().GetStdin() {
		msg, err := stream.Recv()
		if err != nil {
			break
		}
		if in := msg.GetInput().GetStdin(); in != nil {
			n += len(in)
			if err := out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_Stdout{Stdout: []byte(strings.ToUpper(string(in)))}}); err != nil {
				return err
			}
		}
		if msg.GetInput().GetStdinClosed() {
			break
		}
	}
	return out(&syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_ExitCode{ExitCode: int32(n)}})
}

// Attach: the fake refuses, as a runtime does input to a container created without stdin.
func (f *fakePlanner) Attach(stream plannerv1.PlannerService_AttachServer) error {
	if _, err := stream.Recv(); err != nil {
		return err
	}
	return status.Error(codes.FailedPrecondition, "executor: container \"c1\" was not created with stdin")
}

func TestAttachRefusedSaysWhy(t *testing.T) {
	h := newHarness(t)
	h.planner.PutPod(record("web", nil, []*syncpodv1.ContainerStatus{running("app", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	if code := h.run(t, "attach", "web"); code != 1 || !strings.Contains(h.err.String(), "not created with stdin") {
		t.Fatalf("attach: exit %d err %q", code, h.err)
	}
	if code := h.run(t, "attach", "web", "more"); code != 2 {
		t.Fatalf("attach with two pods: exit %d", code)
	}
}

func TestExecCarriesStdinOutputAndExitCode(t *testing.T) {
	h := newHarness(t)
	h.planner.PutPod(record("web", nil, []*syncpodv1.ContainerStatus{running("app", true, 0), running("side", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	h.env.Stdin = strings.NewReader("abc")
	if code := h.run(t, "exec", "-i", "web", "-c", "side", "--", "cat", "-n"); code != 3 || h.out.String() != "ABC" ||
		!strings.Contains(h.err.String(), "running cat -n") || !strings.Contains(h.err.String(), "command terminated with exit code 3") {
		t.Fatalf("exec -i: exit %d out %q err %q", code, h.out, h.err)
	}
	start := h.planner.execStarts[len(h.planner.execStarts)-1]
	if start.GetContainer() != "side" || !start.GetStdin() || start.GetTty() || start.GetPod().GetName() != "web" {
		t.Fatalf("start %v", start)
	}
	// Without -i no input is read; the first container is the default.
	if code := h.run(t, "exec", "pod/web", "--", "true"); code != 0 || !strings.Contains(h.err.String(), `Defaulted container "app"`) {
		t.Fatalf("exec: exit %d err %q", code, h.err)
	}
	// -t without a terminal on our side says so and goes on.
	if code := h.run(t, "exec", "-it", "web", "--", "sh"); code != 0 || !strings.Contains(h.err.String(), "Unable to use a TTY") {
		t.Fatalf("exec -it without a terminal: exit %d err %q", code, h.err)
	}
	if code := h.run(t, "exec", "web"); code != 2 {
		t.Fatalf("exec without a command: exit %d", code)
	}
}

// PortForward: the fake answers every connection with "pong:" and what
// it was sent, once the caller closes its side.
func (f *fakePlanner) PortForward(stream plannerv1.PlannerService_PortForwardServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	var got []byte
	for {
		msg, err := stream.Recv()
		if err != nil {
			break
		}
		got = append(got, msg.GetData()...)
	}
	return stream.Send(&plannerv1.PortForwardResponse{Data: []byte("pong:" + first.GetStart().GetPod().GetName() + ":" + string(got))})
}

func TestPortForwardListensOnLoopback(t *testing.T) {
	h := newHarness(t)
	h.planner.PutPod(record("web", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	ctx, cancel := context.WithCancel(context.Background())
	out, wait := h.start(ctx, "port-forward", "web", ":80")
	waitForOutput(t, out, "Forwarding from")
	m := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 80`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output %q", out)
	}
	c, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	reply, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(reply) != "pong:web:ping" {
		t.Fatalf("reply %q %v", reply, err)
	}
	cancel()
	if code := wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, args := range [][]string{{"port-forward", "web"}, {"port-forward", "web", "x:80"}, {"port-forward", "web", "70000"}} {
		if code := h.run(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code := h.run(t, "port-forward", "nosuch", "80"); code != 3 {
		t.Fatalf("unknown pod: exit %d", code)
	}
}

func (f *fakePlanner) ListPodStats(context.Context, *plannerv1.ListPodStatsRequest) (*plannerv1.ListPodStatsResponse, error) {
	return &plannerv1.ListPodStatsResponse{Stats: []*syncpodv1.PodStats{
		{PodName: "busy", CpuNanoCores: 987_654_321, MemoryWorkingSetBytes: 3 << 20, Containers: []*syncpodv1.ContainerStats{
			{Name: "loop", CpuNanoCores: 987_000_000, MemoryWorkingSetBytes: 2 << 20}, {Name: "idle", CpuNanoCores: 654_321, MemoryWorkingSetBytes: 1 << 20}}},
		{PodName: "idle"},
	}}, nil
}

func TestTopPods(t *testing.T) {
	h := newHarness(t)
	if code := h.run(t, "top", "pods"); code != 0 || h.out.String() != ""+
		"NAME   CPU(cores)   MEMORY(bytes)\n"+
		"busy   987m         3Mi\n"+
		"idle   0m           0Mi\n" {
		t.Fatalf("top pods: exit %d\n%s", code, h.out)
	}
	if code := h.run(t, "top", "pod", "busy", "--containers"); code != 0 || h.out.String() != ""+
		"POD    NAME   CPU(cores)   MEMORY(bytes)\n"+
		"busy   loop   987m         2Mi\n"+
		"busy   idle   0m           1Mi\n" {
		t.Fatalf("top pod busy --containers: exit %d\n%s", code, h.out)
	}
	if code := h.run(t, "top", "pods", "nosuch"); code != 3 {
		t.Fatalf("top of an unknown pod: exit %d", code)
	}
	if code := h.run(t, "top", "nodes"); code != 2 {
		t.Fatalf("top nodes: exit %d", code)
	}
}

// TestLeavingASessionIsNotAnError: the caller's context ends (Ctrl-C,
// the user left an attach) and the stream, which runs on that context,
// fails with Canceled at once: syncpodctl exits 0. The stream can see the
// context end before a context derived from it is cancelled (the standard
// library closes a context's Done channel, then cancels its children), so
// the session must ask the context it was given: asking its own failed 1
// in 20 runs of TestStreamsOnContainerd on containerd 2.4. The context
// here reaches the contexts derived from it by a goroutine of its own, so
// that window is wide, not a matter of scheduling luck.
func TestLeavingASessionIsNotAnError(t *testing.T) {
	for i := range 50 {
		ctx := &lateCancelCtx{Context: context.Background(), done: make(chan struct{})}
		var stderr bytes.Buffer
		g := &globals{env: Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr}}
		started := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- runSession(ctx, g, &plannerclient.Session{
				Send: func(*syncpodv1.StreamInput) error { return nil },
				Recv: func() (*syncpodv1.StreamOutput, error) {
					close(started)
					<-ctx.Done()
					return nil, status.FromContextError(ctx.Err()).Err()
				},
				CloseSend: func() error { return nil },
			}, false, false, -1)
		}()
		<-started
		ctx.cancel()
		if err := <-done; err != nil {
			t.Fatalf("run %d: leaving the session: %v, want nil (stderr %q)", i, err, stderr.String())
		}
	}
}

// lateCancelCtx is a context that is not one of the standard library's:
// what is derived from it learns of its end from a goroutine, later.
type lateCancelCtx struct {
	context.Context // Background: no deadline, no values
	done            chan struct{}
	mu              sync.Mutex
	err             error
}

func (c *lateCancelCtx) Done() <-chan struct{} { return c.done }

func (c *lateCancelCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *lateCancelCtx) cancel() {
	c.mu.Lock()
	c.err = context.Canceled
	c.mu.Unlock()
	close(c.done)
}
