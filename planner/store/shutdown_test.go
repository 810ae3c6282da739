package store

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// the shutdown survives a reopen, and ending it clears the chosen
// pods' statuses and the shutdown in one commit.
func TestNodeShutdownState(t *testing.T) {
	ctx := context.Background()
	s, _, path := openTest(t, nil)
	if got, err := s.NodeShutdown(ctx); err != nil || got != nil {
		t.Fatalf("NodeShutdown on a new file = %v, %v; want nil, nil", got, err)
	}
	var uids []string
	for _, name := range []string{"a", "b", "c"} {
		p, _, err := s.Apply(ctx, pod(name, "busybox"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateStatus(ctx, p.GetUid(), &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_FAILED, Reason: "Terminated"}); err != nil {
			t.Fatal(err)
		}
		uids = append(uids, p.GetUid())
	}
	st := &plannerv1.NodeShutdown{Phase: plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE, Trigger: "api",
		Groups: []*plannerv1.NodeShutdownGroup{{Priority: 0, GracePeriodSeconds: 20, Pods: []*plannerv1.NodeShutdownPod{{Uid: uids[0]}}}}}
	if err := s.SetNodeShutdown(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Path: path, Validate: fakeValidate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.NodeShutdown(ctx)
	if err != nil || !proto.Equal(got, st) {
		t.Fatalf("NodeShutdown after reopen = %v, %v; want %v", got, err, st)
	}
	yes := func(*plannerv1.PodRecord) bool { return true }
	no := func(*plannerv1.PodRecord) bool { return false }
	cleared, err := s.EndNodeShutdown(ctx, map[string]func(*plannerv1.PodRecord) bool{
		uids[0]: yes, uids[1]: no, uids[2]: yes, "00000000-0000-4000-8000-000000000000": yes})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{uids[0], uids[2]}
	slices.Sort(want)
	if !slices.Equal(cleared, want) {
		t.Fatalf("cleared %v, want %v", cleared, want)
	}
	for i, uid := range uids {
		rec, err := s.Get(ctx, &plannerv1.PodRef{Uid: uid})
		if err != nil {
			t.Fatal(err)
		}
		if gotNil, wantNil := rec.GetStatus() == nil, i != 1; gotNil != wantNil {
			t.Errorf("pod %d: status %v, want cleared=%v", i, rec.GetStatus(), wantNil)
		}
	}
	if got, err := s.NodeShutdown(ctx); err != nil || got != nil {
		t.Fatalf("NodeShutdown after End = %v, %v; want nil, nil", got, err)
	}
}
