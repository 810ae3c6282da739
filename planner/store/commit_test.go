package store

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func syncCommit() SyncCommit {
	return SyncCommit{
		Events:      []*syncpodv1.Event{{Type: syncpodv1.EventType_EVENT_TYPE_NORMAL, Reason: "Started", Message: "Started container app", LastTime: timestamppb.New(t0)}},
		LastActions: &syncpodv1.PodActions{CreateSandbox: true, Attempt: 1},
		Status:      &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING, UpdatedAt: timestamppb.New(t0)},
	}
}

// A sync's events, last actions and status are one transaction and one
// watch event.
func TestCommitSyncIsOneTransactionAndOneWatchEvent(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, nil)
	p, _, _ := s.Apply(ctx, pod("web", "nginx"))
	sub, err := s.Subscribe(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := next(t, sub); len(got) != 1 || got[0] != "ADDED default/web" {
		t.Fatalf("initial = %v", got)
	}

	before := txID(t, s)
	c := syncCommit()
	changed, err := s.CommitSync(ctx, p.GetUid(), c)
	if err != nil || !changed {
		t.Fatalf("CommitSync = %v, %v; want changed", changed, err)
	}
	if got := txID(t, s); got != before+1 {
		t.Errorf("transactions = %d, want 1", got-before)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, err := sub.Next(wctx)
	if err != nil || len(evs) != 1 || evs[0].GetType() != plannerv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED {
		t.Fatalf("watch = %v, %v; want one MODIFIED", evs, err)
	}
	rec := evs[0].GetRecord()
	if len(rec.GetEvents()) != 1 || rec.GetEvents()[0].GetPodUid() != p.GetUid() ||
		!proto.Equal(rec.GetLastActions(), c.LastActions) || rec.GetStatus().GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING {
		t.Errorf("the watch event does not carry the whole sync: %v", rec)
	}

	// The same status and actions again, no events: nothing is written.
	before = txID(t, s)
	c.Events = nil
	if changed, err := s.CommitSync(ctx, p.GetUid(), c); err != nil || changed {
		t.Errorf("repeat CommitSync = %v, %v; want unchanged", changed, err)
	}
	if txID(t, s) != before {
		t.Error("an unchanged sync was written")
	}
	if _, err := s.CommitSync(ctx, "nope", c); !errors.Is(err, ErrNotFound) {
		t.Errorf("CommitSync unknown uid = %v, want ErrNotFound", err)
	}
}

// A commit that fails leaves none of its parts behind and publishes
// nothing.
func TestCommitSyncFailureWritesNothing(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, nil)
	p, _, _ := s.Apply(ctx, pod("web", "nginx"))
	boom := errors.New("disk gone")
	s.failCommit = func() error { return boom }
	sub, err := s.Subscribe(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	_ = next(t, sub)

	if _, err := s.CommitSync(ctx, p.GetUid(), syncCommit()); !errors.Is(err, boom) {
		t.Fatalf("CommitSync = %v, want the commit's error", err)
	}
	rec, err := s.Get(ctx, &plannerv1.PodRef{Uid: p.GetUid()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.GetEvents()) != 0 || rec.GetLastActions() != nil || rec.GetStatus() != nil {
		t.Errorf("a failed commit left part of the sync: %v", rec)
	}
	sub.mu.Lock()
	n := len(sub.queue)
	sub.mu.Unlock()
	if n != 0 {
		t.Errorf("a failed commit published %d events", n)
	}
}
