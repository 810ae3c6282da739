package syncer

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/executor/executortest"
	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/podsync"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/timeline"
	"github.com/syncpod/syncpod/planner/validate"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// fakePLEG serves observed pods set by the test and streams its events.
type fakePLEG struct {
	mu       sync.Mutex
	observed map[string]*syncpodv1.ObservedPod
	gets     map[string]int
	newer    map[string][]time.Time // newer_than of each GetPodStatus, by uid
	events   chan *plegv1.PodLifecycleEvent
	// stale, when set, is what ListPodStatuses answers: the PLEG's cache
	// as of its last relist, while GetPodStatus (which relists the pod on
	// demand when asked for a newer status) answers from observed.
	stale []*syncpodv1.ObservedPod
	// fail, when set, fails the GetPodStatus requests it returns an error for.
	fail func(*plegv1.GetPodStatusRequest) error
}

func (f *fakePLEG) set(o *syncpodv1.ObservedPod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observed[o.GetUid()] = o
}

func (f *fakePLEG) getCount(uid string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[uid]
}

func (f *fakePLEG) GetPodStatus(_ context.Context, req *plegv1.GetPodStatusRequest) (*plegv1.GetPodStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets[req.GetPodUid()]++
	f.newer[req.GetPodUid()] = append(f.newer[req.GetPodUid()], req.GetNewerThan().AsTime())
	if f.fail != nil {
		if err := f.fail(req); err != nil {
			return nil, err
		}
	}
	o, ok := f.observed[req.GetPodUid()]
	if !ok {
		o = &syncpodv1.ObservedPod{Uid: req.GetPodUid()}
	}
	return &plegv1.GetPodStatusResponse{Observed: proto.Clone(o).(*syncpodv1.ObservedPod)}, nil
}

func (f *fakePLEG) ListPodStatuses(context.Context, *plegv1.ListPodStatusesRequest) (*plegv1.ListPodStatusesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &plegv1.ListPodStatusesResponse{}
	if f.stale != nil {
		for _, o := range f.stale {
			resp.Pods = append(resp.Pods, proto.Clone(o).(*syncpodv1.ObservedPod))
		}
		return resp, nil
	}
	for _, o := range f.observed {
		resp.Pods = append(resp.Pods, proto.Clone(o).(*syncpodv1.ObservedPod))
	}
	return resp, nil
}

func (f *fakePLEG) newerThans(uid string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.newer[uid]...)
}

// snapshot returns the ApplyActions and RemoveResources requests ex got.
func snapshot(ex *executortest.Executor) ([]*executorv1.ApplyActionsRequest, []*executorv1.RemoveResourcesRequest) {
	r := ex.Requests()
	return r.Applies, r.Removes
}

type env struct {
	pleg  *fakePLEG
	exec  *executortest.Executor
	store *store.Store
	s     *Syncer
	// stop ends the syncer's Run and closes the store (also at cleanup).
	stop func()
}

// plegClient calls the fake PLEG in-process, so the tests run inside a
// synctest bubble (no sockets, virtual time).
type plegClient struct{ f *fakePLEG }

func (c plegClient) PodStatus(ctx context.Context, uid string, newerThan time.Time) (*syncpodv1.ObservedPod, error) {
	req := &plegv1.GetPodStatusRequest{PodUid: uid}
	if !newerThan.IsZero() {
		req.NewerThan = timestamppb.New(newerThan)
	}
	resp, err := c.f.GetPodStatus(ctx, req)
	return resp.GetObserved(), err
}

func (c plegClient) PodStatuses(ctx context.Context) ([]*syncpodv1.ObservedPod, error) {
	resp, err := c.f.ListPodStatuses(ctx, &plegv1.ListPodStatusesRequest{})
	return resp.GetPods(), err
}

func (c plegClient) Watch(ctx context.Context) (EventStream, error) {
	return &watchStream{ctx: ctx, events: c.f.events}, nil
}

