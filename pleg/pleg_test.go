package pleg

import (
	"context"
	"errors"
	"fmt"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/pleg/fanout"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func newTest(t *testing.T, rt *critest.Runtime, mod func(*Options)) (*PLEG, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o := Options{Runtime: rt, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg, Evented: EventedOff}
	if mod != nil {
		mod(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p, reg
}

// drain returns the queued events as "TYPE id" strings.
func drain(s *fanout.Subscription) []string {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out []string
	for {
		e, err := s.Next(ctx)
		if err != nil {
			return out
		}
		out = append(out, strings.TrimPrefix(e.GetType().String(), "POD_LIFECYCLE_EVENT_TYPE_")+" "+e.GetContainerId())
	}
}

func cached(t *testing.T, p *PLEG, uid string) *syncpodv1.ObservedPod {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pod, err := p.GetPodStatus(ctx, uid, time.Time{})
	if err != nil {
		t.Fatalf("no status for %s: %v", uid, err)
	}
	return pod
}

// TestScriptedSequence walks one pod through start, crash, a runtime
// error with re-inspection, and removal, checking events, cache and
// metrics at each step.
func TestScriptedSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime()
		p, reg := newTest(t, rt, nil)
		sub := p.Subscribe(nil)
		defer sub.Close()
		ctx := context.Background()
		ns := time.Now().UnixNano()

		type step struct {
			name  string
			do    func()
			want  []string
			check func(t *testing.T)
		}
		steps := []step{
			{"R-13.3/start", func() {
				rt.AddPodSandbox("u1", "sb1", 0, ns)
				rt.AddPodContainer("sb1", "c1", "app", "hash1", 2, ns+10)
			}, []string{"CONTAINER_STARTED c1", "CONTAINER_STARTED sb1"}, func(t *testing.T) {
				pod := cached(t, p, "u1")
				c := pod.GetContainers()[0]
				if pod.GetName() != "pod-u1" || pod.GetNamespace() != "default" || !pod.GetSandboxes()[0].GetHostNetwork() ||
					c.GetSpecHash() != "hash1" || c.GetRestartCount() != 2 || c.GetSandboxId() != "sb1" || c.GetName() != "app" ||
					c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
					t.Errorf("status %v", pod)
				}
			}},
			{"R-13.4/no-change-no-event", func() {}, nil, nil},
			{"R-13.3/crash", func() { rt.ExitContainer("c1", 137, "Error", ns+100) }, []string{"CONTAINER_DIED c1"}, func(t *testing.T) {
				c := cached(t, p, "u1").GetContainers()[0]
				if c.GetExitCode() != 137 || c.GetReason() != "Error" || c.GetFinishedAt().AsTime().UnixNano() != ns+100 {
					t.Errorf("container %v", c)
				}
			}},
			{"R-13.4/inspection-error-no-events-no-advance", func() {
				rt.AddPodContainer("sb1", "c2", "app", "hash1", 3, ns+200)
				rt.SetInspectHook(func(context.Context, string) error { return errors.New("runtime hiccup") })
			}, nil, func(t *testing.T) {
				if got := testutil.ToFloat64(p.metrics.InspectionErrors); got != 1 {
					t.Errorf("inspection errors = %v", got)
				}
				if len(cached(t, p, "u1").GetContainers()) != 1 {
					t.Error("cache advanced despite the failure")
				}
			}},
			{"R-13.4/recovery-regenerates-events", func() { rt.SetInspectHook(nil) }, []string{"CONTAINER_STARTED c2"}, func(t *testing.T) {
				pod := cached(t, p, "u1")
				if len(pod.GetContainers()) != 2 || pod.GetContainers()[0].GetId() != "c2" {
					t.Errorf("want c2 newest first: %v", pod.GetContainers())
				}
			}},
			{"R-13.3/removal", func() { rt.Remove("sb1") }, []string{"CONTAINER_REMOVED c1", "CONTAINER_DIED c2", "CONTAINER_REMOVED c2", "CONTAINER_DIED sb1", "CONTAINER_REMOVED sb1"}, func(t *testing.T) {
				if pod := cached(t, p, "u1"); pod.GetUid() != "u1" || len(pod.GetSandboxes()) != 0 {
					t.Errorf("R-13.4: vanished pod should read empty, got %v", pod)
				}
				if n := p.cache.Len(); n != 0 {
					t.Errorf("cache holds %d pods", n)
				}
			}},
		}
		for _, st := range steps {
			st.do()
			if !p.Relist(ctx) {
				t.Fatalf("%s: relist failed", st.name)
			}
			if got := drain(sub); fmt.Sprint(got) != fmt.Sprint(st.want) {
				t.Errorf("%s: events %v, want %v", st.name, got, st.want)
			}
			if st.check != nil {
				failed := t.Failed()
				st.check(t)
				if !failed && t.Failed() {
					t.Logf("step %s failed", st.name)
				}
			}
			time.Sleep(time.Second) // fake time: the next relist starts later
		}
		if got := testutil.ToFloat64(p.metrics.Events.WithLabelValues("CONTAINER_DIED")); got != 3 {
			t.Errorf("died events counted %v, want c1, c2, sb1", got)
		}
		if n, err := testutil.GatherAndCount(reg, "syncpod_pleg_relist_duration_seconds"); err != nil || n != 1 {
			t.Errorf("relist duration histogram: %d %v", n, err)
		}
	})
}

