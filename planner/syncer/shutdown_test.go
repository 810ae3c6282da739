package syncer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	"github.com/syncpod/syncpod/planner/store"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// shutdownPods are three running pods of three priorities (and a pod
// with restart policy Never among the regular ones).
var shutdownPods = []struct {
	uid, name string
	prio      *int32
	never     bool
}{
	{"11111111-1111-4111-8111-111111111111", "critical", new(nodeshutdown.SystemCriticalPriority), false},
	{"22222222-2222-4222-8222-222222222222", "high", new(int32(100000)), false},
	{"33333333-3333-4333-8333-333333333333", "regular", nil, false},
	{"44444444-4444-4444-8444-444444444444", "once", nil, true},
}

var threePeriods = nodeshutdown.Config{ByPriority: []nodeshutdown.Period{
	{Priority: 0, GracePeriodSeconds: 20}, {Priority: 100000, GracePeriodSeconds: 10},
	{Priority: nodeshutdown.SystemCriticalPriority, GracePeriodSeconds: 5}}}

// killLog records the pod kills the fake executor got, in order, and
// stops the pod in the fake PLEG unless it is told to hang.
type killLog struct {
	mu    sync.Mutex
	kills []string // "name grace"
	hang  map[string]bool
}

func (k *killLog) names() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.kills)
}

func shutdownEnv(t *testing.T, path string, kl *killLog) *env {
	t.Helper()
	e := newEnvAt(t, path, func(o *Options) { o.Shutdown = threePeriods })
	e.exec.SetApplyAnswer(func(req *executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
		p := req.GetPod()
		if !req.GetActions().GetKillPod() || req.GetActions().GetCreateSandbox() {
			// A (re)start: the pod runs.
			o := runningObserved(p.GetUid())
			o.Name = p.GetName()
			o.Sandboxes[0].Id, o.Containers[0].Id, o.Containers[0].SandboxId = "sb2", "c2", "sb2"
			e.pleg.set(o)
			return &executorv1.ApplyActionsResponse{SandboxId: "sb2", Steps: []*executorv1.StepResult{
				{Step: executorv1.Step_STEP_CREATE_SANDBOX, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Target: "sb2"},
				{Step: executorv1.Step_STEP_START_CONTAINER, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Target: "app", ContainerId: "c2"}}}
		}
		kl.mu.Lock()
		kl.kills = append(kl.kills, p.GetName()+" "+itoa(req.GetActions().GetKillGracePeriodOverrideSeconds()))
		hang := kl.hang[p.GetName()]
		kl.mu.Unlock()
		if !hang {
			o := runningObserved(p.GetUid())
			o.Name = p.GetName()
			o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
			o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
			o.Containers[0].ExitCode = 137
			e.pleg.set(o)
			e.pleg.events <- &plegv1.PodLifecycleEvent{PodUid: p.GetUid(), Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED}
		}
		return &executorv1.ApplyActionsResponse{Steps: []*executorv1.StepResult{
			{Step: executorv1.Step_STEP_KILL_POD, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED}}}
	})
	return e
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

func applyShutdownPods(t *testing.T, e *env) {
	t.Helper()
	for _, sp := range shutdownPods {
		p := webPod()
		p.Uid, p.Name, p.Spec.Priority = sp.uid, sp.name, sp.prio
		p.Spec.TerminationGracePeriodSeconds = new(int64(30))
		if sp.never {
			p.Spec.RestartPolicy = syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
		}
		o := runningObserved(sp.uid)
		o.Name = sp.name
		e.pleg.set(o)
		e.apply(t, p)
	}
	settled(t, "every pod running", func() bool {
		recs, _ := e.store.List(context.Background(), store.Filter{})
		for _, r := range recs {
			if r.GetStatus().GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING {
				return false
			}
		}
		return len(recs) == len(shutdownPods)
	})
}

// a shutdown ends the pods lowest priority first,
// each group with its budget as the kill's grace, each pod Failed with
// reason Terminated; admission stays closed; the state is stored.
func TestShutdownEndsPodsByPriorityWithinBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kl := &killLog{}
		e := shutdownEnv(t, "", kl)
		applyShutdownPods(t, e)
		if !e.s.Admitting() || e.s.ShutdownState() != nil {
			t.Fatal("admission closed, or a shutdown state, before any shutdown")
		}
		st, err := e.s.Shutdown(context.Background(), "api")
		if err != nil {
			t.Fatal(err)
		}
		// Within a group the kills go out together, in no set order.
		want := []string{"once 20", "regular 20", "high 10", "critical 5"}
		got := kl.names()
		if len(got) == len(want) {
			slices.Sort(got[:2])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("kills %q, want %q", got, want)
		}
		if st.GetPhase() != plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE || len(st.GetGroups()) != 3 || st.GetTrigger() != "api" {
			t.Fatalf("state %v, want DONE with three groups", st)
		}
		for _, g := range st.GetGroups() {
			if g.GetTimedOut() || g.GetEndedAt().AsTime().Sub(g.GetStartedAt().AsTime()) > time.Duration(g.GetGracePeriodSeconds())*time.Second {
				t.Errorf("group %d took longer than its budget: %v", g.GetPriority(), g)
			}
		}
		if e.s.Admitting() {
			t.Fatal("admitting during the shutdown")
		}
		for _, sp := range shutdownPods {
			rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: sp.uid})
			if s := rec.GetStatus(); s.GetPhase() != syncpodv1.PodPhase_POD_PHASE_FAILED || s.GetReason() != nodeshutdown.Reason || s.GetMessage() != nodeshutdown.Message {
				t.Errorf("%s: status %v %q %q, want Failed Terminated", sp.name, s.GetPhase(), s.GetReason(), s.GetMessage())
			}
		}
		// Asked again: the same shutdown, nothing killed again.
		again, err := e.s.Shutdown(context.Background(), "api")
		if err != nil || len(again.GetGroups()) != 3 || len(kl.names()) != len(want) {
			t.Fatalf("a second Shutdown: %v, %d groups, kills %q", err, len(again.GetGroups()), kl.names())
		}
		stored, err := e.store.NodeShutdown(context.Background())
		if err != nil || stored.GetPhase() != plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE {
			t.Fatalf("stored shutdown %v, %v", stored, err)
		}
		// Syncs go on: nothing is started again.
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		a, _ := snapshot(e.exec)
		for _, req := range a {
			if !req.GetActions().GetKillPod() {
				t.Fatalf("a change set other than a kill after the shutdown: %v", req.GetActions())
			}
		}
		if st.GetCancelled() {
			t.Fatal("cancelled before any cancel")
		}
		start, end := testutil.ToFloat64(e.s.m.shutdownStart), testutil.ToFloat64(e.s.m.shutdownEnd)
		if want := float64(st.GetEndedAt().AsTime().UnixNano()) / 1e9; end != want || start <= 0 || start > end {
			t.Fatalf("shutdown time gauges start %v end %v, want end %v after start", start, end, want)
		}
		// a cancel admits again; the ended pods stay so.
		cancelled, err := e.s.CancelShutdown(context.Background())
		if err != nil || !e.s.Admitting() || !cancelled.GetCancelled() {
			t.Fatalf("cancel: %v, admitting %v, state %v", err, e.s.Admitting(), cancelled)
		}
		if stored, _ := e.store.NodeShutdown(context.Background()); !stored.GetCancelled() {
			t.Fatalf("stored after the cancel: %v", stored)
		}
	})
}

