package service

import (
	"context"
	"testing"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func TestListPodStatsNamesEveryPod(t *testing.T) {
	c, st, ex := serveWithExecutor(t)
	ctx := context.Background()
	var uids []string
	for _, name := range []string{"a", "b"} {
		p, _, err := st.Apply(ctx, &syncpodv1.Pod{Name: name, Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "c", Image: "busybox"}}}})
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, p.GetUid())
	}
	ex.SetPodStats(&syncpodv1.PodStats{PodUid: uids[0], CpuNanoCores: 42})
	resp, err := c.ListPodStats(ctx, &plannerv1.ListPodStatsRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if asked := ex.Requests().PodStats[0].GetPodUids(); len(asked) != 2 {
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