// TestReinspectionWithoutEventsSendsPodSync, a pod marked for
// re-inspection whose containers did not change gets one POD_SYNC.
func TestReinspectionWithoutEventsSendsPodSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime()
		p, _ := newTest(t, rt, nil)
		sub := p.Subscribe(nil)
		defer sub.Close()
		rt.AddPodSandbox("u1", "sb1", 0, 1)
		p.Relist(context.Background())
		drain(sub)
		p.core.Reinspect("u1")
		p.Relist(context.Background())
		if got := drain(sub); fmt.Sprint(got) != "[POD_SYNC ]" {
			t.Fatalf("got %v", got)
		}
	})
}

// TestHangingInspectionDoesNotStallOthers: one pod's inspection hangs; the
// other pod's events are published while it hangs; the hanging one times
// out, is marked for re-inspection and gets its events next relist.
func TestHangingInspectionDoesNotStallOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime()
		p, _ := newTest(t, rt, func(o *Options) { o.InspectTimeout = 5 * time.Second })
		sub := p.Subscribe(nil)
		defer sub.Close()
		rt.AddPodSandbox("fast", "sbf", 0, 1)
		rt.AddPodSandbox("slow", "sbs", 0, 1)
		rt.SetInspectHook(func(ctx context.Context, id string) error {
			if id == "sbs" {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		done := make(chan struct{})
		go func() { p.Relist(context.Background()); close(done) }()
		synctest.Wait() // everything blocked: the slow inspection waits for its timeout
		select {
		case <-done:
			t.Fatal("relist finished before the hanging inspection timed out")
		default:
		}
		if got := drain(sub); fmt.Sprint(got) != "[CONTAINER_STARTED sbf]" {
			t.Fatalf("while slow hangs: %v", got)
		}
		<-done
		if !p.core.Reinspecting("slow") {
			t.Fatal("slow pod not marked for re-inspection")
		}
		rt.SetInspectHook(nil)
		p.Relist(context.Background())
		if got := drain(sub); fmt.Sprint(got) != "[CONTAINER_STARTED sbs]" {
			t.Fatalf("next relist: %v", got)
		}
	})
}

