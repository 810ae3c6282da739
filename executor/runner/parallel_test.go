package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// graceRuntime is a fake runtime whose containers ignore SIGTERM:
// StopContainer takes the whole grace period (virtual time in a synctest
// bubble), and RunPodSandbox can be held, as a slow runtime would. It
// counts the calls in flight.
type graceRuntime struct {
	*critest.Runtime
	hold chan struct{} // RunPodSandbox waits on it when non-nil

	mu                    sync.Mutex
	stopping, maxStopping int
	creating, maxCreating int
}

func (g *graceRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	g.mu.Lock()
	g.stopping++
	g.maxStopping = max(g.maxStopping, g.stopping)
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.stopping--; g.mu.Unlock() }()
	select {
	case <-time.After(time.Duration(timeout) * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Runtime.StopContainer(ctx, id, timeout)
}

func (g *graceRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	g.mu.Lock()
	g.creating++
	g.maxCreating = max(g.maxCreating, g.creating)
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.creating--; g.mu.Unlock() }()
	if g.hold != nil {
		select {
		case <-g.hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return g.Runtime.RunPodSandbox(ctx, config, handler)
}

func (g *graceRuntime) counts() (stopping, maxStopping, creating, maxCreating int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopping, g.maxStopping, g.creating, g.maxCreating
}

func newGraceRunner(t *testing.T, g *graceRuntime, maxParallel int) *Runner {
	t.Helper()
	store, err := backoff.Open(filepath.Join(t.TempDir(), "b.db"), backoff.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	r, err := New(Config{
		Runtime: runtimeclient.NewRuntime(g, nil, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(critest.NewImages(busybox), nil, runtimeclient.Timeouts{}),
		Backoff: store, LogDir: t.TempDir(), MaxParallelPods: maxParallel,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDeletionsAreNotSerializedBehindGrace_R9_4: deleting more pods than
// MaxParallelPods, whose containers each take their whole grace period to
// stop, stops every one of them at once; no deletion waits for a slot
// that another pod's grace period holds.
func TestDeletionsAreNotSerializedBehindGrace_R9_4(t *testing.T) {
	const pods, bound = 6, 2
	synctest.Test(t, func(t *testing.T) {
		g := &graceRuntime{Runtime: critest.NewRuntime()}
		r := newGraceRunner(t, g, bound)
		var wg sync.WaitGroup
		errs := make([]error, pods)
		for i := range pods {
			uid := fmt.Sprintf("uid-%d", i)
			sb, c := "sb-"+uid, "c-"+uid
			g.AddSandbox(sb, &runtimeapi.PodSandboxMetadata{Name: uid, Uid: uid, Namespace: "default"}, runtimeapi.PodSandboxState_SANDBOX_READY,
				map[string]string{crilabels.PodUID: uid})
			g.AddContainer(sb, c, "app", runtimeapi.ContainerState_CONTAINER_RUNNING)
			grace := int64(30)
			pod := &syncpodv1.Pod{Uid: uid, Name: uid, DeletionGracePeriodSeconds: &grace,
				Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app", Image: busybox}}}}
			observed := &syncpodv1.ObservedPod{Uid: uid,
				Sandboxes:  []*syncpodv1.ObservedSandbox{{Id: sb, State: syncpodv1.SandboxState_SANDBOX_STATE_READY}},
				Containers: []*syncpodv1.ObservedContainer{{Id: c, Name: "app", SandboxId: sb, State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING}}}
			wg.Go(func() {
				resp, err := r.ApplyActions(t.Context(), pod, observed, &syncpodv1.PodActions{KillPod: true})
				if err == nil {
					for _, st := range resp.GetSteps() {
						if st.GetOutcome() == executorv1.Outcome_OUTCOME_FAILED {
							err = fmt.Errorf("step %s %s failed: %s", st.GetStep(), st.GetTarget(), st.GetMessage())
						}
					}
				}
				errs[i] = err
			})
		}
		// Every pass is now blocked: the ones stopping inside their grace
		// period, and any waiting for a slot.
		synctest.Wait()
		if stopping, _, _, _ := g.counts(); stopping != pods {
			t.Fatalf("%d containers stopping at once, want all %d (MaxParallelPods %d must not bound deletions)", stopping, pods, bound)
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("pod %d: %v", i, err)
			}
		}
	})
}

// TestCreationsAreBoundedByMaxParallelPods: sandbox creations beyond
// MaxParallelPods wait for a slot, and every pass completes once the
// runtime answers. Each pass reports the CRI calls it made.
func TestCreationsAreBoundedByMaxParallelPods(t *testing.T) {
	const pods, bound = 5, 2
	synctest.Test(t, func(t *testing.T) {
		g := &graceRuntime{Runtime: critest.NewRuntime(), hold: make(chan struct{})}
		r := newGraceRunner(t, g, bound)
		var wg sync.WaitGroup
		resps := make([]*executorv1.ApplyActionsResponse, pods)
		for i := range pods {
			pod := testPod(nil, ctr("web"))
			pod.Uid, pod.Name = fmt.Sprintf("uid-%d", i), fmt.Sprintf("web-%d", i)
			wg.Go(func() {
				resp, err := r.ApplyActions(t.Context(), pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("web")})
				if err != nil {
					t.Errorf("pod %d: %v", i, err)
				}
				resps[i] = resp
			})
		}
		synctest.Wait()
		if _, _, creating, _ := g.counts(); creating != bound {
			t.Fatalf("%d sandboxes being created at once, want the bound %d", creating, bound)
		}
		close(g.hold)
		wg.Wait()
		if _, _, _, most := g.counts(); most != bound {
			t.Fatalf("at most %d sandboxes created at once, want %d", most, bound)
		}
		for i, resp := range resps {
			var ops []string
			for _, c := range resp.GetCriCalls() {
				ops = append(ops, c.GetOperation())
				if c.GetStartedAt() == nil || c.GetDuration() == nil {
					t.Errorf("pod %d: call %v lacks its timing", i, c)
				}
			}
			if !contains(ops, runtimeclient.OpRunPodSandbox) || !contains(ops, runtimeclient.OpCreateContainer) || !contains(ops, runtimeclient.OpStartContainer) {
				t.Errorf("pod %d: CRI calls %v, want run_podsandbox, create_container and start_container", i, ops)
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// backoffProbeRuntime looks up a back-off entry in the store each time a
// container is started, as the runtime would see the node at that moment.
type backoffProbeRuntime struct {
	*critest.Runtime
	store *backoff.Store
	key   backoff.Key

	mu     sync.Mutex
	starts []backoffAtStart
}

type backoffAtStart struct {
	recorded bool
	delay    time.Duration
}

func (r *backoffProbeRuntime) StartContainer(ctx context.Context, id string) error {
	e, ok, err := r.store.Get(r.key)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.starts = append(r.starts, backoffAtStart{recorded: ok, delay: e.Delay})
	r.mu.Unlock()
	return r.Runtime.StartContainer(ctx, id)
}

// TestRestartIsRecordedBeforeItStarts_R11_3: the crash-loop record of a
// restart is committed while the container is created, never after it
// starts: when StartContainer is called, the store already holds the
// advanced delay (so an executor that dies right after the start still
// backs the next crash off).
func TestRestartIsRecordedBeforeItStarts_R11_3(t *testing.T) {
	store, err := backoff.Open(filepath.Join(t.TempDir(), "b.db"), backoff.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	rt := &backoffProbeRuntime{Runtime: critest.NewRuntime(), store: store,
		key: backoff.Key{PodUID: "uid-1", ContainerName: "web", SpecHash: "hash-web"}}
	r, err := New(Config{
		Runtime: runtimeclient.NewRuntime(rt, nil, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(critest.NewImages(busybox), nil, runtimeclient.Timeouts{}),
		Backoff: store, LogDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod(nil, ctr("web"))
	first, err := r.ApplyActions(t.Context(), pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("web")})
	if err != nil || !strings.HasSuffix(summary(first), "\nPULL_IMAGE web SUCCEEDED\nSTART_CONTAINER web SUCCEEDED\n") {
		t.Fatalf("first start: %v %s", err, summary(first))
	}
	read := func() *syncpodv1.ObservedPod {
		o, err := observe.Read(t.Context(), rt.Runtime, "uid-1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := read()
	// An exit longer ago than the first delay: the restart is not held.
	rt.ExitContainer(o.GetContainers()[0].GetId(), 1, "", time.Now().Add(-backoff.DefaultInitial).UnixNano())
	resp, err := r.ApplyActions(t.Context(), pod, read(), &syncpodv1.PodActions{SandboxId: first.GetSandboxId(), ContainersToStart: starts("web")})
	if err != nil || summary(resp) != "PULL_IMAGE web SUCCEEDED\nSTART_CONTAINER web SUCCEEDED\n" {
		t.Fatalf("restart: %v %s", err, summary(resp))
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	want := []backoffAtStart{{recorded: false}, {recorded: true, delay: backoff.DefaultInitial}}
	if !slices.Equal(rt.starts, want) {
		t.Fatalf("back-off record at each start %+v, want %+v", rt.starts, want)
	}
}

// startTimes records when each RunPodSandbox began (virtual time in a
// synctest bubble); while hold is non-nil, calls wait on it, as a slow
// runtime's would.
type startTimes struct {
	*critest.Runtime
	mu     sync.Mutex
	starts []time.Time
	hold   chan struct{}
}

func (s *startTimes) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	s.mu.Lock()
	s.starts = append(s.starts, time.Now())
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return s.Runtime.RunPodSandbox(ctx, config, handler)
}

func (s *startTimes) since(t0 time.Time, from int) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, at := range s.starts[from:] {
		out = append(out, at.Sub(t0))
	}
	slices.Sort(out)
	return out
}

// Pods asked for at once, on a runtime slower than the spacing, begin
// their sandboxes SandboxStartSpacing apart, the first at once. On a
// runtime faster than the spacing (each call ends before the next would
// wait) nobody waits. A pass whose context ends while it waits for its
// turn fails its sandbox step without calling the runtime.
func TestSandboxStartsAreSpaced(t *testing.T) {
	const pods, spacing = 4, 4 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		rt := &startTimes{Runtime: critest.NewRuntime(), hold: make(chan struct{})}
		store, err := backoff.Open(filepath.Join(t.TempDir(), "b.db"), backoff.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		r, err := New(Config{
			Runtime: runtimeclient.NewRuntime(rt, nil, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(critest.NewImages(busybox), nil, runtimeclient.Timeouts{}),
			Backoff: store, LogDir: t.TempDir(), SandboxStartSpacing: spacing,
		})
		if err != nil {
			t.Fatal(err)
		}
		var uid atomic.Int32
		apply := func(ctx context.Context) *executorv1.ApplyActionsResponse {
			n := uid.Add(1)
			pod := testPod(nil, ctr("web"))
			pod.Uid, pod.Name = fmt.Sprintf("uid-%d", n), fmt.Sprintf("web-%d", n)
			resp, err := r.ApplyActions(ctx, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("web")})
			if err != nil {
				t.Errorf("pod %s: %v", pod.Uid, err)
			}
			return resp
		}
		burst := func() {
			var wg sync.WaitGroup
			for range pods {
				wg.Go(func() { apply(t.Context()) })
			}
			time.Sleep(pods * spacing) // every pass has had its turn
			synctest.Wait()
			rt.mu.Lock()
			if rt.hold != nil {
				close(rt.hold)
				rt.hold = nil
			}
			rt.mu.Unlock()
			wg.Wait()
		}

		t0 := time.Now()
		burst() // slow runtime: every call in flight until all have begun
		want := []time.Duration{0, spacing, 2 * spacing, 3 * spacing}
		if got := rt.since(t0, 0); !slices.Equal(got, want) {
			t.Errorf("slow runtime: sandboxes began at %v, want %v", got, want)
		}

		time.Sleep(time.Second)
		t1 := time.Now()
		burst() // fast runtime: no call in flight for long
		if got := rt.since(t1, pods); !slices.Equal(got, make([]time.Duration, pods)) {
			t.Errorf("fast runtime: sandboxes began at %v, want all at once", got)
		}

		// One call in flight, the next waits for its turn and its
		// context ends.
		time.Sleep(time.Second)
		rt.mu.Lock()
		rt.hold = make(chan struct{})
		rt.mu.Unlock()
		first := make(chan struct{})
		go func() { defer close(first); apply(t.Context()) }()
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		var resp *executorv1.ApplyActionsResponse
		done := make(chan struct{})
		go func() { defer close(done); resp = apply(ctx) }()
		synctest.Wait()
		cancel()
		<-done
		if n := len(rt.since(t0, 0)); n != 2*pods+1 {
			t.Errorf("%d sandboxes begun, want %d: the cancelled pass must not call the runtime", n, 2*pods+1)
		}
		if st := resp.GetSteps(); len(st) == 0 || st[0].GetStep() != executorv1.Step_STEP_CREATE_SANDBOX || st[0].GetOutcome() != executorv1.Outcome_OUTCOME_FAILED {
			t.Errorf("cancelled pass steps = %v, want a failed sandbox creation", st)
		}
		rt.mu.Lock()
		close(rt.hold)
		rt.hold = nil
		rt.mu.Unlock()
		<-first
	})
}
