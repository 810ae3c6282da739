package service

import (
	"context"
	"testing"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

type fakeTimelines map[string]*plannerv1.PodSyncTimeline

func (f fakeTimelines) Last(uid string) *plannerv1.PodSyncTimeline { return f[uid] }

// TestGetPodCarriesTheLastSyncTimeline: GetPod answers the pod's last
// sync timeline from the sync loop's recorder, and none for a pod it has
// not synced.
func TestGetPodCarriesTheLastSyncTimeline(t *testing.T) {
	ctx := context.Background()
	_, st := setup(t)
	stored, _, err := st.Apply(ctx, demoPod("web", "nginx"))
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := st.Apply(ctx, demoPod("db", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	tl := &plannerv1.PodSyncTimeline{Trigger: "store", Stages: []*plannerv1.PodSyncStage{{Name: "queued"}}}
	s := New(Options{Pods: st, Timelines: fakeTimelines{stored.GetUid(): tl}})
	resp, err := s.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Uid: stored.GetUid()}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetLastSync().GetTrigger() != "store" || len(resp.GetLastSync().GetStages()) != 1 {
		t.Fatalf("last_sync = %v, want the recorder's timeline", resp.GetLastSync())
	}
	resp, err = s.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Uid: other.GetUid()}})
	if err != nil || resp.GetLastSync() != nil {
		t.Fatalf("never-synced pod: last_sync %v, err %v; want none", resp.GetLastSync(), err)
	}
}