// TestAHungInspectionHoldsUpNoRelist: one pod's
// status calls hang far past the inspect patience (the inspect timeout is
// an hour). The relist waits the patience only, publishes the other pod's
// events, and goes on; later relists and a single-pod relist of the hung
// pod start no second inspection of it, and the PLEG stays healthy. When
// the hung calls end, their result is dropped and the pod is inspected
// again by the next relist.
func TestAHungInspectionHoldsUpNoRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime()
		p, _ := newTest(t, rt, func(o *Options) {
			o.InspectTimeout, o.InspectPatience, o.RelistThreshold = time.Hour, 2*time.Second, 10*time.Second
		})
		sub := p.Subscribe(nil)
		defer sub.Close()
		rt.AddPodSandbox("fast", "sbf", 0, 1)
		rt.AddPodSandbox("hung", "sbh", 0, 1)
		unblock := make(chan struct{})
		var hungCalls atomic.Int32
		rt.SetInspectHook(func(ctx context.Context, id string) error {
			if id == "sbh" {
				hungCalls.Add(1)
				select {
				case <-unblock:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
		for i := range 3 {
			if !p.Relist(context.Background()) {
				t.Fatalf("relist %d failed", i)
			}
			time.Sleep(3 * time.Second) // the relist period, past the threshold over the loop
		}
		if !p.RelistPod(context.Background(), "hung") {
			t.Fatal("single-pod relist of the hung pod failed")
		}
		if got := drain(sub); fmt.Sprint(got) != "[CONTAINER_STARTED sbf]" {
			t.Fatalf("while hung's calls hang: %v, want fast's start only", got)
		}
		if n := hungCalls.Load(); n != 1 {
			t.Errorf("hung pod's status asked %d times, want once (no pile-up)", n)
		}
		if ok, reason := p.Healthy(); !ok {
			t.Errorf("unhealthy while one pod's calls hang: %s", reason)
		}
		if got := testutil.ToFloat64(p.metrics.InspectionStragglers); got != 1 {
			t.Errorf("stragglers counted %v, want 1", got)
		}
		close(unblock)
		synctest.Wait()
		if !p.core.Reinspecting("hung") {
			t.Fatal("the straggler's end did not mark its pod for re-inspection")
		}
		rt.SetInspectHook(nil)
		p.Relist(context.Background())
		if got := drain(sub); fmt.Sprint(got) != "[CONTAINER_STARTED sbh]" {
			t.Fatalf("next relist: %v", got)
		}
	})
}

// TestHealth, never relisted is unhealthy, a stale relist is
// unhealthy after the threshold, and a successful relist recovers.
func TestHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime()
		p, reg := newTest(t, rt, func(o *Options) { o.RelistThreshold = 10 * time.Second })
		if ok, why := p.Healthy(); ok || !strings.Contains(why, "yet to be successful") {
			t.Fatalf("fresh PLEG: %v %q", ok, why)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var serving []bool
		healthDone := make(chan struct{})
		go func() {
			_ = p.RunHealth(ctx, time.Second, func(ok bool) {
				if len(serving) == 0 || serving[len(serving)-1] != ok {
					serving = append(serving, ok)
				}
			})
			close(healthDone)
		}()
		synctest.Wait() // first health check done before any relist
		runDone := make(chan error)
		go func() { runDone <- p.Run(ctx) }()
		time.Sleep(2 * time.Second)
		if ok, _ := p.Healthy(); !ok {
			t.Fatal("unhealthy while relisting")
		}
		rt.SetListErr(errors.New("runtime down"))
		time.Sleep(15 * time.Second)
		ok, why := p.Healthy()
		if ok || !strings.Contains(why, "threshold is 10s") {
			t.Fatalf("R-13.6: stale relist: %v %q", ok, why)
		}
		rt.SetListErr(nil)
		time.Sleep(2 * time.Second)
		if ok, _ := p.Healthy(); !ok {
			t.Fatal("did not recover")
		}
		cancel()
		if err := <-runDone; err != nil {
			t.Fatal(err)
		}
		<-healthDone
		if fmt.Sprint(serving) != "[false true false true]" {
			t.Errorf("health transitions %v", serving)
		}
		if n, _ := testutil.GatherAndCount(reg, "syncpod_pleg_last_seen_timestamp_seconds"); n != 1 {
			t.Error("no last seen gauge")
		}
	})
}

