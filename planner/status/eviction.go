package status

import syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

// ReasonEvicted is the kubelet eviction manager's pod reason.
const ReasonEvicted = "Evicted"

// EmptyDirOverLimitMessage is the kubelet's message for a pod evicted
// because emptyDir volume name uses more than its sizeLimit.
func EmptyDirOverLimitMessage(name, limit string) string {
	return "Usage of EmptyDir volume \"" + name + "\" exceeds the limit \"" + limit + "\". "
}

// applyEviction fails an evicted pod (phase Failed, reason Evicted, the
// eviction's message), as the kubelet's eviction manager does; a pod that
// was already evicted (same generation) stays so, with its message. A pod
// that finished before its eviction keeps its own phase.
func applyEviction(pod *syncpodv1.Pod, prev, st *syncpodv1.PodStatus, evicted string) {
	if prev.GetReason() == ReasonEvicted && prev.GetPhase() == syncpodv1.PodPhase_POD_PHASE_FAILED &&
		prev.GetObservedGeneration() == pod.GetGeneration() {
		st.Phase, st.Reason, st.Message = syncpodv1.PodPhase_POD_PHASE_FAILED, ReasonEvicted, prev.GetMessage()
		return
	}
	if evicted == "" || isTerminal(st.GetPhase()) {
		return
	}
	st.Phase, st.Reason, st.Message = syncpodv1.PodPhase_POD_PHASE_FAILED, ReasonEvicted, evicted
}