// watchStream is a PLEG event stream fed by the fake's events channel.
type watchStream struct {
	ctx    context.Context
	events chan *plegv1.PodLifecycleEvent
}

func (w *watchStream) Recv() (*plegv1.PodLifecycleEvent, error) {
	select {
	case <-w.ctx.Done():
		return nil, w.ctx.Err()
	case ev := <-w.events:
		return ev, nil
	}
}

// execClient calls the fake executor in-process.
type execClient struct{ f *executortest.Executor }

func (c execClient) ApplyActions(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions, cfg Config) (*executorv1.ApplyActionsResponse, error) {
	return c.f.ApplyActions(ctx, &executorv1.ApplyActionsRequest{Pod: pod, Observed: observed, Actions: actions,
		ConfigMaps: cfg.ConfigMaps, Secrets: cfg.Secrets})
}

func (c execClient) RemoveResources(ctx context.Context, r podsync.Removal) ([]*executorv1.RemoveResult, error) {
	resp, err := c.f.RemoveResources(ctx, removeRequest(r))
	return resp.GetResults(), err
}

func (c execClient) ExecSync(context.Context, string, []string, time.Duration) (int32, error) {
	return 0, status.Error(codes.Unimplemented, "the fake executor runs no probes")
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the syncer's options changed by opt.
func newEnvWith(t *testing.T, opt func(*Options)) *env {
	t.Helper()
	return newEnvAt(t, "", opt)
}

// newEnvAt is newEnvWith on the store file at path ("": a new one).
func newEnvAt(t testing.TB, path string, opt func(*Options)) *env {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "p.db")
	}
	e := &env{
		pleg: &fakePLEG{observed: map[string]*syncpodv1.ObservedPod{}, gets: map[string]int{}, newer: map[string][]time.Time{}, events: make(chan *plegv1.PodLifecycleEvent, 16)},
		exec: &executortest.Executor{},
	}
	var err error
	e.store, err = store.Open(store.Options{Path: path, Validate: validate.Pod})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Store: e.store, PLEG: plegClient{e.pleg}, Executor: execClient{e.exec},
		ResyncPeriod: time.Hour, HousekeepingPeriod: time.Hour, RPCTimeout: 5 * time.Second,
	}
	if opt != nil {
		opt(&opts)
	}
	e.s, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.s.Run(ctx); close(done) }()
	var once sync.Once
	e.stop = func() { once.Do(func() { cancel(); <-done; e.store.Close() }) }
	t.Cleanup(e.stop)
	return e
}

// settled waits (inside a synctest bubble) until every goroutine of the
// syncer is blocked, then requires cond.
func settled(t *testing.T, what string, cond func() bool) {
	t.Helper()
	synctest.Wait()
	if !cond() {
		t.Fatalf("after everything settled: not %s", what)
	}
}

// modified collects the store's MODIFIED records of everything settled.
func modified(t *testing.T, sub *store.Subscription) []*plannerv1.PodRecord {
	t.Helper()
	synctest.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	var recs []*plannerv1.PodRecord
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			return recs
		}
		for _, ev := range evs {
			if ev.GetType() == plannerv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED {
				recs = append(recs, ev.GetRecord())
			}
		}
	}
}

// subscribe watches every change of the store until the test ends.
func subscribe(t *testing.T, e *env) *store.Subscription {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sub, err := e.store.Subscribe(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	return sub
}

const uid = "6f1c2a3b-0d4e-4f5a-8b6c-7d8e9f0a1b2c"

func webPod() *syncpodv1.Pod {
	grace := int64(3)
	return &syncpodv1.Pod{Uid: uid, Name: "web", Spec: &syncpodv1.PodSpec{
		HostNetwork: true, TerminationGracePeriodSeconds: &grace,
		Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox:1.36"}},
	}}
}

func (e *env) apply(t *testing.T, p *syncpodv1.Pod) *syncpodv1.Pod {
	t.Helper()
	stored, _, err := e.store.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

func runningObserved(uid string) *syncpodv1.ObservedPod {
	at := timestamppb.New(time.Now().Add(-time.Minute))
	return &syncpodv1.ObservedPod{Uid: uid, Name: "web", Namespace: "default",
		Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "sb1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, HostNetwork: true, CreatedAt: at}},
		Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SandboxId: "sb1", CreatedAt: at, StartedAt: at,
			SpecHash: plan.SpecHash(webPod().GetSpec().GetContainers()[0])}},
	}
}

