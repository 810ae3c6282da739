package k8snames

import syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

// RestartPolicy names a pod restart policy; unspecified (and unknown) is
// "Always", the kubelet's default.
func RestartPolicy(p syncpodv1.RestartPolicy) string {
	switch p {
	case syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE:
		return "OnFailure"
	case syncpodv1.RestartPolicy_RESTART_POLICY_NEVER:
		return "Never"
	default:
		return "Always"
	}
}

// ContainerRestartPolicy names a container's own restart policy; "" when
// it sets none (unspecified or unknown).
func ContainerRestartPolicy(p syncpodv1.ContainerRestartPolicy) string {
	switch p {
	case syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS:
		return "Always"
	case syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ON_FAILURE:
		return "OnFailure"
	case syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER:
		return "Never"
	default:
		return ""
	}
}

// PodPhase names a pod phase; "" when unspecified (or unknown).
func PodPhase(p syncpodv1.PodPhase) string {
	switch p {
	case syncpodv1.PodPhase_POD_PHASE_PENDING:
		return "Pending"
	case syncpodv1.PodPhase_POD_PHASE_RUNNING:
		return "Running"
	case syncpodv1.PodPhase_POD_PHASE_SUCCEEDED:
		return "Succeeded"
	case syncpodv1.PodPhase_POD_PHASE_FAILED:
		return "Failed"
	case syncpodv1.PodPhase_POD_PHASE_UNKNOWN:
		return "Unknown"
	default:
		return ""
	}
}

// ConditionStatus names a condition's status; anything but true or false
// is "Unknown".
func ConditionStatus(s syncpodv1.ConditionStatus) string {
	switch s {
	case syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE:
		return "True"
	case syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE:
		return "False"
	default:
		return "Unknown"
	}
}

// EventType names an event's type; anything but a warning is "Normal".
func EventType(t syncpodv1.EventType) string {
	if t == syncpodv1.EventType_EVENT_TYPE_WARNING {
		return "Warning"
	}
	return "Normal"
}