// TestEventedMode: a runtime offering GetContainerEvents puts the PLEG in
// evented mode; events update the cache (only when newer) and map to
// lifecycle events; after 5 stream failures it falls back to relisting.
func TestEventedMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
		p, _ := newTest(t, rt, func(o *Options) { o.Evented = EventedAuto })
		sub := p.Subscribe(nil)
		defer sub.Close()
		rt.AddPodSandbox("u1", "sb1", 0, 1)
		rt.AddPodContainer("sb1", "c1", "app", "h", 0, 2)
		ctx, cancel := context.WithCancel(context.Background())
		runDone := make(chan error)
		go func() { runDone <- p.Run(ctx) }()
		time.Sleep(2 * time.Second)
		if p.Mode() != plegv1.PlegMode_PLEG_MODE_EVENTED {
			t.Fatalf("mode %v", p.Mode())
		}
		relists := rt.Calls("ListPodSandbox")
		drain(sub)

		at := time.Now().UnixNano()
		rt.ExitContainer("c1", 3, "Error", at)
		rt.Emit(rt.Event("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, at))
		synctest.Wait()
		if got := drain(sub); fmt.Sprint(got) != "[CONTAINER_DIED c1]" {
			t.Fatalf("R-14.3: stopped: %v", got)
		}
		if c := cached(t, p, "u1").GetContainers()[0]; c.GetExitCode() != 3 {
			t.Fatalf("R-14.2: cache not updated: %v", c)
		}
		// An older event is neither cached nor forwarded.
		rt.Emit(rt.Event("c1", "sb1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, at-1))
		synctest.Wait()
		if got := drain(sub); len(got) != 0 {
			t.Fatalf("R-14.2: stale event forwarded: %v", got)
		}
		// The safety-net relist runs at the long period: no relist in 10 s.
		time.Sleep(10 * time.Second)
		if n := rt.Calls("ListPodSandbox"); n != relists {
			t.Fatalf("relisted %d times in evented mode within 10s", n-relists)
		}
		// GetPodStatus newer-than is answered by an on-demand pod relist
		// (no timestamp bump: a bumped cache would serve stale statuses).
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		asked := time.Now()
		time.Sleep(time.Millisecond)
		if _, err := p.GetPodStatus(wctx, "unknown", asked); err != nil {
			t.Fatalf("newer-than wait in evented mode: %v", err)
		}
		wcancel()

		for range 5 {
			synctest.Wait()
			rt.FailStreams(errors.New("stream broke"))
			time.Sleep(3 * time.Second)
		}
		synctest.Wait()
		if p.Mode() != plegv1.PlegMode_PLEG_MODE_RELIST {
			t.Fatalf("R-14.4: mode after 5 failures %v", p.Mode())
		}
		if got := testutil.ToFloat64(p.metrics.EventedErrors); got != 5 {
			t.Fatalf("stream errors %v", got)
		}
		if rt.Streams() != 0 {
			t.Fatal("a stream is open before the backoff after 5 failures ran out")
		}
		before := rt.Calls("ListPodSandbox")
		time.Sleep(5 * time.Second)
		if n := rt.Calls("ListPodSandbox") - before; n < 4 {
			t.Fatalf("R-14.4: relisting at 1s after fallback: %d relists in 5s", n)
		}
		cancel()
		if err := <-runDone; err != nil {
			t.Fatal(err)
		}
	})
}

// TestEventedUnimplementedFallsBackQuietly: containerd 1.6 answers
// Unimplemented: relist mode, no error counted; with --evented=on Run
// fails instead.
func TestEventedUnimplementedFallsBackQuietly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := critest.NewRuntime()
		p, _ := newTest(t, rt, func(o *Options) { o.Evented = EventedAuto })
		ctx, cancel := context.WithCancel(context.Background())
		runDone := make(chan error)
		go func() { runDone <- p.Run(ctx) }()
		time.Sleep(5 * time.Second)
		if p.Mode() != plegv1.PlegMode_PLEG_MODE_RELIST || testutil.ToFloat64(p.metrics.EventedErrors) != 0 || rt.Calls("GetContainerEvents") != 1 {
			t.Fatalf("mode %v errors %v calls %d", p.Mode(), testutil.ToFloat64(p.metrics.EventedErrors), rt.Calls("GetContainerEvents"))
		}
		if n := rt.Calls("ListPodSandbox"); n < 5 {
			t.Fatalf("only %d relists in 5s", n)
		}
		cancel()
		if err := <-runDone; err != nil {
			t.Fatal(err)
		}

		p2, _ := newTest(t, rt, func(o *Options) { o.Evented = EventedOn })
		if err := p2.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "GetContainerEvents") {
			t.Fatalf("--evented=on: %v", err)
		}
	})
}

