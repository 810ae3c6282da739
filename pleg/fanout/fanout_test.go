package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
)

func ev(uid, id string) *plegv1.PodLifecycleEvent {
	return &plegv1.PodLifecycleEvent{PodUid: uid, ContainerId: id, Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED}
}

func drain(t *testing.T, s *Subscription) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Next returns queued events first, then ctx.Err
	var out []string
	for {
		e, err := s.Next(ctx)
		if err != nil {
			return out
		}
		if e.GetType() == plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_RESYNC {
			out = append(out, "RESYNC")
		} else {
			out = append(out, e.GetContainerId())
		}
	}
}

// TestSlowSubscriberGetsOneResync: a full buffer makes the subscriber miss
// events and then get exactly one RESYNC; other subscribers are unaffected
// and every drop is counted.
func TestSlowSubscriberGetsOneResync(t *testing.T) {
	var discarded, resyncs atomic.Int64
	b := New(Counters{Discarded: func() { discarded.Add(1) }, Resync: func() { resyncs.Add(1) }}, nil)
	slow := b.Subscribe(2, nil)
	fast := b.Subscribe(100, nil)
	for i := range 5 {
		b.Publish(ev("p", fmt.Sprint(i)))
	}
	if got, want := fmt.Sprint(drain(t, slow)), "[0 1 RESYNC]"; got != want {
		t.Errorf("slow got %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(drain(t, fast)), "[0 1 2 3 4]"; got != want {
		t.Errorf("fast got %s, want %s", got, want)
	}
	if discarded.Load() != 3 || resyncs.Load() != 1 {
		t.Errorf("discarded=%d resyncs=%d, want 3 and 1", discarded.Load(), resyncs.Load())
	}
	// After the RESYNC the subscriber receives again.
	b.Publish(ev("p", "5"))
	if got, want := fmt.Sprint(drain(t, slow)), "[5]"; got != want {
		t.Errorf("after resync got %s, want %s", got, want)
	}
}

func TestFilterByPodUID(t *testing.T) {
	b := New(Counters{}, nil)
	s := b.Subscribe(10, []string{"a", "c"})
	for _, u := range []string{"a", "b", "c", "d"} {
		b.Publish(ev(u, u))
	}
	if got, want := fmt.Sprint(drain(t, s)), "[a c]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestCloseFreesAndUnblocks(t *testing.T) {
	b := New(Counters{}, nil)
	s := b.Subscribe(10, nil)
	errc := make(chan error)
	go func() {
		_, err := s.Next(context.Background())
		errc <- err
	}()
	s.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after Close")
	}
	if b.Subscribers() != 0 {
		t.Fatalf("%d subscribers left", b.Subscribers())
	}
	b.Publish(ev("p", "x")) // must not panic or block
	s.Close()
}

func BenchmarkFanout100(b *testing.B) {
	br := New(Counters{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	const subs = 100
	done := make(chan struct{}, subs)
	for range subs {
		s := br.Subscribe(1024, nil)
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				if _, err := s.Next(ctx); err != nil {
					return
				}
				got.Add(1)
			}
		}()
	}
	e := ev("p", "c")
	b.ResetTimer()
	for b.Loop() {
		br.Publish(e)
	}
	b.StopTimer()
	cancel()
	for range subs {
		<-done
	}
	b.ReportMetric(float64(got.Load())/float64(b.N*subs), "delivered/sent")
}
