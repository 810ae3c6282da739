package pleg

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/syncpod/syncpod/cri/critest"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func containerIDs(p *syncpodv1.ObservedPod) []string {
	var out []string
	for _, c := range p.GetContainers() {
		out = append(out, c.GetId())
	}
	return out
}

// runPLEG runs p until the test ends.
func runPLEG(t *testing.T, p *PLEG) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return ctx
}

// TestEventedStatusIsNeverFresherThanTheLastAppliedEvent: in evented mode,
// while the runtime's events about a new container are still queued (a
// backlog the PLEG has not applied), a newer-than request made after the
// container was created must not be answered with the cached status that
// lacks it, however long ago the stream was opened (R-14.4's 2 s timestamp
// bump would do exactly that).
func TestEventedStatusIsNeverFresherThanTheLastAppliedEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
		p, _ := newTest(t, rt, func(o *Options) { o.Evented = EventedAuto })
		rt.AddPodSandbox("u1", "sb1", 0, time.Now().UnixNano())
		ctx := runPLEG(t, p)
		time.Sleep(2 * time.Second)
		if p.Mode() != plegv1.PlegMode_PLEG_MODE_EVENTED {
			t.Fatalf("mode %v", p.Mode())
		}

		rt.HoldEvents(true) // the PLEG falls behind the runtime
		at := time.Now().UnixNano()
		rt.AddPodContainer("sb1", "c1", "app", "h", 0, at)
		rt.Emit(rt.SingleEvent("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, at))
		rt.Emit(rt.SingleEvent("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, at+1))
		time.Sleep(time.Millisecond)
		acted := time.Now() // the caller's CreateContainer/StartContainer returned
		time.Sleep(5 * time.Second)

		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		pod, err := p.GetPodStatus(wctx, "u1", acted)
		if err != nil {
			t.Fatalf("GetPodStatus: %v", err)
		}
		if got := containerIDs(pod); fmt.Sprint(got) != "[c1]" {
			t.Fatalf("status newer than %v lacks the container created before it: containers %v", acted, got)
		}
		if !pod.GetObservedAt().AsTime().After(acted) {
			t.Errorf("observed_at %v is not after the asked %v", pod.GetObservedAt().AsTime(), acted)
		}
		rt.HoldEvents(false)
		synctest.Wait()
	})
}

// TestEventedIdleNewerThanIsAnswered: with no event and no bump, a
// newer-than request for a pod the runtime does not know (or one with no
// recent event) is still answered, by an on-demand pod relist, long
// before the 300 s safety-net relist.
func TestEventedIdleNewerThanIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
		p, _ := newTest(t, rt, func(o *Options) { o.Evented = EventedAuto })
		rt.AddPodSandbox("u1", "sb1", 0, time.Now().UnixNano())
		ctx := runPLEG(t, p)
		time.Sleep(2 * time.Second)
		for _, uid := range []string{"u1", "unknown"} {
			asked := time.Now()
			time.Sleep(time.Millisecond) // the caller asks a moment after its action
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			pod, err := p.GetPodStatus(wctx, uid, asked)
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", uid, err)
			}
			if pod.GetUid() != uid || time.Since(asked) > 10*time.Millisecond {
				t.Errorf("%s: got %v after %s", uid, pod, time.Since(asked))
			}
		}
	})
}

