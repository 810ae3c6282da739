package pleg

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/pleg/core"
	"github.com/syncpod/syncpod/pleg/fanout"
	"github.com/syncpod/syncpod/pleg/wake"
	"github.com/syncpod/syncpod/pleg/wake/waketest"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
)

// hour is a period no test waits for: a relist a test sees within its
// timeout was woken, not periodic.
const hour = time.Hour

// gatedRuntime is a critest.Runtime whose ListPodSandbox, the first call
// of a relist, blocks while the gate is closed and reports that it
// entered.
type gatedRuntime struct {
	*critest.Runtime
	mu      sync.Mutex
	gate    chan struct{} // nil: open
	entered chan struct{}
}

func (g *gatedRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.entered <- struct{}{}
		<-gate
	}
	return g.Runtime.ListPodSandbox(ctx, f)
}

func (g *gatedRuntime) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
}

func (g *gatedRuntime) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = nil
}

// wakeTest is a PLEG whose periodic relists never come due (an hour,
// adaptive or safety net), with a fake containerd events service as its
// Wake source, running until the test ends; one pod with container c1
// running.
func wakeTest(t *testing.T, unimplemented bool, mod func(*Options)) (*PLEG, *prometheus.Registry, *waketest.Server, *gatedRuntime) {
	t.Helper()
	srv, conn := waketest.Start(t, unimplemented)
	rt := &gatedRuntime{Runtime: critest.NewRuntime(), entered: make(chan struct{}, 1)}
	rt.AddPodSandbox("u1", "sb1", 0, time.Now().UnixNano())
	rt.AddPodContainer("sb1", "c1", "app", "h", 0, time.Now().UnixNano())
	p, reg := newTest(t, rt.Runtime, func(o *Options) {
		o.Runtime = rt
		o.Evented = EventedAuto // critest answers GetContainerEvents Unimplemented, as containerd 1.6
		o.RelistBudget = core.RelistBudget{Share: 0.01, Min: hour, Max: hour}
		o.WakePeriod = hour
		o.WakeConfirm = hour // up at the first event
		o.WakeRetry = 10 * time.Millisecond
		o.Wake = &wake.Source{Conn: conn}
		if mod != nil {
			mod(o)
		}
	})
	running(t, p)
	return p, reg, srv, rt
}

// eventually polls cond until it holds; the test fails after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// relists is how many relists p has run (the interval histogram counts
// every one but the first).
func relists(t *testing.T, reg *prometheus.Registry) uint64 {
	return histogramCount(t, reg, "syncpod_pleg_relist_interval_seconds") + 1
}

// waitDied waits for CONTAINER_DIED of id on sub.
func waitDied(t *testing.T, sub *fanout.Subscription, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no CONTAINER_DIED for %s: %v", id, err)
		}
		if ev.GetType() == plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED && ev.GetContainerId() == id {
			return
		}
	}
}

// startedUp waits for the PLEG's first two relists (the start and the
// mode's kick) and for the wake stream; the first event will bring it up
// and kick a third relist.
func startedUp(t *testing.T, reg *prometheus.Registry, srv *waketest.Server) {
	t.Helper()
	if !srv.WaitStreams(t.Context(), 1, 1) {
		t.Fatal("no subscription")
	}
	eventually(t, "two relists", func() bool { return relists(t, reg) == 2 })
}

// TestAnExitEventRelistsAtOnce_R34: on a runtime without CRI events whose
// socket serves containerd's event service, a task exit in the CRI
// namespace makes the PLEG relist at once, without waiting for its
// period, and publish the death; the period becomes the safety net,
// shown by the gauges.
func TestAnExitEventRelistsAtOnce_R34(t *testing.T) {
	p, reg, srv, rt := wakeTest(t, false, func(o *Options) { o.WakePeriod = 2 * hour })
	sub := p.Subscribe(nil)
	defer sub.Close()
	startedUp(t, reg, srv)
	if p.WakeUp() {
		t.Fatal("wake stream up before it was confirmed")
	}
	rt.ExitContainer("c1", 1, "Error", time.Now().UnixNano())
	srv.Send("k8s.io", "/tasks/exit")
	waitDied(t, sub, "c1")
	if !p.WakeUp() {
		t.Error("wake stream not up after an event")
	}
	if got := testutil.ToFloat64(p.metrics.WakeStream); got != 1 {
		t.Errorf("syncpod_pleg_wake_stream = %v, want 1", got)
	}
	if got := p.period(); got != 2*hour {
		t.Errorf("period %s with the wake stream up, want the safety net %s", got, 2*hour)
	}
	if got := testutil.ToFloat64(p.metrics.Wakes); got != 1 {
		t.Errorf("syncpod_pleg_wakes_total = %v, want 1", got)
	}
}