func TestNewPodIsPlannedAppliedAndGetsStatusAndEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.SetApplyAnswer(func(req *executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			return &executorv1.ApplyActionsResponse{SandboxId: "sb1", Steps: []*executorv1.StepResult{
				{Step: executorv1.Step_STEP_CREATE_SANDBOX, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Target: "sb1"},
				{Step: executorv1.Step_STEP_START_CONTAINER, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Target: "app", ContainerId: "c1"},
			}}
		})
		pod := e.apply(t, webPod())
		settled(t, "an ApplyActions call", func() bool { a, _ := snapshot(e.exec); return len(a) >= 1 })
		a, _ := snapshot(e.exec)
		if !a[0].GetActions().GetCreateSandbox() || len(a[0].GetActions().GetContainersToStart()) != 1 || a[0].GetPod().GetUid() != pod.GetUid() {
			t.Fatalf("first change set %v, want a sandbox and one container for pod %s", a[0].GetActions(), pod.GetUid())
		}
		settled(t, "status and events", func() bool {
			rec, err := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
			return err == nil && rec.GetStatus().GetPhase() != syncpodv1.PodPhase_POD_PHASE_UNSPECIFIED && len(rec.GetEvents()) > 0 && rec.GetLastActions() != nil
		})
	})
}

func TestConvergedPodIsNotResyncedByItsOwnStatusWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.pleg.set(runningObserved(uid))
		pod := e.apply(t, webPod())
		// The first sync (the store's ADDED) and at most one more (the
		// PLEG watch connecting resyncs everything), then nothing: the
		// syncs' own status writes trigger none.
		settled(t, "one or two syncs", func() bool { n := e.pleg.getCount(pod.GetUid()); return n >= 1 && n <= 2 })
		n := e.pleg.getCount(pod.GetUid())
		time.Sleep(30 * time.Minute) // half the resync period, virtual
		synctest.Wait()
		if got := e.pleg.getCount(pod.GetUid()); got != n {
			t.Fatalf("a converged pod kept syncing: %d then %d status reads", n, got)
		}
		if a, _ := snapshot(e.exec); len(a) != 0 {
			t.Fatalf("a healthy running pod got change sets: %v", a)
		}
		// A PLEG event for the pod triggers a sync; a removal does not.
		e.pleg.events <- &plegv1.PodLifecycleEvent{PodUid: pod.GetUid(), Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED}
		e.pleg.events <- &plegv1.PodLifecycleEvent{PodUid: pod.GetUid(), Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED}
		settled(t, "exactly one sync, after CONTAINER_DIED", func() bool { return e.pleg.getCount(pod.GetUid()) == n+1 })
	})
}

func TestAConvergedPodIsResyncedOnItsOwnAfterItsLastSync_R11_7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnvWith(t, func(o *Options) { o.ResyncPeriod = time.Minute })
		e.pleg.set(runningObserved(uid))
		pod := e.apply(t, webPod())
		settled(t, "one or two syncs", func() bool { n := e.pleg.getCount(pod.GetUid()); return n >= 1 && n <= 2 })
		n := e.pleg.getCount(pod.GetUid())
		// Due 60 to 90 s after its last sync, and the next one 60 to 90 s
		// after that: exactly one within 95 s.
		time.Sleep(95 * time.Second)
		synctest.Wait()
		if got := e.pleg.getCount(pod.GetUid()); got != n+1 {
			t.Fatalf("status reads: %d, then %d 95 s later; want exactly one resync", n, got)
		}
		if tl := e.s.Timeline().Last(pod.GetUid()); tl.GetTrigger() != timeline.SourceResync {
			t.Fatalf("the last sync's trigger is %q, want %q", tl.GetTrigger(), timeline.SourceResync)
		}
		if a, _ := snapshot(e.exec); len(a) != 0 {
			t.Fatalf("a healthy running pod got change sets on its resync: %v", a)
		}
	})
}