// TestStaleRelistNeverReordersEventedTransitions: a Watch subscriber must
// never see CONTAINER_DIED and then CONTAINER_STARTED for the same
// container. The race: an on-demand pod relist lists c1 running; while it
// inspects, c1 exits and its STOPPED event is applied (CONTAINER_DIED);
// the relist must not then publish its stale picture's CONTAINER_STARTED.
// A relist's picture dates from its start: it must not publish or store
// what an event applied after that start contradicts.
func TestStaleRelistNeverReordersEventedTransitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
		p, _ := newTest(t, rt, nil)
		ctx := context.Background()
		rt.AddPodSandbox("u1", "sb1", 0, time.Now().UnixNano())
		p.Relist(ctx)
		sub := p.Subscribe(nil)
		defer sub.Close()
		time.Sleep(time.Second)
		rt.AddPodContainer("sb1", "c1", "app", "h", 0, time.Now().UnixNano())
		fired := false
		rt.SetInspectHook(func(_ context.Context, id string) error {
			if id != "c1" || fired {
				return nil
			}
			fired = true
			time.Sleep(23 * time.Millisecond)
			now := time.Now().UnixNano()
			rt.ExitContainer("c1", 1, "Error", now)
			p.applyEvents([]*runtimeapi.ContainerEventResponse{rt.SingleEvent("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, now)})
			return nil
		})
		if !p.RelistPod(ctx, "u1") {
			t.Fatal("pod relist failed")
		}
		if got := drain(sub); fmt.Sprint(got) != "[CONTAINER_DIED c1]" {
			t.Errorf("events %v, want only [CONTAINER_DIED c1]", got)
		}
		c := cached(t, p, "u1").GetContainers()
		if len(c) != 1 || c[0].GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			t.Errorf("cached %v, want c1 exited", c)
		}
		// And the next relists agree with what was published: nothing new.
		rt.SetInspectHook(nil)
		time.Sleep(time.Second)
		p.Relist(ctx)
		if got := drain(sub); len(got) != 0 {
			t.Errorf("next relist: %v", got)
		}
	})
}

// TestEventedRetriesAfterGivingUpWithCappedBackoff: after
// EventedMaxFailures stream failures in a row the PLEG falls back to relist
// mode but does not give evented mode up for good: it tries the
// stream again after 10 s, doubling up to 300 s; a stream that then stays
// up longer than the cap wins evented mode back and resets the count.
func TestEventedRetriesAfterGivingUpWithCappedBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
		p, _ := newTest(t, rt, func(o *Options) { o.Evented = EventedAuto })
		runPLEG(t, p)
		synctest.Wait()
		// failAndTime breaks the open stream and returns how long the PLEG
		// waits before opening the next one.
		failAndTime := func() time.Duration {
			t.Helper()
			if rt.Streams() != 1 {
				t.Fatalf("%d streams open", rt.Streams())
			}
			rt.FailStreams(fmt.Errorf("stream broke"))
			synctest.Wait()
			start := time.Now()
			for rt.Streams() == 0 {
				if time.Since(start) > time.Hour {
					t.Fatal("no stream reopened within an hour: evented mode given up for good")
				}
				time.Sleep(50 * time.Millisecond)
			}
			return time.Since(start).Truncate(100 * time.Millisecond)
		}
		var got []string
		for range 11 {
			got = append(got, failAndTime().String())
		}
		want := "[1s 1s 1s 1s 10s 20s 40s 1m20s 2m40s 5m0s 5m0s]"
		if fmt.Sprint(got) != want {
			t.Errorf("retry delays %v, want %s", got, want)
		}
		if p.Mode() != plegv1.PlegMode_PLEG_MODE_RELIST {
			t.Errorf("mode %v right after reopening, want RELIST until the stream is confirmed", p.Mode())
		}
		time.Sleep(2 * time.Second)
		if p.Mode() != plegv1.PlegMode_PLEG_MODE_EVENTED {
			t.Fatalf("mode %v once the retried stream held, want EVENTED", p.Mode())
		}
		// A stream that outlives the cap resets the count.
		time.Sleep(6 * time.Minute)
		if d := failAndTime(); d != time.Second {
			t.Errorf("after a stable stream the first retry waited %s, want 1s", d)
		}
	})
}

// levelCounter counts log records by level.
type levelCounter struct {
	mu   sync.Mutex
	msgs map[slog.Level][]string
}

func (h *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs[r.Level] = append(h.msgs[r.Level], r.Message)
	return nil
}
func (h *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelCounter) WithGroup(string) slog.Handler      { return h }

