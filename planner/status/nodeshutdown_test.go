package status

import (
	"testing"
	"time"

	"github.com/syncpod/syncpod/planner/nodeshutdown"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// the status a shutdown writes, and that it sticks.
func TestNodeShutdownStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &syncpodv1.Pod{Uid: "u", Name: "p", Generation: 1, Spec: &syncpodv1.PodSpec{
		Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox"}}}}
	running := &syncpodv1.ObservedPod{Uid: "u",
		Sandboxes:  []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY}},
		Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "app", SandboxId: "s1", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING}}}
	ended := Compute(Input{Pod: pod, Observed: running, Now: now, NodeShutdown: true})
	neverPod := &syncpodv1.Pod{Uid: "u", Name: "p", Generation: 1, Spec: &syncpodv1.PodSpec{
		RestartPolicy: syncpodv1.RestartPolicy_RESTART_POLICY_NEVER,
		Containers:    []*syncpodv1.Container{{Name: "app", Image: "busybox"}}}}
	exited0 := &syncpodv1.ObservedPod{Uid: "u",
		Sandboxes:  []*syncpodv1.ObservedSandbox{{Id: "s1", State: syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY}},
		Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "app", SandboxId: "s1", State: syncpodv1.ContainerState_CONTAINER_STATE_EXITED}}}
	if Compute(Input{Pod: neverPod, Observed: exited0, Now: now}).GetPhase() != syncpodv1.PodPhase_POD_PHASE_SUCCEEDED {
		t.Fatal("the Never pod whose container exited 0 is not Succeeded without a shutdown")
	}
	succeeded := &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_SUCCEEDED, ObservedGeneration: 1}
	for _, tc := range []struct {
		name       string
		in         Input
		wantPhase  syncpodv1.PodPhase
		wantReason string
		wantDT     bool
		wantDTTime time.Time
	}{
		{name: "not shutting down", in: Input{Pod: pod, Observed: running, Now: now},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING},
		{name: "a running pod fails", in: Input{Pod: pod, Observed: running, Now: now, NodeShutdown: true},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_FAILED, wantReason: nodeshutdown.Reason, wantDT: true, wantDTTime: now},
		{name: "a succeeded pod stays succeeded, with the reason",
			in:        Input{Pod: pod, Observed: running, Previous: succeeded, Now: now, NodeShutdown: true},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_SUCCEEDED, wantReason: nodeshutdown.Reason, wantDT: true, wantDTTime: now},
		{name: "containers that exit 0 on the kill still leave it Failed",
			in: Input{Pod: neverPod, Observed: exited0, Previous: &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING, ObservedGeneration: 1},
				Now: now, NodeShutdown: true},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_FAILED, wantReason: nodeshutdown.Reason, wantDT: true, wantDTTime: now},
		{name: "it sticks at later syncs, the condition's time too",
			in:        Input{Pod: pod, Observed: &syncpodv1.ObservedPod{Uid: "u"}, Previous: ended, Now: now.Add(time.Minute)},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_FAILED, wantReason: nodeshutdown.Reason, wantDT: true, wantDTTime: now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(tc.in)
			if st.GetPhase() != tc.wantPhase || st.GetReason() != tc.wantReason {
				t.Fatalf("phase %v reason %q, want %v %q", st.GetPhase(), st.GetReason(), tc.wantPhase, tc.wantReason)
			}
			if tc.wantReason != "" && st.GetMessage() != nodeshutdown.Message {
				t.Errorf("message %q, want %q", st.GetMessage(), nodeshutdown.Message)
			}
			var dt *syncpodv1.PodCondition
			for _, c := range st.GetConditions() {
				if c.GetType() == nodeshutdown.DisruptionTarget {
					dt = c
				}
			}
			if (dt != nil) != tc.wantDT {
				t.Fatalf("DisruptionTarget %v, want present=%v", dt, tc.wantDT)
			}
			if dt == nil {
				return
			}
			if dt.GetStatus() != syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE || dt.GetReason() != nodeshutdown.TerminationByKubelet ||
				dt.GetMessage() != nodeshutdown.Message || !dt.GetLastTransitionTime().AsTime().Equal(tc.wantDTTime) {
				t.Errorf("DisruptionTarget %v, want True TerminationByKubelet at %v", dt, tc.wantDTTime)
			}
		})
	}
}