func TestDeletedPodIsKilledThenRemovedThenForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.pleg.set(runningObserved(uid))
		pod := e.apply(t, webPod())
		settled(t, "a first sync", func() bool { return e.pleg.getCount(pod.GetUid()) >= 1 })
		e.exec.SetApplyAnswer(func(req *executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			if req.GetActions().GetKillPod() {
				o := runningObserved(pod.GetUid())
				o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
				o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
				e.pleg.set(o) // what the PLEG sees after the kill
			}
			return &executorv1.ApplyActionsResponse{}
		})
		grace := int64(5)
		if _, err := e.store.MarkDeleted(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()}, &grace); err != nil {
			t.Fatal(err)
		}
		settled(t, "the pod to leave the store", func() bool {
			_, err := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
			return err != nil
		})
		applies, removes := snapshot(e.exec)
		if len(applies) != 1 || !applies[0].GetActions().GetKillPod() || applies[0].GetPod().GetDeletionGracePeriodSeconds() != 5 {
			t.Fatalf("applies %v, want one KillPod carrying the deletion grace period", applies)
		}
		if len(removes) != 1 || len(removes[0].GetContainerIds()) != 1 || len(removes[0].GetSandboxIds()) != 1 {
			t.Fatalf("removes %v, want the container and the sandbox", removes)
		}
		// The pod's log directory and back-offs go with it.
		want := &executorv1.ForgetPodRef{Uid: uid, Namespace: "default", Name: "web"}
		if !proto.Equal(removes[0].GetForgetPod(), want) {
			t.Fatalf("forget_pod %v, want %v", removes[0].GetForgetPod(), want)
		}
		if e.s.workers.Known() != 0 {
			t.Fatalf("a removed pod still has a worker")
		}
	})
}

func TestBackoffRetryAtArmsAWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		retry := time.Now().Add(time.Hour).Truncate(time.Second)
		e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			return &executorv1.ApplyActionsResponse{RetryAt: timestamppb.New(retry), Steps: []*executorv1.StepResult{
				{Step: executorv1.Step_STEP_START_CONTAINER, Target: "app", Outcome: executorv1.Outcome_OUTCOME_SKIPPED, Reason: "CrashLoopBackOff", BackoffUntil: timestamppb.New(retry)},
			}}
		})
		pod := e.apply(t, webPod())
		settled(t, "a wake-up at the back-off instant", func() bool { return e.s.workers.NextWake(pod.GetUid()).Equal(retry) })
		settled(t, "CrashLoopBackOff in the status", func() bool {
			rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
			cs := rec.GetStatus().GetContainerStatuses()
			return len(cs) == 1 && cs[0].GetState().GetWaiting().GetReason() == "CrashLoopBackOff"
		})
	})
}

func TestFinishedPodIsNotReplanned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		p := webPod()
		p.Spec.RestartPolicy = syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
		o := runningObserved(uid)
		o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
		o.Containers[0].FinishedAt = timestamppb.Now()
		e.pleg.set(o) // sandbox still ready, the only container done
		e.exec.SetApplyAnswer(func(req *executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			o := proto.Clone(o).(*syncpodv1.ObservedPod)
			o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
			e.pleg.set(o)
			return &executorv1.ApplyActionsResponse{}
		})
		pod := e.apply(t, p)
		settled(t, "phase Succeeded", func() bool {
			rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
			return rec.GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED
		})
		e.s.workers.Trigger(pod.GetUid())
		e.s.workers.Trigger(pod.GetUid())
		synctest.Wait()
		applies, _ := snapshot(e.exec)
		if len(applies) != 1 || !applies[0].GetActions().GetKillPod() || applies[0].GetActions().GetCreateSandbox() {
			t.Fatalf("applies %v, want exactly one kill of the finished pod and no new sandbox", applies)
		}
	})
}