func TestOptionsValidation(t *testing.T) {
	_, err := New(Options{Evented: "maybe", RelistPeriod: -1})
	for _, want := range []string{"Runtime is required", "Logger is required", "Registry is required", `"maybe"`, "relist period"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestMetricsLint(t *testing.T) {
	rt := critest.NewRuntime()
	_, reg := newTest(t, rt, nil)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
}

// TestRelistNeverOverwritesANewerEventedStatus: a relist's picture dates
// from its start; a status stored by a container event while the relist
// ran is newer and must survive it (found end to end: the planner kept
// seeing a sandbox without the container it had just created, and
// retried into "name is reserved").
func TestRelistNeverOverwritesANewerEventedStatus(t *testing.T) {
	rt := critest.NewRuntime()
	p, _ := newTest(t, rt, nil)
	ns := time.Now().UnixNano()
	rt.AddPodSandbox("u1", "sb1", 0, ns)
	ctx := context.Background()
	if !p.Relist(ctx) {
		t.Fatal("first relist failed")
	}
	fromEvent := &syncpodv1.ObservedPod{Uid: "u1", Containers: []*syncpodv1.ObservedContainer{{Id: "c-new", Name: "main"}}}
	rt.SetInspectHook(func(context.Context, string) error {
		// An event arrives while this relist inspects the pod.
		p.cache.SetIfNewer("u1", fromEvent, time.Now().Add(time.Second))
		return nil
	})
	rt.SetSandboxState("sb1", runtimeapi.PodSandboxState_SANDBOX_NOTREADY) // give the relist something to report
	if !p.Relist(ctx) {
		t.Fatal("second relist failed")
	}
	if got := cached(t, p, "u1"); len(got.GetContainers()) != 1 || got.GetContainers()[0].GetId() != "c-new" {
		t.Fatalf("the relist overwrote the newer evented status: %v", got)
	}
	// Nor may a relist that no longer lists the pod delete the newer entry.
	rt.SetInspectHook(nil)
	rt.Remove("sb1")
	p.cache.SetIfNewer("u1", fromEvent, time.Now().Add(time.Hour))
	if !p.Relist(ctx) {
		t.Fatal("third relist failed")
	}
	if got, _ := p.cache.Get("u1"); got == nil {
		t.Fatal("the relist deleted a status newer than itself")
	}
}

// TestGetPodStatusRelistsThePodOnDemand: when the cache cannot answer a
// newer-than wait, the PLEG relists that one pod at once instead
// of leaving the caller to the next relist, an hour away here.
func TestGetPodStatusRelistsThePodOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, p, reg, ctx := podsGainAContainer(t, 2)
		lastAction := time.Now() // the caller's last action ended here...
		time.Sleep(time.Millisecond)
		asked := time.Now() // ...and it asks for a status newer than that
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		pod, err := p.GetPodStatus(wctx, "u1", lastAction)
		if err != nil {
			t.Fatalf("GetPodStatus: %v", err)
		}
		if time.Since(asked) != 0 {
			t.Errorf("waited %s of virtual time; an on-demand relist needs none", time.Since(asked))
		}
		if len(pod.GetContainers()) != 1 || pod.GetContainers()[0].GetId() != "c1" {
			t.Fatalf("status %v, want the new container", pod)
		}
		// Only u1 was relisted: u2's cached status still lacks c2.
		if got := cached(t, p, "u2"); len(got.GetContainers()) != 0 {
			t.Errorf("u2 was relisted too: %v", got)
		}
		// The relist records its duration after its status reached the
		// cache (and so the caller): let it finish first.
		synctest.Wait()
		if n := histogramCount(t, reg, "syncpod_pleg_pod_relist_duration_seconds"); n != 1 {
			t.Errorf("pod relists = %d, want 1", n)
		}
	})
}

// TestASecondAskerIsAnsweredByTheRelistUnderWay_R13_7: the planner
// asks for a pod's status right after its executor call (as the kubelet
// relists the pod after a sync) and again at the next sync. The second
// request, queued while the first relist of the pod runs, is answered by
// that relist and starts no second one.
func TestASecondAskerIsAnsweredByTheRelistUnderWay_R13_7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt, p, reg, ctx := podsGainAContainer(t, 1)
		lastAction := time.Now()
		time.Sleep(time.Millisecond)
		release := make(chan struct{})
		rt.SetInspectHook(func(ctx context.Context, id string) error {
			<-release
			return nil
		})
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		type answer struct {
			pod *syncpodv1.ObservedPod
			err error
		}
		answers := make(chan answer, 2)
		ask := func() {
			pod, err := p.GetPodStatus(wctx, "u1", lastAction)
			answers <- answer{pod, err}
		}
		go ask()
		synctest.Wait() // the first relist of u1 is under way, held in its status call
		go ask()
		synctest.Wait() // the second asker waits, its request queued
		close(release)
		for range 2 {
			a := <-answers
			if a.err != nil || len(a.pod.GetContainers()) != 1 {
				t.Fatalf("GetPodStatus = %v, %v; want the new container", a.pod, a.err)
			}
		}
		synctest.Wait() // a second relist, if any, has run
		if n := histogramCount(t, reg, "syncpod_pleg_pod_relist_duration_seconds"); n != 1 {
			t.Errorf("pod relists = %d, want 1", n)
		}
	})
}

