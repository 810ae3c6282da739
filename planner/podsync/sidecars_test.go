package podsync_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/podsync"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// deletedWithSidecar is a deleted pod whose sidecar and regular container
// both run in its ready sandbox.
func deletedWithSidecar() podsync.Input {
	at := func(s int) *timestamppb.Timestamp { return timestamppb.New(time.Unix(int64(1000+s), 0)) }
	always := syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	pod := &syncpodv1.Pod{Uid: podUID, Name: "web", Namespace: "default", DeletionTime: at(20), Spec: &syncpodv1.PodSpec{
		InitContainers: []*syncpodv1.Container{{Name: "proxy", Image: "busybox:1.36", RestartPolicy: always}},
		Containers:     []*syncpodv1.Container{{Name: "app", Image: "busybox:1.36"}},
	}}
	o := &syncpodv1.ObservedPod{Uid: podUID,
		Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, CreatedAt: at(1)}},
		Containers: []*syncpodv1.ObservedContainer{
			{Id: "proxy-1", Name: "proxy", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SandboxId: "s1", CreatedAt: at(2)},
			{Id: "app-1", Name: "app", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, SandboxId: "s1", CreatedAt: at(3)},
		},
	}
	return podsync.Input{Record: &plannerv1.PodRecord{Pod: pod}, Observed: o, Now: time.Unix(1030, 0)}
}

// the kill of a deleted pod keeps its sidecars running until their
// turn, unless the caller asks for the kubelet's way.
func TestDeletedPodKillKeepsSidecarsUnlessTheyStayDown(t *testing.T) {
	in := deletedWithSidecar()
	w := podsync.Step(in)
	keep := w.Apply.GetSidecarsToKeepRunning()
	if !w.Apply.GetKillPod() || len(keep) != 1 || keep[0].GetName() != "proxy" || keep[0].GetSpecHash() == "" {
		t.Fatalf("apply %v, want a pod kill keeping proxy running, with its spec hash", w.Apply)
	}
	in.SidecarsStayDown = true
	if w := podsync.Step(in); !w.Apply.GetKillPod() || len(w.Apply.GetSidecarsToKeepRunning()) != 0 {
		t.Errorf("with SidecarsStayDown: apply %v, want a pod kill keeping nothing running", w.Apply)
	}
}

// a sidecar that could not be started again during the kill does
// not fail the kill of a deleted pod; a failed stop still does.
func TestDeletedPodKillIsNotFailedByASidecarRestart(t *testing.T) {
	in := deletedWithSidecar()
	w := podsync.Step(in)
	restart := &executorv1.StepResult{Step: executorv1.Step_STEP_START_INIT_CONTAINER, Target: "proxy",
		Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: "CreateContainerError", Message: "no space left"}
	kill := &executorv1.StepResult{Step: executorv1.Step_STEP_KILL_POD, Target: "web", Outcome: executorv1.Outcome_OUTCOME_SUCCEEDED}
	in.Applied = &podsync.Applied{Actions: w.Apply, Result: &executorv1.ApplyActionsResponse{Steps: []*executorv1.StepResult{restart, kill}}}
	if got := podsync.Step(in); got.Err != nil {
		t.Errorf("a failed sidecar restart failed the kill: %v", got.Err)
	}
	kill.Outcome, kill.Reason = executorv1.Outcome_OUTCOME_FAILED, "KillPodError"
	if got := podsync.Step(in); got.Err == nil {
		t.Error("a failed pod kill is not an error")
	}
}