func TestStatusIsNeverOlderThanTheLastExecutorCallEvenAFailedOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.SetApplyError(status.Error(codes.DeadlineExceeded, "the runtime was slow; the call may have done its work"))
		time.Sleep(time.Second) // the loop has run a while before the pod comes
		pod := e.apply(t, webPod())
		time.Sleep(5 * time.Second) // past the first error back-off (1 s)
		settled(t, "a retry after the failed call", func() bool { return len(e.pleg.newerThans(pod.GetUid())) >= 2 })
		applies, _ := snapshot(e.exec)
		nt := e.pleg.newerThans(pod.GetUid())
		// The first read of a pod first stored after the loop started
		// takes any status (nothing can have acted on it; see
		// TestPodStoredBeforeTheLoopWaitsForAStatusNewerThanItsStart)...
		if first := nt[0]; !first.Equal(time.Unix(0, 0).UTC()) {
			t.Errorf("first newer_than %v, want unset (reads as the epoch) for a pod stored after the loop's start", first)
		}
		// ...and the retry for one newer than the failed call.
		if len(applies) == 0 || !nt[1].After(nt[0]) {
			t.Errorf("newer_than did not advance past the failed executor call: %v", nt)
		}
	})
}

func TestAFailedKillOfADeletedPodBacksOffInsteadOfSpinning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.pleg.set(runningObserved(uid))
		e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			return &executorv1.ApplyActionsResponse{Steps: []*executorv1.StepResult{
				{Step: executorv1.Step_STEP_KILL_CONTAINER, Target: "app", Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: "KillContainerError", Message: "stuck"},
				{Step: executorv1.Step_STEP_KILL_POD, Target: "web", Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: "KillPodError"},
			}}
		})
		pod := e.apply(t, webPod())
		synctest.Wait()
		if _, err := e.store.MarkDeleted(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()}, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(10 * time.Second) // error back-off: 1 s, 2 s, 4 s, ...
		synctest.Wait()
		applies, _ := snapshot(e.exec)
		// One kill at once, then retries after 1, 2 and 4 s (7 s): a handful,
		// not thousands.
		if n := len(applies); n < 2 || n > 6 {
			t.Fatalf("%d kill attempts in 10 s of a container that cannot be stopped, want a backed-off handful", n)
		}
		if _, err := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()}); err != nil {
			t.Fatalf("a pod whose kill failed was removed: %v", err)
		}
	})
}