// TestACallerThatJoinsAQueuedRelistGetsItsNewerStatus_R13_7: a caller that
// asks for a newer status than the one a queued pod relist was asked for
// joins it; when the request comes up, it is judged by the newest status
// its callers wait for. An event (here, a cache write) that answers only
// the first caller must not make the PLEG skip the relist and leave the
// second to the next global relist, an hour away. (Judged by the first
// caller alone, the planner's syncs waited out their 30 s timeout.)
func TestACallerThatJoinsAQueuedRelistGetsItsNewerStatus_R13_7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt, p, _, ctx := podsGainAContainer(t, 2)
		release := make(chan struct{})
		rt.SetInspectHook(func(ctx context.Context, id string) error {
			if id == "sb2" {
				<-release // u2's relist holds the queue
			}
			return nil
		})
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		// Each caller's last action ended a moment before it asks (the
		// runtime answers a relist with the time it started, which must
		// be after that).
		errs := make(chan error, 3)
		ask := func(uid string, newerThan time.Time, wantContainer bool) {
			pod, err := p.GetPodStatus(wctx, uid, newerThan)
			if err == nil && wantContainer && len(pod.GetContainers()) != 1 {
				err = fmt.Errorf("status of %s %v, want the new container", uid, pod)
			}
			errs <- err
		}
		go ask("u2", time.Now().Add(-time.Millisecond), true)
		synctest.Wait() // u2's relist is under way, held
		first := time.Now().Add(-time.Millisecond)
		go ask("u1", first, false) // queues u1's relist
		synctest.Wait()
		time.Sleep(time.Second)
		go ask("u1", time.Now().Add(-time.Millisecond), true) // joins it, for a newer status
		synctest.Wait()
		// Something answers the first caller, not the second.
		p.cache.SetIfNewer("u1", cached(t, p, "u1"), first.Add(time.Millisecond))
		close(release)
		for range 3 {
			if err := <-errs; err != nil {
				t.Errorf("GetPodStatus: %v", err)
			}
		}
	})
}

// podsGainAContainer, inside a synctest bubble, runs a PLEG that relists
// once an hour over a fake runtime holding pods u1..un (sandboxes
// sb1..sbn), lets its first relist run, then, a second later, gives each
// sandbox a container (c1..cn) that only an on-demand relist can see. It
// returns the runtime, the PLEG, its registry and the context it runs
// with.
func podsGainAContainer(t *testing.T, n int) (*critest.Runtime, *PLEG, *prometheus.Registry, context.Context) {
	t.Helper()
	rt := critest.NewRuntime()
	p, reg := newTest(t, rt, func(o *Options) { o.RelistPeriod = time.Hour })
	ns := time.Now().UnixNano()
	for i := 1; i <= n; i++ {
		rt.AddPodSandbox(fmt.Sprintf("u%d", i), fmt.Sprintf("sb%d", i), 0, ns)
	}
	ctx := running(t, p)
	synctest.Wait() // the first relist ran
	time.Sleep(time.Second)
	for i := 1; i <= n; i++ {
		rt.AddPodContainer(fmt.Sprintf("sb%d", i), fmt.Sprintf("c%d", i), "app", "h", 0, time.Now().UnixNano())
	}
	return rt, p, reg, ctx
}

