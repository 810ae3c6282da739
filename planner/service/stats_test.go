package service

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/syncpod/syncpod/planner/store"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

type statsExecutor struct {
	executorv1.UnimplementedExecutorServiceServer
	asked chan []string
}

func (e *statsExecutor) ListPodStats(_ context.Context, req *executorv1.ListPodStatsRequest) (*executorv1.ListPodStatsResponse, error) {
	e.asked <- req.GetPodUids()
	return &executorv1.ListPodStatsResponse{Stats: []*syncpodv1.PodStats{{PodUid: req.GetPodUids()[0], CpuNanoCores: 42}}}, nil
}

func TestListPodStatsNamesEveryPod(t *testing.T) {
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "planner.db"), Now: func() time.Time { return t0 }, Validate: fakeValidate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ex := &statsExecutor{asked: make(chan []string, 1)}
	execConn := serve(t, func(s *grpc.Server) { executorv1.RegisterExecutorServiceServer(s, ex) })
	c := plannerv1.NewPlannerServiceClient(serve(t, func(s *grpc.Server) {
		plannerv1.RegisterPlannerServiceServer(s, New(Options{Pods: st, Executor: executorv1.NewExecutorServiceClient(execConn)}))
	}))
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if _, _, err := st.Apply(ctx, &syncpodv1.Pod{Name: name, Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "c", Image: "busybox"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.ListPodStats(ctx, &plannerv1.ListPodStatsRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if asked := <-ex.asked; len(asked) != 2 {
		t.Fatalf("executor asked for %v", asked)
	}
	got := resp.GetStats()
	if len(got) != 2 || got[0].GetPodName() != "a" || got[0].GetCpuNanoCores() != 42 || got[1].GetPodName() != "b" || got[1].GetCpuNanoCores() != 0 || got[1].GetPodUid() == "" {
		t.Fatalf("stats %v", got)
	}
	if _, err := c.ListPodStats(ctx, &plannerv1.ListPodStatsRequest{LabelSelector: "=="}); err == nil {
		t.Fatal("a bad selector was accepted")
	}
}
