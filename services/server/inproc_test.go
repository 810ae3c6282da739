package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/internal/proctest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// localServer runs a server on a unix socket offered in local, with
// planner{} registered through its Registrar; stop ends Run and waits
// for it.
func localServer(t *testing.T, local *Local, logs io.Writer) (addr string, reg *prometheus.Registry, stop func()) {
	t.Helper()
	addr = "unix://" + filepath.Join(t.TempDir(), "s.sock")
	reg = prometheus.NewRegistry()
	s, err := New(Options{Listen: addr, Logger: slog.New(slog.NewTextHandler(logs, nil)), Registry: reg, Local: local,
		ShutdownTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	plannerv1.RegisterPlannerServiceServer(s.Registrar(), planner{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-errc
		}
	}
	t.Cleanup(stop)
	// Offered once Run has started.
	deadline := time.Now().Add(10 * time.Second)
	for local.lookup(localKey(addr)) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the server was never offered in-process")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr, reg, stop
}

// A call through a connection with the server's Local runs in-process
// with the server's interceptors: authorized as a local caller, audited
// as in-process, counted in the server's metrics. The same server's
// socket still serves (the caller there is the unix peer).
func TestInProcessCallsKeepTheInterceptors(t *testing.T) {
	var logs proctest.Buffer
	local := NewLocal()
	addr, reg, _ := localServer(t, local, &logs)
	conn, err := Service(DialPolicy{}, local, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := plannerv1.NewPlannerServiceClient(conn)
	if _, err := client.ApplyPod(ctx, &plannerv1.ApplyPodRequest{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`msg=audit identity="in-process:uid=%d,pid=%d" verb=write`, os.Getuid(), os.Getpid())
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}
	if n := handled(t, reg, "ApplyPod"); n != 1 {
		t.Errorf("grpc_server_handled_total for ApplyPod is %v, want 1", n)
	}
	// A stream, through the stream interceptors.
	st, err := client.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Errorf("Exec's Recv: %v, want io.EOF", err)
	}
	// An unimplemented method answers Unimplemented, as on the socket.
	if _, err := client.GetPod(ctx, &plannerv1.GetPodRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("GetPod: %v, want Unimplemented", err)
	}

	sock, err := DialPolicy{}.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	if _, err := plannerv1.NewPlannerServiceClient(sock).ApplyPod(ctx, &plannerv1.ApplyPodRequest{}); err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprintf(`msg=audit identity="unix:uid=%d,pid=%d" verb=write`, os.Getuid(), os.Getpid())
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}
}

// handled is the server's grpc_server_handled_total of a method
// answered OK.
func handled(t *testing.T, reg *prometheus.Registry, method string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "grpc_server_handled_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["grpc_method"] == method && labels["grpc_code"] == "OK" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Once the server shuts down it is no longer offered: a call goes to the
// socket, which is gone (Unavailable), as it would be without a Local.
func TestInProcessEndsWithTheServer(t *testing.T) {
	local := NewLocal()
	addr, _, stop := localServer(t, local, io.Discard)
	conn, err := Service(DialPolicy{}, local, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stop()
	if local.lookup(localKey(addr)) != nil {
		t.Fatal("a stopped server is still offered in-process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = plannerv1.NewPlannerServiceClient(conn).ListPods(ctx, &plannerv1.ListPodsRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("ListPods after the server stopped: %v, want Unavailable", err)
	}
}

// A client without the server's Local, or a server without one, goes
// through the socket; a TCP server is never offered in-process.
func TestOnlyUnixServersOfTheSameLocal(t *testing.T) {
	local := NewLocal()
	addr, _, _ := localServer(t, local, io.Discard)
	other, err := Service(DialPolicy{}, NewLocal(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.inProcess() != nil {
		t.Error("a client of another Local calls in-process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := plannerv1.NewPlannerServiceClient(other).ListPods(ctx, &plannerv1.ListPodsRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Errorf("ListPods through the socket: %v", err)
	}
	if localKey("127.0.0.1:9100") != "" || localKey("tcp://127.0.0.1:9100") != "" {
		t.Error("a TCP address has an in-process key")
	}
	if localKey("unix:///run/x/../y.sock") != localKey("unix:///run/y.sock") {
		t.Error("two spellings of one socket path have different keys")
	}
}

// Lookup answers a server's in-process channel while it is offered, and
// nil before, after, for another Local's server, for a TCP address and
// for a nil Local; a call through its answer runs the server's
// interceptors (counted in its metrics).
func TestLookupAnswersTheChannelWhileTheServerIsOffered(t *testing.T) {
	local := NewLocal()
	addr := "unix://" + filepath.Join(t.TempDir(), "s.sock")
	lookup := local.Lookup(addr)
	if lookup == nil || lookup() != nil {
		t.Fatal("before the server runs: no lookup, or a channel")
	}
	if (*Local)(nil).Lookup(addr) != nil || local.Lookup("127.0.0.1:9100") != nil {
		t.Error("a nil Local or a TCP address has a lookup")
	}
	got, reg, stop := localServer(t, local, io.Discard)
	lookup = local.Lookup(got)
	ch := lookup()
	if ch == nil {
		t.Fatal("a running server is not answered")
	}
	if NewLocal().Lookup(got)() != nil {
		t.Error("another Local answers the server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := plannerv1.NewPlannerServiceClient(ch).ListPods(ctx, &plannerv1.ListPodsRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := handled(t, reg, "ListPods"); n != 1 {
		t.Errorf("the server counted %v ListPods, want 1", n)
	}
	stop()
	if lookup() != nil {
		t.Error("a stopped server is still answered")
	}
}

// The in-process copies are deep and typed: a copy equals its source and
// shares nothing with it, what was in the destination is gone, and a
// copy between two message types or of something that is not a message
// fails Internal.
func TestInProcessMessagesAreCopiedDeeply(t *testing.T) {
	in := &plannerv1.ApplyPodRequest{Pod: &syncpodv1.Pod{Name: "a", Labels: map[string]string{"k": "v"}}}
	out := &plannerv1.ApplyPodRequest{Pod: &syncpodv1.Pod{Namespace: "stale"}}
	if err := (messageCloner{}).Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(out, in) {
		t.Fatalf("copy %v, want %v", out, in)
	}
	out.Pod.Labels["k"] = "changed"
	if in.Pod.Labels["k"] != "v" {
		t.Error("the copy shares its labels with the source")
	}
	c, err := (messageCloner{}).Clone(in)
	if err != nil || !proto.Equal(c.(proto.Message), in) || c.(*plannerv1.ApplyPodRequest).Pod == in.Pod {
		t.Errorf("clone %v (%v): not an equal, separate copy", c, err)
	}
	if err := (messageCloner{}).Copy(&plannerv1.ListPodsRequest{}, in); status.Code(err) != codes.Internal {
		t.Errorf("copy across types: %v, want Internal", err)
	}
	if _, err := (messageCloner{}).Clone("x"); status.Code(err) != codes.Internal {
		t.Errorf("clone of a string: %v, want Internal", err)
	}
}

// seer is a planner whose GetPod tells what its handler saw, and whose
// ApplyPod changes its request and answers nothing.
type seer struct {
	plannerv1.UnimplementedPlannerServiceServer
	saw chan string
}

type callerKey struct{}

func (s seer) GetPod(ctx context.Context, req *plannerv1.GetPodRequest) (*plannerv1.GetPodResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	method, _ := grpc.Method(ctx)
	_, hasDeadline := ctx.Deadline()
	p, _ := peer.FromContext(ctx)
	s.saw <- fmt.Sprintf("value=%v md=%v method=%s deadline=%v peer=%v", ctx.Value(callerKey{}), md.Get("x-who"), method, hasDeadline, p.AuthInfo)
	req.Pod.Name = "changed by the handler"
	return &plannerv1.GetPodResponse{Record: &plannerv1.PodRecord{Pod: &syncpodv1.Pod{Name: "answer"}}}, nil
}

func (seer) ApplyPod(context.Context, *plannerv1.ApplyPodRequest) (*plannerv1.ApplyPodResponse, error) {
	return nil, nil
}

// An in-process unary call runs its handler with the caller's deadline
// and metadata, the method named, the in-process peer, and none of the
// caller's context values; request and answer are copies (the handler's
// change to its request does not reach the caller's); a handler that
// answers nothing without an error fails Internal; a canceled caller's
// call does not run.
func TestInProcessUnaryCallsSeeWhatACallOnTheSocketSees(t *testing.T) {
	local := NewLocal()
	addr := "unix://" + filepath.Join(t.TempDir(), "s.sock")
	s, err := New(Options{Listen: addr, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Local: local})
	if err != nil {
		t.Fatal(err)
	}
	sv := seer{saw: make(chan string, 1)}
	plannerv1.RegisterPlannerServiceServer(s.Registrar(), sv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { errc <- s.Run(runCtx) }()
	defer func() { stop(); <-errc }()
	var ch grpc.ClientConnInterface
	for ch == nil {
		if ch = local.Lookup(addr)(); ch == nil {
			if ctx.Err() != nil {
				t.Fatal("never offered")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	client := plannerv1.NewPlannerServiceClient(ch)

	callCtx := metadata.AppendToOutgoingContext(context.WithValue(ctx, callerKey{}, "secret"), "x-who", "caller")
	req := &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Name: "asked"}}
	resp, err := client.GetPod(callCtx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("value=<nil> md=[caller] method=/syncpod.planner.v1.PlannerService/GetPod deadline=true peer=%v", inProcessPeer)
	if got := <-sv.saw; got != want {
		t.Errorf("the handler saw\n %s\nwant\n %s", got, want)
	}
	if req.Pod.Name != "asked" || resp.GetRecord().GetPod().GetName() != "answer" {
		t.Errorf("request %v, answer %v: the handler's change reached the caller, or the answer was lost", req, resp)
	}
	if _, err := client.ApplyPod(ctx, &plannerv1.ApplyPodRequest{}); status.Code(err) != codes.Internal {
		t.Errorf("a handler answering nothing: %v, want Internal", err)
	}
	gone, cancelGone := context.WithCancel(ctx)
	cancelGone()
	if _, err := client.GetPod(gone, req); status.Code(err) != codes.Canceled {
		t.Errorf("a canceled caller's call: %v, want Canceled", err)
	}
	select {
	case got := <-sv.saw:
		t.Errorf("a canceled caller's call ran: %s", got)
	default:
	}
}
