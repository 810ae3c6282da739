package syncer

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/timeline"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// startingExecutor answers a change set as the executor does when it
// created the sandbox and started the container, and makes the fake PLEG
// see them running from then on, as the runtime would.
func startingExecutor(e *env) {
	e.exec.SetApplyAnswer(func(*executorv1.ApplyActionsRequest) *executorv1.ApplyActionsResponse {
		o := runningObserved(uid)
		now := timestamppb.Now()
		o.Sandboxes[0].CreatedAt, o.Containers[0].CreatedAt, o.Containers[0].StartedAt = now, now, now
		e.pleg.set(o)
		return &executorv1.ApplyActionsResponse{SandboxId: "sb1", Steps: []*executorv1.StepResult{
			{Step: executorv1.Step_STEP_CREATE_SANDBOX, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Target: "sb1"},
			{Step: executorv1.Step_STEP_START_CONTAINER, Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED, Target: "app", ContainerId: "c1"},
		}}
	})
}

// TestASyncThatStartedContainersStoresTheStatusReadAfterIt_R13_7: the sync
// whose executor call started the pod's container reads the status again,
// newer than the call (the PLEG relists the pod for it, R-13.7), and
// commits that, Running, with the call's events: one commit, where the
// kubelet's order stored the status from before the call and left
// Running to the next sync.
func TestASyncThatStartedContainersStoresTheStatusReadAfterIt_R13_7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		synctest.Wait() // the PLEG watch's first resync, with no pods yet
		startingExecutor(e)
		sub := subscribe(t, e)
		pod := e.apply(t, webPod())
		recs := modified(t, sub)
		if a, _ := snapshot(e.exec); len(a) != 1 {
			t.Fatalf("%d executor calls, want 1", len(a))
		}
		if len(recs) != 1 {
			t.Fatalf("%d commits after the start, want 1 (events and the status read after the call together)", len(recs))
		}
		st := recs[0].GetStatus()
		if st.GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING || len(st.GetContainerStatuses()) != 1 ||
			st.GetContainerStatuses()[0].GetState().GetRunning() == nil || st.GetContainerStatuses()[0].GetContainerId() != "c1" {
			t.Fatalf("the sync that started the container stored %v, want Running with c1 running", st)
		}
		reasons := map[string]bool{}
		for _, ev := range recs[0].GetEvents() {
			reasons[ev.GetReason()] = true
		}
		if !reasons["Started"] {
			t.Errorf("the commit's events %v lack Started", recs[0].GetEvents())
		}
		e.s.mu.Lock()
		done := e.s.lastSync[pod.GetUid()]
		e.s.mu.Unlock()
		if nt := e.pleg.newerThans(pod.GetUid()); len(nt) != 2 || !nt[1].Equal(done) {
			t.Fatalf("status reads newer than %v, want two, the second newer than the executor call's end %v", nt, done)
		}
		var stages []string
		for _, s := range e.s.Timeline().Last(pod.GetUid()).GetStages() {
			stages = append(stages, s.GetName())
		}
		if !hasInOrder(stages, timeline.StageExecutor, timeline.StageStatusAfter, timeline.StageStatusWritten) {
			t.Errorf("the sync's stages %v, want %s, then %s, then %s", stages,
				timeline.StageExecutor, timeline.StageStatusAfter, timeline.StageStatusWritten)
		}
		// The PLEG's event for the start triggers the next sync: it finds
		// the stored status current and commits nothing.
		e.pleg.events <- &plegv1.PodLifecycleEvent{PodUid: pod.GetUid(), Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED}
		if recs := modified(t, sub); len(recs) != 0 {
			t.Fatalf("the start's PLEG event stored %d more records, want none: %v", len(recs), recs[0].GetStatus())
		}
		if n := e.pleg.getCount(pod.GetUid()); n != 3 {
			t.Fatalf("%d status reads, want 3 (the event's sync read one)", n)
		}
	})
}

// TestAStatusThatCannotBeReadAfterTheCallLeavesTheOneFromBefore_R13_7: when
// the status after the call cannot be read, the sync still commits its
// events with the status it planned from (nothing fails, nothing is
// retried), and the next sync stores the newer one.
func TestAStatusThatCannotBeReadAfterTheCallLeavesTheOneFromBefore_R13_7(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		synctest.Wait()
		startingExecutor(e)
		// Every read for a status newer than the start of the pod's first
		// sync fails: the one after the executor call.
		down := errors.New("PLEG unavailable")
		time.Sleep(time.Second)
		firstSync := time.Now()
		e.pleg.mu.Lock()
		e.pleg.fail = func(req *plegv1.GetPodStatusRequest) error {
			if !req.GetNewerThan().AsTime().Before(firstSync) {
				return down
			}
			return nil
		}
		e.pleg.mu.Unlock()
		sub := subscribe(t, e)
		pod := e.apply(t, webPod())
		recs := modified(t, sub)
		if len(recs) != 1 {
			a, _ := snapshot(e.exec)
			t.Fatalf("%d commits, want 1 (%d executor calls, status reads newer than %v)", len(recs), len(a), e.pleg.newerThans(pod.GetUid()))
		}
		if st := recs[0].GetStatus(); st.GetPhase() != syncpodv1.PodPhase_POD_PHASE_PENDING || len(recs[0].GetEvents()) == 0 {
			t.Fatalf("stored %v with %d events, want the status from before the call (Pending) and the call's events", st, len(recs[0].GetEvents()))
		}
		if a, _ := snapshot(e.exec); len(a) != 1 {
			t.Fatalf("%d executor calls, want 1: a status that could not be read must not fail the sync", len(a))
		}
		e.pleg.mu.Lock()
		e.pleg.fail = nil
		e.pleg.mu.Unlock()
		e.pleg.events <- &plegv1.PodLifecycleEvent{PodUid: pod.GetUid(), Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED}
		recs = modified(t, sub)
		if len(recs) != 1 || recs[0].GetStatus().GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING {
			t.Fatalf("after the PLEG recovered, commits %v, want one, Running", recs)
		}
	})
}

// hasInOrder reports whether want appear in got in that order.
func hasInOrder(got []string, want ...string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
