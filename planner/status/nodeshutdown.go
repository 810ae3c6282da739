package status

import (
	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/nodeshutdown"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// applyNodeShutdown ends a pod the node's shutdown terminates:
// phase Failed, reason Terminated and the kubelet's message. Only a pod
// whose stored status had already succeeded stays Succeeded: the kubelet
// sets the phase when it orders the kill, so containers that exit 0 on
// the kill's SIGTERM do not make the pod Succeeded. A pod the shutdown
// ended at this generation stays so.
func applyNodeShutdown(pod *syncpodv1.Pod, prev, st *syncpodv1.PodStatus, shutdown bool) {
	if prev.GetReason() == nodeshutdown.Reason && isTerminal(prev.GetPhase()) &&
		prev.GetObservedGeneration() == pod.GetGeneration() {
		st.Phase, st.Reason, st.Message = prev.GetPhase(), nodeshutdown.Reason, prev.GetMessage()
		return
	}
	if !shutdown {
		return
	}
	st.Phase = syncpodv1.PodPhase_POD_PHASE_FAILED
	if prev.GetPhase() == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED && prev.GetObservedGeneration() == pod.GetGeneration() {
		st.Phase = syncpodv1.PodPhase_POD_PHASE_SUCCEEDED
	}
	st.Reason, st.Message = nodeshutdown.Reason, nodeshutdown.Message
}

// disruptionTarget is the DisruptionTarget condition the status keeps: the
// previous one as it was (the kubelet copies it over, it is set once), or
// for a pod the node's shutdown ends or its pressure evicts
// a new one; nil when none.
func disruptionTarget(prev, st *syncpodv1.PodStatus, underPressure bool) *syncpodv1.PodCondition {
	for _, c := range prev.GetConditions() {
		if c.GetType() == nodeshutdown.DisruptionTarget {
			return proto.Clone(c).(*syncpodv1.PodCondition)
		}
	}
	if underPressure && st.GetReason() == ReasonEvicted {
		return cond(nodeshutdown.DisruptionTarget, true, nodeshutdown.TerminationByKubelet, st.GetMessage())
	}
	if st.GetReason() != nodeshutdown.Reason {
		return nil
	}
	return cond(nodeshutdown.DisruptionTarget, true, nodeshutdown.TerminationByKubelet, nodeshutdown.Message)
}
