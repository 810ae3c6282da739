package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/cri"
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
		Runtime: cri.NewRuntime(g, nil, cri.Timeouts{}), Images: cri.NewImages(critest.NewImages(busybox), nil, cri.Timeouts{}),
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
			if !contains(ops, cri.OpRunPodSandbox) || !contains(ops, cri.OpCreateContainer) || !contains(ops, cri.OpStartContainer) {
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
		Runtime: cri.NewRuntime(rt, nil, cri.Timeouts{}), Images: cri.NewImages(critest.NewImages(busybox), nil, cri.Timeouts{}),
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
	rt.ExitContainer(o.GetContainers()[0].GetId(), 1, "", time.Now().UnixNano())
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
// synctest bubble).
type startTimes struct {
	*critest.Runtime
	mu     sync.Mutex
	starts []time.Time
}

func (s *startTimes) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	s.mu.Lock()
	s.starts = append(s.starts, time.Now())
	s.mu.Unlock()
	return s.Runtime.RunPodSandbox(ctx, config, handler)
}

// Pods asked for at once begin their sandboxes SandboxStartSpacing apart,
// the first at once; a pod asked for after a quiet spell is not delayed;
// a pass whose context ends while it waits for its turn fails its sandbox
// step without calling the runtime.
func TestSandboxStartsAreSpaced(t *testing.T) {
	const pods, spacing = 4, 4 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		rt := &startTimes{Runtime: critest.NewRuntime()}
		store, err := backoff.Open(filepath.Join(t.TempDir(), "b.db"), backoff.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		r, err := New(Config{
			Runtime: cri.NewRuntime(rt, nil, cri.Timeouts{}), Images: cri.NewImages(critest.NewImages(busybox), nil, cri.Timeouts{}),
			Backoff: store, LogDir: t.TempDir(), SandboxStartSpacing: spacing,
		})
		if err != nil {
			t.Fatal(err)
		}
		apply := func(ctx context.Context, i int) *executorv1.ApplyActionsResponse {
			pod := testPod(nil, ctr("web"))
			pod.Uid, pod.Name = fmt.Sprintf("uid-%d", i), fmt.Sprintf("web-%d", i)
			resp, err := r.ApplyActions(ctx, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("web")})
			if err != nil {
				t.Errorf("pod %d: %v", i, err)
			}
			return resp
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		for i := range pods {
			wg.Go(func() { apply(t.Context(), i) })
		}
		wg.Wait()
		rt.mu.Lock()
		got := slices.Clone(rt.starts)
		rt.mu.Unlock()
		slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
		for i, at := range got {
			if want := time.Duration(i) * spacing; at.Sub(t0) != want {
				t.Errorf("sandbox %d began at +%v, want +%v", i, at.Sub(t0), want)
			}
		}

		time.Sleep(time.Second)
		t1 := time.Now()
		apply(t.Context(), pods)
		rt.mu.Lock()
		last := rt.starts[len(rt.starts)-1]
		rt.mu.Unlock()
		if d := last.Sub(t1); d != 0 {
			t.Errorf("a pod after a quiet spell began its sandbox +%v late, want at once", d)
		}

		// Two at once: the second waits for its turn, and its context ends.
		ctx, cancel := context.WithCancel(t.Context())
		apply(t.Context(), pods+1)
		var resp *executorv1.ApplyActionsResponse
		done := make(chan struct{})
		go func() { defer close(done); resp = apply(ctx, pods+2) }()
		synctest.Wait()
		cancel()
		<-done
		if n := len(rt.starts); n != pods+2 {
			t.Errorf("%d sandboxes begun, want %d: the cancelled pass must not call the runtime", n, pods+2)
		}
		if st := resp.GetSteps(); len(st) == 0 || st[0].GetStep() != executorv1.Step_STEP_CREATE_SANDBOX || st[0].GetOutcome() != executorv1.Outcome_OUTCOME_FAILED {
			t.Errorf("cancelled pass steps = %v, want a failed sandbox creation", st)
		}
	})
}