// a group whose pod does not stop is given up on at its budget,
// and the next group goes on.
func TestShutdownGroupTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kl := &killLog{hang: map[string]bool{"high": true}}
		e := shutdownEnv(t, "", kl)
		applyShutdownPods(t, e)
		start := time.Now()
		st, err := e.s.Shutdown(context.Background(), "api")
		if err != nil {
			t.Fatal(err)
		}
		g := st.GetGroups()[1]
		if !g.GetTimedOut() || st.GetGroups()[0].GetTimedOut() || st.GetGroups()[2].GetTimedOut() {
			t.Fatalf("groups %v, want only the middle one timed out", st.GetGroups())
		}
		if took := g.GetEndedAt().AsTime().Sub(g.GetStartedAt().AsTime()); took != 10*time.Second {
			t.Fatalf("the hanging group took %v, want its budget, 10s", took)
		}
		if got := kl.names(); got[len(got)-1] != "critical 5" {
			t.Fatalf("kills %q, want the critical pod last", got)
		}
		if took := time.Since(start); took > nodeshutdown.Total(threePeriods.Periods()) {
			t.Fatalf("the shutdown took %v, over its total budget", took)
		}
	})
}

func TestShutdownOffIsFailedPrecondition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		_, err := e.s.Shutdown(context.Background(), "api")
		if !errors.Is(err, errgrpc.ErrFailedPrecondition) {
			t.Fatalf("Shutdown with no configuration: %v, want FailedPrecondition", err)
		}
	})
}

// a planner that starts on a stored shutdown restarts the pods
// it ended per their restart policy, once, before syncing anything.
func TestAfterAShutdownPodsRestartPerPolicy(t *testing.T) {
	path := t.TempDir() + "/p.db"
	synctest.Test(t, func(t *testing.T) {
		kl := &killLog{}
		e := shutdownEnv(t, path, kl)
		applyShutdownPods(t, e)
		if _, err := e.s.Shutdown(context.Background(), "logind"); err != nil {
			t.Fatal(err)
		}
		e.stop()
	})
	synctest.Test(t, func(t *testing.T) {
		kl := &killLog{}
		e := shutdownEnv(t, path, kl)
		// The machine came back: nothing runs.
		for _, sp := range shutdownPods {
			o := runningObserved(sp.uid)
			o.Name = sp.name
			o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
			o.Containers[0].State = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
			o.Containers[0].ExitCode = 137
			e.pleg.set(o)
		}
		settled(t, "the shutdown cleared", func() bool {
			st, err := e.store.NodeShutdown(context.Background())
			return err == nil && st == nil
		})
		synctest.Wait()
		starts := map[string]int{}
		a, _ := snapshot(e.exec)
		for _, req := range a {
			if req.GetActions().GetCreateSandbox() {
				starts[req.GetPod().GetName()]++
			}
		}
		for _, sp := range shutdownPods {
			want := 1
			if sp.never {
				want = 0
			}
			if starts[sp.name] != want {
				t.Errorf("%s: started %d times, want %d (all starts: %v)", sp.name, starts[sp.name], want, starts)
			}
		}
		rec, _ := e.store.Get(context.Background(), &plannerv1.PodRef{Uid: shutdownPods[3].uid})
		if rec.GetStatus().GetReason() != nodeshutdown.Reason || rec.GetStatus().GetPhase() != syncpodv1.PodPhase_POD_PHASE_FAILED {
			t.Errorf("the Never pod: %v, want it to stay Failed Terminated", rec.GetStatus())
		}
	})
}
