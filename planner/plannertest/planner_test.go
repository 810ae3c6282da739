package plannertest

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/internal/grpctest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func TestPlannerKeepsWatchesAndRecordsPods(t *testing.T) {
	p := &Planner{}
	c := plannerv1.NewPlannerServiceClient(grpctest.Serve(t, func(s *grpc.Server) { plannerv1.RegisterPlannerServiceServer(s, p) }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	subscribed := p.NextWatch()
	w, err := c.WatchPods(ctx, &plannerv1.WatchPodsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	<-subscribed
	pod := &syncpodv1.Pod{Name: "web", Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app"}}}}
	for _, want := range []plannerv1.ApplyResult{plannerv1.ApplyResult_APPLY_RESULT_CREATED, plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED} {
		if resp, err := c.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: pod}); err != nil || resp.GetResult() != want {
			t.Fatalf("ApplyPod = %v, %v; want %v", resp.GetResult(), err, want)
		}
	}
	if _, err := c.DeletePod(ctx, &plannerv1.DeletePodRequest{Pod: &plannerv1.PodRef{Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []plannerv1.WatchEventType{plannerv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED} {
		ev, err := w.Recv()
		if err != nil || ev.GetType() != want || ev.GetRecord().GetPod().GetName() != "web" {
			t.Fatalf("watch event %v, %v; want %v of web", ev, err, want)
		}
	}
	if _, err := c.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Name: "web"}}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetPod of a deleted pod: %v, want NotFound", err)
	}
	if n, d := len(p.Applied()), p.Deleted(); n != 2 || len(d) != 1 || d[0] != "pod/default/web" || p.GetPodCalls() != 1 {
		t.Fatalf("recorded %d applies, deleted %v, %d gets", n, d, p.GetPodCalls())
	}
}

func TestPlannerAnswersPodStatsSet(t *testing.T) {
	p := &Planner{}
	c := plannerv1.NewPlannerServiceClient(grpctest.Serve(t, func(s *grpc.Server) { plannerv1.RegisterPlannerServiceServer(s, p) }))
	ctx := context.Background()
	p.SetPodStats(&syncpodv1.PodStats{PodName: "web", PodNamespace: "default", CpuNanoCores: 5}, &syncpodv1.PodStats{PodName: "dns", PodNamespace: "kube-system"})
	if resp, err := c.ListPodStats(ctx, &plannerv1.ListPodStatsRequest{}); err != nil || len(resp.GetStats()) != 2 {
		t.Fatalf("ListPodStats of every namespace = %v, %v; want both", resp, err)
	}
	if resp, err := c.ListPodStats(ctx, &plannerv1.ListPodStatsRequest{Namespace: "default"}); err != nil || len(resp.GetStats()) != 1 || resp.GetStats()[0].GetCpuNanoCores() != 5 {
		t.Fatalf("ListPodStats of default = %v, %v; want web's", resp, err)
	}
	p.SetPodStatsError(status.Error(codes.Unavailable, "executor down"))
	if _, err := c.ListPodStats(ctx, &plannerv1.ListPodStatsRequest{}); status.Code(err) != codes.Unavailable {
		t.Fatalf("ListPodStats after SetPodStatsError = %v, want Unavailable", err)
	}
}