// Housekeeping must not remove again, as orphaned, a pod its worker has
// just removed (each such second removal would cost an executor ERROR ...
// NotFound). The PLEG's list lags the runtime by up to a relist: a pod its
// worker has just removed (from the runtime, then from the store) is still
// listed and no longer desired, so it looks orphaned.
func TestHousekeepingDoesNotRemoveAgainAPodItsWorkerJustRemoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		last func(o *syncpodv1.ObservedPod) // the stale listing, as of the last relist
	}{
		{"listed stopped", func(o *syncpodv1.ObservedPod) {
			o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
			o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
		}},
		{"listed still running", func(*syncpodv1.ObservedPod) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				e.pleg.set(runningObserved(uid))
				pod := e.apply(t, webPod())
				synctest.Wait()
				e.exec.SetApplyAnswer(func(req *executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
					if req.GetActions().GetKillPod() {
						o := runningObserved(uid)
						o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
						o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
						e.pleg.set(o)
					}
					return &executorv1.ApplyActionsResponse{}
				})
				if _, err := e.store.MarkDeleted(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()}, nil); err != nil {
					t.Fatal(err)
				}
				settled(t, "the worker to remove the pod", func() bool {
					_, err := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
					return err != nil
				})
				applies, removes := snapshot(e.exec)
				// The runtime has nothing of the pod now; the PLEG's list
				// still shows it as of its last relist.
				last := runningObserved(uid)
				tc.last(last)
				e.pleg.mu.Lock()
				delete(e.pleg.observed, uid)
				e.pleg.stale = []*syncpodv1.ObservedPod{last}
				e.pleg.mu.Unlock()

				e.s.housekeeping(context.Background())

				applies2, removes2 := snapshot(e.exec)
				if len(removes2) != len(removes) || len(applies2) != len(applies) {
					t.Fatalf("housekeeping acted on a pod its worker had just removed: removes %v, kills %v after the worker's",
						removes2[len(removes):], applies2[len(applies):])
				}
				if got := testutil.ToFloat64(e.s.m.orphans); got != 0 {
					t.Fatalf("%v orphans counted, want 0", got)
				}
			})
		})
	}
}

// A pod that is truly orphaned (still there on a fresh look) is removed.
func TestHousekeepingRemovesATrueOrphan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		o := runningObserved(uid)
		o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
		o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
		e.pleg.set(o) // never desired: left over from a planner that was down
		synctest.Wait()
		e.s.housekeeping(context.Background())
		_, removes := snapshot(e.exec)
		if len(removes) != 1 || !slices.Equal(removes[0].GetContainerIds(), []string{"c1"}) || !slices.Equal(removes[0].GetSandboxIds(), []string{"sb1"}) {
			t.Fatalf("removes %v, want the orphan's container and sandbox once", removes)
		}
		if f := removes[0].GetForgetPod(); f.GetUid() != uid || f.GetName() != "web" || f.GetNamespace() != "default" {
			t.Fatalf("orphan removal forgets %v, want default/web %s", f, uid)
		}
		if _, rm := volumeCalls(e.exec); len(rm) != 1 || rm[0] != uid {
			t.Fatalf("volume removals %v, want the orphan's", rm)
		}
		if nt := e.pleg.newerThans(uid); len(nt) != 1 || nt[0].IsZero() {
			t.Fatalf("housekeeping read the orphan's status %v, want once with newer_than set", nt)
		}
	})
}

// A sync that applies a change set commits its events, last actions and
// status in one store transaction: watchers see one MODIFIED carrying all
// three, not three partial writes.
func TestASyncIsOneStoreCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.exec.SetApplyAnswer(func(req *executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			return &executorv1.ApplyActionsResponse{SandboxId: "sb1", Steps: []*executorv1.StepResult{
				{Step: executorv1.Step_STEP_CREATE_SANDBOX, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Target: "sb1"},
				{Step: executorv1.Step_STEP_START_CONTAINER, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Target: "app", ContainerId: "c1"},
			}}
		})
		sub := subscribe(t, e)
		e.apply(t, webPod())
		settled(t, "an ApplyActions call", func() bool { a, _ := snapshot(e.exec); return len(a) >= 1 })
		applies, _ := snapshot(e.exec)
		commits := modified(t, sub)
		if len(commits) != len(applies) {
			t.Fatalf("%d MODIFIED events for %d syncs that applied, want one each", len(commits), len(applies))
		}
		rec := commits[0]
		if len(rec.GetEvents()) == 0 || rec.GetLastActions() == nil || rec.GetStatus() == nil {
			t.Errorf("the sync's commit lacks a part: events %d, last actions %v, status %v", len(rec.GetEvents()), rec.GetLastActions(), rec.GetStatus())
		}
	})
}