func (h *levelCounter) above(l slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for lvl, m := range h.msgs {
		if lvl >= l {
			out = append(out, m...)
		}
	}
	return out
}

// TestRoutineWorkLogsOnlyAtDebug: relists, on-demand pod relists, status
// reads, container events and container deaths are routine and log at
// DEBUG only (a GetPodStatus logged at INFO would write megabytes a minute
// on a node of 2,000 pods).
func TestRoutineWorkLogsOnlyAtDebug(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
		h := &levelCounter{msgs: map[slog.Level][]string{}}
		p, _ := newTest(t, rt, func(o *Options) { o.Logger = slog.New(h) })
		ctx := context.Background()
		ns := time.Now().UnixNano()
		rt.AddPodSandbox("u1", "sb1", 0, ns)
		rt.AddPodContainer("sb1", "c1", "app", "h", 0, ns+1)
		before := len(h.above(slog.LevelInfo)) // start-up lines are fine
		for i := range 20 {
			time.Sleep(time.Second)
			if i == 5 {
				rt.ExitContainer("c1", 1, "Error", time.Now().UnixNano())
			}
			if i == 10 {
				rt.AddPodContainer("sb1", fmt.Sprintf("c%d", i), "app", "h", 1, time.Now().UnixNano())
				p.applyEvents([]*runtimeapi.ContainerEventResponse{rt.SingleEvent(fmt.Sprintf("c%d", i), "sb1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, time.Now().UnixNano())})
			}
			p.Relist(ctx)
			p.RelistPod(ctx, "u1")
			if _, err := p.GetPodStatus(ctx, "u1", time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := h.above(slog.LevelInfo); len(got) != before {
			t.Errorf("routine work logged at INFO or above: %q", got[before:])
		}
		if len(h.above(slog.LevelDebug)) == before {
			t.Error("nothing logged at DEBUG either: the test saw no routine work")
		}
	})
}

// TestBacklogOfAWideSandboxDrains: 7,000 single-container events about a
// 3,000-container sandbox, queued while the PLEG was behind, are applied
// through the stream in order; the cache ends up as the runtime is (every
// old container stopped and deleted, 1,000 new ones running: nothing of the
// earlier ones lost by merging), and the relist that follows agrees with
// what the events published.
func TestBacklogOfAWideSandboxDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const old, fresh = 3000, 1000
		rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
		p, _ := newTest(t, rt, func(o *Options) { o.Evented = EventedAuto })
		rt.AddPodSandbox("wide", "sb", 0, time.Now().UnixNano())
		for i := range old {
			rt.AddPodContainer("sb", fmt.Sprintf("old%04d", i), fmt.Sprintf("app%04d", i), "h", 0, time.Now().UnixNano()+int64(i))
		}
		runPLEG(t, p)
		time.Sleep(2 * time.Second)
		if p.Mode() != plegv1.PlegMode_PLEG_MODE_EVENTED || len(cached(t, p, "wide").GetContainers()) != old {
			t.Fatalf("mode %v, %d containers cached", p.Mode(), len(cached(t, p, "wide").GetContainers()))
		}
		rt.HoldEvents(true)
		at := time.Now().UnixNano()
		for i := range old {
			id := fmt.Sprintf("old%04d", i)
			at++
			rt.ExitContainer(id, 0, "Completed", at)
			rt.Emit(rt.SingleEvent(id, "sb", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, at))
		}
		for i := range old {
			id := fmt.Sprintf("old%04d", i)
			at++
			rt.Remove(id)
			rt.Emit(rt.SingleEvent(id, "sb", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, at))
		}
		for i := range fresh {
			id := fmt.Sprintf("new%04d", i)
			at++
			rt.AddPodContainer("sb", id, fmt.Sprintf("app%04d", i), "h", 1, at)
			rt.Emit(rt.SingleEvent(id, "sb", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, at))
		}
		rt.HoldEvents(false)
		synctest.Wait()
		if got := testutil.ToFloat64(p.metrics.RuntimeEvents.WithLabelValues("applied")); got != 2*old+fresh {
			t.Fatalf("applied %v events, want %d", got, 2*old+fresh)
		}
		pod := cached(t, p, "wide")
		if len(pod.GetContainers()) != fresh || len(pod.GetSandboxes()) != 1 {
			t.Fatalf("cached %d containers and %d sandboxes, want %d and 1", len(pod.GetContainers()), len(pod.GetSandboxes()), fresh)
		}
		for _, c := range pod.GetContainers() {
			if !strings.HasPrefix(c.GetId(), "new") || c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
				t.Fatalf("container %s in state %v", c.GetId(), c.GetState())
			}
		}
		sub := p.Subscribe(nil)
		defer sub.Close()
		time.Sleep(time.Second)
		p.Relist(context.Background())
		for _, e := range drain(sub) {
			if e != "POD_SYNC " {
				t.Errorf("the relist after the backlog disagrees with the events: %s", e)
			}
		}
	})
}

