package executortest

import (
	"context"
	"errors"
	"testing"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func TestExecutorAnswersAsSetAndRecords(t *testing.T) {
	e := &Executor{}
	ctx := context.Background()
	if resp, err := e.ApplyActions(ctx, &executorv1.ApplyActionsRequest{}); err != nil || len(resp.GetSteps()) != 0 {
		t.Fatalf("ApplyActions = %v, %v; want an empty response", resp, err)
	}
	e.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
		return &executorv1.ApplyActionsResponse{Steps: []*executorv1.StepResult{{Target: "app"}}}
	})
	if resp, _ := e.ApplyActions(ctx, &executorv1.ApplyActionsRequest{}); len(resp.GetSteps()) != 1 {
		t.Fatalf("ApplyActions = %v, want the answer set", resp)
	}
	boom := errors.New("boom")
	e.SetApplyError(boom)
	if _, err := e.ApplyActions(ctx, &executorv1.ApplyActionsRequest{}); !errors.Is(err, boom) {
		t.Fatalf("ApplyActions error %v, want %v", err, boom)
	}
	resp, _ := e.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{ContainerIds: []string{"c1"}, SandboxIds: []string{"s1"}})
	if len(resp.GetResults()) != 2 || !resp.GetResults()[1].GetSandbox() {
		t.Fatalf("RemoveResources = %v, want both removed", resp)
	}
	e.SetPodStats(&syncpodv1.PodStats{PodUid: "u1", CpuNanoCores: 42})
	if st, _ := e.ListPodStats(ctx, &executorv1.ListPodStatsRequest{PodUids: []string{"u1", "u2"}}); len(st.GetStats()) != 1 || st.GetStats()[0].GetCpuNanoCores() != 42 {
		t.Fatalf("ListPodStats = %v, want u1's only", st)
	}
	if r := e.Requests(); len(r.Applies) != 3 || len(r.Removes) != 1 || len(r.PodStats) != 1 {
		t.Fatalf("recorded %d applies, %d removes, %d stats requests", len(r.Applies), len(r.Removes), len(r.PodStats))
	}
}