// running runs p until the test ends and returns the context it runs
// with.
func running(t *testing.T, p *PLEG) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestEventedFallbackIsFinalWhenTheStreamDiesAsItIsConfirmed: the stream
// confirmation timer and a stream failure can fall due at the same
// instant; whichever the runtime picks first, a PLEG that has fallen back
// from events must stay in RELIST mode until it retries the stream
// never in EVENTED without a stream (which would relist only
// every 300 s).
func TestEventedFallbackIsFinalWhenTheStreamDiesAsItIsConfirmed(t *testing.T) {
	for range 100 {
		synctest.Test(t, func(t *testing.T) {
			rt := critest.NewRuntime().WithEvents(critest.EventsOffered)
			p, _ := newTest(t, rt, func(o *Options) {
				o.Evented = EventedAuto
				o.EventedMaxFailures = 1
				o.EventedBackoff = time.Hour
				o.EventedBackoffMax = time.Hour
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- p.Run(ctx) }()
			synctest.Wait()
			time.Sleep(p.opts.EventedConfirm) // the confirmation falls due now...
			rt.FailStreams(errors.New("stream broke"))
			synctest.Wait() // ...and so does the failure
			time.Sleep(time.Minute)
			if p.Mode() != plegv1.PlegMode_PLEG_MODE_RELIST || rt.Streams() != 0 {
				t.Errorf("after the last allowed failure: mode %s with %d streams, want RELIST", p.Mode(), rt.Streams())
			}
			cancel()
			<-done
		})
	}
}

// TestInspectionSkipsAnObjectRemovedMeanwhile: a container removed between
// the list and its status call is gone, not a failed inspection (which
// would hold back every event of the pod until the next relist).
func TestInspectionSkipsAnObjectRemovedMeanwhile(t *testing.T) {
	rt := critest.NewRuntime()
	p, _ := newTest(t, rt, nil)
	ns := time.Now().UnixNano()
	rt.AddPodSandbox("u1", "sb1", 0, ns)
	rt.AddPodContainer("sb1", "old", "app", "h", 0, ns+1)
	rt.AddPodContainer("sb1", "new", "app", "h", 1, ns+2)
	rt.SetInspectHook(func(_ context.Context, id string) error {
		if id == "old" {
			return grpcstatus.Error(codes.NotFound, "container removed by the executor's GC")
		}
		return nil
	})
	if !p.Relist(context.Background()) {
		t.Fatal("relist failed")
	}
	if got := testutil.ToFloat64(p.metrics.InspectionErrors); got != 0 {
		t.Errorf("inspection errors = %v, want 0", got)
	}
	pod := cached(t, p, "u1")
	if len(pod.GetContainers()) != 1 || pod.GetContainers()[0].GetId() != "new" {
		t.Fatalf("cached %v, want only the container still there", pod.GetContainers())
	}
}

// TestAdaptiveRelistPeriod: without a fixed period the PLEG relists as
// often as its budget allows: every 100 ms while relists are
// cheap, less often as they cost more, never less often than every
// second, nor while the runtime fails to answer; the gauge shows the
// period in use. A fixed period stays fixed whatever relists cost.
func TestAdaptiveRelistPeriod(t *testing.T) {
	// fakeCPU makes each relist cost *cost of CPU: Relist reads it
	// once before and once after.
	fakeCPU := func(cost *atomic.Int64) func() time.Duration {
		var calls, total atomic.Int64
		return func() time.Duration {
			if calls.Add(1)%2 == 0 {
				total.Add(cost.Load())
			}
			return time.Duration(total.Load())
		}
	}
	gauge := func(t *testing.T, reg *prometheus.Registry) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "syncpod_pleg_relist_period_seconds" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no syncpod_pleg_relist_period_seconds")
		return 0
	}
	for _, tc := range []struct {
		name      string
		fixed     time.Duration
		cost      time.Duration
		listErr   error
		want      float64 // the gauge after 10 s of relisting
		relistsIn int     // relists in the 10 s: one per period, and one more at once after the first (New's mode change kicks the loop)
	}{
		{"cheap relists: every 100 ms", 0, 200 * time.Microsecond, nil, 0.1, 101},
		{"2 ms relists: every 200 ms", 0, 2 * time.Millisecond, nil, 0.2, 51},
		{"costly relists: every second, as the kubelet", 0, 50 * time.Millisecond, nil, 1, 11},
		{"a runtime that does not answer: every second", 0, 200 * time.Microsecond, errors.New("runtime down"), 1, 11},
		{"a fixed period ignores the cost", 300 * time.Millisecond, 200 * time.Microsecond, nil, 0.3, 35},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var cost atomic.Int64
				cost.Store(int64(tc.cost))
				rt := critest.NewRuntime()
				rt.AddPodSandbox("u1", "sb1", 0, time.Now().UnixNano())
				rt.SetListErr(tc.listErr)
				p, reg := newTest(t, rt, func(o *Options) {
					o.RelistPeriod = tc.fixed
					o.CPUTime = fakeCPU(&cost)
				})
				running(t, p)
				time.Sleep(10*time.Second - time.Nanosecond)
				synctest.Wait()
				if got := gauge(t, reg); got != tc.want {
					t.Errorf("relist period gauge = %v, want %v", got, tc.want)
				}
				// The interval histogram counts every relist but the first.
				if got := histogramCount(t, reg, "syncpod_pleg_relist_interval_seconds") + 1; got != uint64(tc.relistsIn) {
					t.Errorf("%d relists in 10 s, want %d", got, tc.relistsIn)
				}
			})
		})
	}
}
