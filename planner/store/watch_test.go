package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// next returns the queued changes as "TYPE ns/name" strings.
func next(t *testing.T, sub *Subscription) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		s := e.GetType().String()[len("WATCH_EVENT_TYPE_"):]
		if p := e.GetRecord().GetPod(); p != nil {
			s += " " + p.GetNamespace() + "/" + p.GetName()
		}
		out = append(out, s)
	}
	return out
}

func TestWatchSequence(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, nil)
	a, _, _ := s.Apply(ctx, pod("a", "img"))
	_, _, _ = s.Apply(ctx, pod("b", "img"))

	f, _ := ParseFilter("", "app in (a,c)")
	sub, err := s.Subscribe(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := fmt.Sprint(next(t, sub)); got != "[ADDED default/a]" {
		t.Fatalf("initial = %s", got)
	}

	_, _, _ = s.Apply(ctx, pod("c", "img"))                                                                   // ADDED
	_, _, _ = s.Apply(ctx, pod("b", "img:2"))                                                                 // not matching: nothing
	_, _ = s.UpdateStatus(ctx, a.GetUid(), &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING}) // MODIFIED
	_, _, _ = s.Apply(ctx, pod("a", "img"))                                                                   // unchanged: nothing
	relabel := pod("a", "img")
	relabel.Labels = map[string]string{"app": "other"}
	_, _, _ = s.Apply(ctx, relabel) // leaves the filter: DELETED
	c, _ := s.Get(ctx, &plannerv1.PodRef{Name: "c"})
	_ = s.Remove(ctx, c.GetPod().GetUid()) // DELETED

	want := "[ADDED default/c MODIFIED default/a DELETED default/a DELETED default/c]"
	if got := fmt.Sprint(next(t, sub)); got != want {
		t.Errorf("changes = %s\nwant      %s", got, want)
	}
	if st := s.Stats(); st.WatchResyncs != 0 || st.Watchers != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestSlowWatcherGetsOneResyncAndWritersNeverBlock(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, func(o *Options) { o.WatchBuffer = 3 })
	slow, _ := s.Subscribe(ctx, Filter{})
	defer slow.Close()
	fast, _ := s.Subscribe(ctx, Filter{})
	defer fast.Close()

	for i := range 4 { // 4 changes into a buffer of 3: this would block a blocking fan-out
		if _, _, err := s.Apply(ctx, pod(fmt.Sprintf("p%d", i), "img")); err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			_ = next(t, fast) // the fast watcher keeps up
		}
	}
	if got := fmt.Sprint(next(t, slow)); got != "[RESYNC]" {
		t.Errorf("slow watcher got %s, want one RESYNC", got)
	}
	if got := fmt.Sprint(next(t, fast)); got != "[ADDED default/p3]" {
		t.Errorf("fast watcher got %s", got)
	}
	if r := s.Stats().WatchResyncs; r != 1 {
		t.Errorf("resyncs = %d, want 1", r)
	}
	// After the RESYNC the slow watcher continues normally.
	_, _, _ = s.Apply(ctx, pod("p9", "img"))
	if got := fmt.Sprint(next(t, slow)); got != "[ADDED default/p9]" {
		t.Errorf("after resync got %s", got)
	}
}

func TestWatchInitialSnapshotIsNotBounded(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, func(o *Options) { o.WatchBuffer = 1 })
	for i := range 5 {
		_, _, _ = s.Apply(ctx, pod(fmt.Sprintf("p%d", i), "img"))
	}
	sub, _ := s.Subscribe(ctx, Filter{})
	defer sub.Close()
	if got := len(next(t, sub)); got != 5 {
		t.Errorf("initial events = %d, want 5", got)
	}
}

func TestWatchEndsOnCloseAndContext(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, nil)
	sub, _ := s.Subscribe(ctx, Filter{})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := sub.Next(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next on cancelled ctx = %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := sub.Next(ctx); done <- err }()
	_ = s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Next after store Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return after Close")
	}
}
