package service

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/syncpod/syncpod/planner/store"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// logExecutor answers ContainerLogs with two batches and records the
// request.
type logExecutor struct {
	executorv1.UnimplementedExecutorServiceServer
	got chan *executorv1.ContainerLogsRequest
}

func (e *logExecutor) ContainerLogs(req *executorv1.ContainerLogsRequest, stream executorv1.ExecutorService_ContainerLogsServer) error {
	e.got <- req
	if req.GetPrevious() {
		return status.Error(codes.NotFound, "previous terminated container \"app\" not found")
	}
	for _, s := range []string{"one", "two"} {
		if err := stream.Send(&executorv1.ContainerLogsResponse{ContainerId: "c1", Lines: []*syncpodv1.LogLine{{Content: []byte(s)}}}); err != nil {
			return err
		}
	}
	return nil
}

func serve(t *testing.T, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); srv.Stop() })
	return conn
}

func TestContainerLogsGoesThroughTheExecutor(t *testing.T) {
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "planner.db"), Now: func() time.Time { return t0 }, Validate: fakeValidate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ex := &logExecutor{got: make(chan *executorv1.ContainerLogsRequest, 10)}
	execConn := serve(t, func(s *grpc.Server) { executorv1.RegisterExecutorServiceServer(s, ex) })
	conn := serve(t, func(s *grpc.Server) {
		plannerv1.RegisterPlannerServiceServer(s, New(Options{Pods: st, Executor: executorv1.NewExecutorServiceClient(execConn)}))
	})
	c := plannerv1.NewPlannerServiceClient(conn)
	ctx := context.Background()
	applied, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: &syncpodv1.Pod{Name: "web", Spec: &syncpodv1.PodSpec{
		InitContainers: []*syncpodv1.Container{{Name: "setup", Image: "busybox"}},
		Containers:     []*syncpodv1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "busybox"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	read := func(req *plannerv1.ContainerLogsRequest) (string, error) {
		stream, err := c.ContainerLogs(ctx, req)
		if err != nil {
			return "", err
		}
		var got []string
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return strings.Join(got, ","), nil
			}
			if err != nil {
				return strings.Join(got, ","), err
			}
			for _, l := range msg.GetLines() {
				got = append(got, string(l.GetContent()))
			}
		}
	}
	tail := int64(5)
	got, err := read(&plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app", Follow: true, TailLines: &tail})
	if err != nil || got != "one,two" {
		t.Fatalf("logs: %q, %v", got, err)
	}
	sent := <-ex.got
	if sent.GetPodUid() != applied.GetPod().GetUid() || sent.GetContainer() != "app" || !sent.GetFollow() || sent.GetTailLines() != 5 {
		t.Fatalf("executor got %v", sent)
	}
	for _, tc := range []struct {
		name string
		req  *plannerv1.ContainerLogsRequest
		code codes.Code
		msg  string
	}{
		{"wrong container lists the pod's", &plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "web"}, Container: "nosuch"}, codes.NotFound, "choose one of [setup app side]"},
		{"unknown pod", &plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "nosuch"}, Container: "app"}, codes.NotFound, "nosuch"},
		{"every problem at once", &plannerv1.ContainerLogsRequest{TailLines: func() *int64 { n := int64(-1); return &n }()}, codes.InvalidArgument, "pod: required; container: required; tail_lines: must be >= 0"},
		{"the executor's status passes through", &plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app", Previous: true}, codes.NotFound, "executor: previous terminated container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(tc.req)
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v; want %s with %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestContainerLogsWithoutExecutorIsUnavailable(t *testing.T) {
	c, _ := setup(t)
	stream, err := c.ContainerLogs(context.Background(), &plannerv1.ContainerLogsRequest{Pod: &plannerv1.PodRef{Name: "web"}, Container: "app"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want Unavailable", err)
	}
}
