package status

import (
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The kubelet's active-deadline reason and message.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// Deadline is when pod's active_deadline_seconds runs out, counted from
// the status's start time; false when the pod sets none or has no start
// time yet.
func Deadline(pod *syncpodv1.Pod, st *syncpodv1.PodStatus) (time.Time, bool) {
	d := pod.GetSpec().ActiveDeadlineSeconds
	if d == nil || st.GetStartTime() == nil {
		return time.Time{}, false
	}
	return st.GetStartTime().AsTime().Add(time.Duration(*d) * time.Second), true
}

// applyDeadline fails a pod that is past its active deadline, as the
// kubelet's activeDeadlineHandler does (phase Failed, reason
// DeadlineExceeded); a pod that already failed so keeps that reason.
func applyDeadline(pod *syncpodv1.Pod, prev, st *syncpodv1.PodStatus, now time.Time) {
	if prev.GetReason() == ReasonDeadlineExceeded && prev.GetPhase() == syncpodv1.PodPhase_POD_PHASE_FAILED &&
		prev.GetObservedGeneration() == pod.GetGeneration() {
		st.Phase, st.Reason, st.Message = syncpodv1.PodPhase_POD_PHASE_FAILED, ReasonDeadlineExceeded, MessageDeadlineExceeded
		return
	}
	if isTerminal(st.GetPhase()) {
		return
	}
	if at, ok := Deadline(pod, st); ok && !now.Before(at) {
		st.Phase, st.Reason, st.Message = syncpodv1.PodPhase_POD_PHASE_FAILED, ReasonDeadlineExceeded, MessageDeadlineExceeded
	}
}