// TestPodRelistOverflowRunsAGlobalRelist: a pod relist request that does
// not fit the queue is not left to the next periodic relist (300 s away
// in evented mode, which has no timestamp bump): it is counted and a
// global relist is run at once, which answers every waiter.
func TestPodRelistOverflowRunsAGlobalRelist(t *testing.T) {
	rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
	p, _ := newTest(t, rt, nil)
	for i := range PodRelistQueue + 1 {
		p.requestPodRelist(fmt.Sprintf("u%d", i), time.Time{})
	}
	if got := testutil.ToFloat64(p.metrics.PodRelistsDropped); got != 1 {
		t.Fatalf("overflowed requests %v, want 1", got)
	}
	select {
	case <-p.kick:
	default:
		t.Fatal("an overflowing pod relist request did not ask for a global relist")
	}
}

// TestRelistReconcilesWhatEventsMissed: events are merged by id, so a
// container the runtime removed without a DELETED event stays cached
// until a relist, the safety net, removes it; that relist keeps what an
// event told about another container while it ran.
func TestRelistReconcilesWhatEventsMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
		p, _ := newTest(t, rt, nil)
		ctx := context.Background()
		ns := time.Now().UnixNano()
		rt.AddPodSandbox("u1", "sb1", 0, ns)
		rt.AddPodContainer("sb1", "lost", "a", "h", 0, ns+1)
		rt.AddPodContainer("sb1", "live", "b", "h", 0, ns+2)
		p.Relist(ctx)
		sub := p.Subscribe(nil)
		defer sub.Close()
		time.Sleep(time.Second)
		rt.Remove("lost") // no event: crisim restarted, say
		if got := containerIDs(cached(t, p, "u1")); fmt.Sprint(got) != "[live lost]" {
			t.Fatalf("cached %v before the relist", got)
		}
		var fired atomic.Bool // the pod's status calls run at once
		rt.SetInspectHook(func(_ context.Context, id string) error {
			if fired.Swap(true) {
				return nil
			}
			time.Sleep(10 * time.Millisecond)
			now := time.Now().UnixNano()
			rt.ExitContainer("live", 1, "Error", now)
			p.applyEvents([]*runtimeapi.ContainerEventResponse{rt.SingleEvent("live", "sb1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, now)})
			return nil
		})
		p.Relist(ctx)
		if got := drain(sub); fmt.Sprint(got) != "[CONTAINER_DIED live CONTAINER_DIED lost CONTAINER_REMOVED lost]" {
			t.Errorf("events %v", got)
		}
		pod := cached(t, p, "u1")
		if got := containerIDs(pod); fmt.Sprint(got) != "[live]" || pod.GetContainers()[0].GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			t.Errorf("cached %v", pod.GetContainers())
		}
	})
}
