package status

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestActiveDeadline: a pod past active_deadline_seconds (from its start
// time) is Failed with the kubelet's DeadlineExceeded reason and message,
// not a moment before; the failure sticks for the same generation.
func TestActiveDeadline(t *testing.T) {
	pod := mkPod(nil, []*syncpodv1.Container{ctr("web")})
	d := int64(30)
	pod.Spec.ActiveDeadlineSeconds = &d
	obs := observed(inst("web", 1, running, 0, 0))
	prev := &syncpodv1.PodStatus{StartTime: timestamppb.New(t0)}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	before := Compute(Input{Pod: pod, Observed: obs, Previous: prev, Now: at(29)})
	if before.GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING || before.GetReason() != "" {
		t.Fatalf("at 29 s: %v %q", before.GetPhase(), before.GetReason())
	}
	if dl, ok := Deadline(pod, before); !ok || !dl.Equal(at(30)) {
		t.Errorf("Deadline = %v %v, want %v", dl, ok, at(30))
	}
	after := Compute(Input{Pod: pod, Observed: obs, Previous: before, Now: at(30)})
	if after.GetPhase() != syncpodv1.PodPhase_POD_PHASE_FAILED || after.GetReason() != ReasonDeadlineExceeded ||
		after.GetMessage() != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("at 30 s: %v %q %q", after.GetPhase(), after.GetReason(), after.GetMessage())
	}
	// Containers stopped afterwards do not turn it into anything else.
	later := Compute(Input{Pod: pod, Observed: observed(inst("web", 1, exited, 0, 0)), Previous: after, Now: at(40)})
	if later.GetPhase() != syncpodv1.PodPhase_POD_PHASE_FAILED || later.GetReason() != ReasonDeadlineExceeded {
		t.Errorf("later: %v %q", later.GetPhase(), later.GetReason())
	}
	// Without a deadline nothing changes.
	pod.Spec.ActiveDeadlineSeconds = nil
	if st := Compute(Input{Pod: pod, Observed: obs, Previous: prev, Now: at(3600)}); st.GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING {
		t.Errorf("no deadline: %v", st.GetPhase())
	}
	if _, ok := Deadline(pod, prev); ok {
		t.Error("Deadline without active_deadline_seconds")
	}
}