// TestActiveDeadlineFailsAndKillsThePodAtTheDeadline: a running pod with
// activeDeadlineSeconds is woken at its deadline, fails with
// DeadlineExceeded (status and a Normal event, as the kubelet) and is
// killed.
func TestActiveDeadlineFailsAndKillsThePodAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		p := webPod()
		d := int64(60)
		p.Spec.ActiveDeadlineSeconds = &d
		e.pleg.set(runningObserved(uid))
		e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
			return &executorv1.ApplyActionsResponse{}
		})
		began := time.Now()
		pod := e.apply(t, p)
		settled(t, "a wake-up at the deadline", func() bool {
			return e.s.workers.NextWake(pod.GetUid()).Equal(began.Add(60 * time.Second))
		})
		applies, _ := snapshot(e.exec)
		if len(applies) != 0 {
			t.Fatalf("applies before the deadline: %v", applies)
		}
		time.Sleep(61 * time.Second)
		settled(t, "Failed with DeadlineExceeded", func() bool {
			rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
			st := rec.GetStatus()
			return st.GetPhase() == syncpodv1.PodPhase_POD_PHASE_FAILED && st.GetReason() == "DeadlineExceeded"
		})
		applies, _ = snapshot(e.exec)
		if len(applies) == 0 || !applies[0].GetActions().GetKillPod() ||
			applies[0].GetActions().GetMessage() != "Pod was active on the node longer than the specified deadline" {
			t.Fatalf("applies %v, want a kill of the pod past its deadline", applies)
		}
		rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: pod.GetUid()})
		n := 0
		for _, ev := range rec.GetEvents() {
			if ev.GetReason() == "DeadlineExceeded" {
				n += int(ev.GetCount())
			}
		}
		if n != 1 {
			t.Errorf("%d DeadlineExceeded events, want 1: %v", n, rec.GetEvents())
		}
	})
}

// TestAnExecutorCallThatDidSomethingAsksAheadForTheNextStatus_R13_7:
// once an executor call did something, the syncer asks the PLEG at once
// for a status newer than that call, as the kubelet requests a pod relist
// in the postSync of a SyncPod with results. A call that changed the
// runtime waits for it and stores it (see statusafter_test.go); one whose
// steps all failed asks ahead, without waiting, so the relist runs while
// the sync writes its status rather than when the next sync asks. A call
// that did nothing asks nothing more.
func TestAnExecutorCallThatDidSomethingAsksAheadForTheNextStatus_R13_7(t *testing.T) {
	for _, outcome := range []executorv1.Outcome{executorv1.Outcome_OUTCOME_UNSPECIFIED, executorv1.Outcome_OUTCOME_SUCCEEDED, executorv1.Outcome_OUTCOME_FAILED} {
		did := outcome != executorv1.Outcome_OUTCOME_UNSPECIFIED
		t.Run(outcome.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				// The syncer's start settles first: connecting to the PLEG
				// resyncs every stored pod, which for a pod applied
				// meanwhile would be a second executor call.
				synctest.Wait()
				e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
					resp := &executorv1.ApplyActionsResponse{}
					if did {
						resp.Steps = []*executorv1.StepResult{{Step: executorv1.Step_STEP_CREATE_SANDBOX, Outcome: outcome}}
					}
					return resp
				})
				pod := e.apply(t, webPod())
				settled(t, "one executor call", func() bool { applies, _ := snapshot(e.exec); return len(applies) == 1 })
				e.s.mu.Lock()
				done, ok := e.s.lastSync[pod.GetUid()]
				e.s.mu.Unlock()
				if !ok {
					t.Fatal("no executor call recorded")
				}
				nt := e.pleg.newerThans(pod.GetUid())
				want := 1
				if did {
					want = 2
				}
				if len(nt) != want {
					t.Fatalf("%d status requests (newer_than %v), want %d", len(nt), nt, want)
				}
				if did && !nt[1].Equal(done) {
					t.Errorf("asked ahead for a status newer than %v, want the end of the executor call, %v", nt[1], done)
				}
			})
		})
	}
}