// TestAWokenRelistIsFollowedUp_R34: a woken relist is followed by four
// more, WakeSettle after it and then each twice as long after the one
// before (the runtime's CRI handler records the change after its events
// went out), and then by nothing until the period.
func TestAWokenRelistIsFollowedUp_R34(t *testing.T) {
	_, reg, srv, _ := wakeTest(t, false, func(o *Options) { o.WakeSettle = 5 * time.Millisecond })
	startedUp(t, reg, srv)
	srv.Send("k8s.io", "/tasks/start")
	// The event kicks once as it brings the stream up and wakes once:
	// a relist for each, then the follow-ups after 5, 10, 20 and 40 ms.
	eventually(t, "the woken relists and their follow-ups", func() bool { return relists(t, reg) == 8 })
	time.Sleep(200 * time.Millisecond) // room for a relist too many
	if got := relists(t, reg); got != 8 {
		t.Errorf("%d relists, want 8", got)
	}
}

// TestABurstOfEventsCoalesces_R34: events arriving while a relist
// runs make exactly one more relist (and its follow-ups), however many
// they are.
func TestABurstOfEventsCoalesces_R34(t *testing.T) {
	p, reg, srv, rt := wakeTest(t, false, func(o *Options) { o.WakeSettle = 5 * time.Millisecond })
	startedUp(t, reg, srv)
	srv.Send("k8s.io", "/tasks/start") // up: the kick and the wake relist, and 4 follow-ups
	eventually(t, "the woken relists", func() bool { return relists(t, reg) == 8 })
	time.Sleep(100 * time.Millisecond) // the follow-ups are over
	rt.close()
	srv.Send("k8s.io", "/tasks/exit")
	<-rt.entered // a woken relist, the 9th, holds in its list
	for range 50 {
		srv.Send("k8s.io", "/tasks/exit")
	}
	eventually(t, "52 wake-ups", func() bool { return testutil.ToFloat64(p.metrics.Wakes) == 52 })
	rt.open()
	eventually(t, "the held relist, one more and its follow-ups", func() bool { return relists(t, reg) == 14 })
	time.Sleep(200 * time.Millisecond) // room for a relist too many
	if got := relists(t, reg); got != 14 {
		t.Errorf("%d relists, want 14: 8 before, the held one, one for the burst and its 4 follow-ups", got)
	}
}

// TestUnimplementedKeepsTheAdaptivePeriod_R34: a runtime without the
// event service (crisim, CRI-O) leaves the PLEG at its adaptive period,
// asked again only after the longest backoff.
func TestUnimplementedKeepsTheAdaptivePeriod_R34(t *testing.T) {
	p, reg, srv, _ := wakeTest(t, true, func(o *Options) {
		o.RelistBudget = core.DefaultRelistBudget
		o.WakeConfirm = time.Millisecond
		o.WakeBackoffMax = hour
	})
	eventually(t, "a subscription", func() bool { n, _ := srv.Subscribed(); return n == 1 })
	eventually(t, "some relists", func() bool { return relists(t, reg) >= 5 })
	if p.WakeUp() {
		t.Error("wake stream up on a runtime without the service")
	}
	if got := testutil.ToFloat64(p.metrics.WakeStream); got != 0 {
		t.Errorf("syncpod_pleg_wake_stream = %v, want 0", got)
	}
	if got, want := p.period(), time.Duration(p.adaptive.Load()); got != want || got >= time.Second {
		t.Errorf("period %s, want the adaptive one (%s), under a second", got, want)
	}
	if n, _ := srv.Subscribed(); n != 1 {
		t.Errorf("%d subscriptions, want 1 before the backoff ends", n)
	}
}

// TestABrokenStreamIsResubscribed_R34: a stream that ends puts the PLEG
// back on its adaptive period, and the PLEG subscribes again; the new
// stream's events wake relists.
func TestABrokenStreamIsResubscribed_R34(t *testing.T) {
	p, reg, srv, rt := wakeTest(t, false, func(o *Options) { o.WakePeriod = 2 * hour })
	sub := p.Subscribe(nil)
	defer sub.Close()
	startedUp(t, reg, srv)
	srv.Send("k8s.io", "/tasks/start")
	eventually(t, "the stream up", p.WakeUp)
	srv.End(nil)
	if !srv.WaitStreams(t.Context(), 1, 2) {
		t.Fatal("no second subscription")
	}
	if p.WakeUp() {
		t.Error("wake stream up after it broke, before the new one delivered anything")
	}
	if got := p.period(); got != hour {
		t.Errorf("period %s after the stream broke, want the adaptive %s", got, hour)
	}
	rt.ExitContainer("c1", 1, "Error", time.Now().UnixNano())
	srv.Send("k8s.io", "/tasks/exit")
	waitDied(t, sub, "c1")
	if !p.WakeUp() {
		t.Error("the new stream not up after its event")
	}
}
