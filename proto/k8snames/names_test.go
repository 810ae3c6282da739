package k8snames

import (
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestNamesAreKubernetes: every value is spelled as k8s.io/api/core/v1
// spells it (the proto module does not import it, so literally here),
// and unspecified values take the documented default.
func TestNamesAreKubernetes(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{RestartPolicy(syncpodv1.RestartPolicy_RESTART_POLICY_UNSPECIFIED), "Always"},
		{RestartPolicy(syncpodv1.RestartPolicy_RESTART_POLICY_ALWAYS), "Always"},
		{RestartPolicy(syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE), "OnFailure"},
		{RestartPolicy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER), "Never"},
		{ContainerRestartPolicy(syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_UNSPECIFIED), ""},
		{ContainerRestartPolicy(syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS), "Always"},
		{ContainerRestartPolicy(syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ON_FAILURE), "OnFailure"},
		{ContainerRestartPolicy(syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER), "Never"},
		{PodPhase(syncpodv1.PodPhase_POD_PHASE_UNSPECIFIED), ""},
		{PodPhase(syncpodv1.PodPhase_POD_PHASE_PENDING), "Pending"},
		{PodPhase(syncpodv1.PodPhase_POD_PHASE_RUNNING), "Running"},
		{PodPhase(syncpodv1.PodPhase_POD_PHASE_SUCCEEDED), "Succeeded"},
		{PodPhase(syncpodv1.PodPhase_POD_PHASE_FAILED), "Failed"},
		{PodPhase(syncpodv1.PodPhase_POD_PHASE_UNKNOWN), "Unknown"},
		{ConditionStatus(syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE), "True"},
		{ConditionStatus(syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE), "False"},
		{ConditionStatus(syncpodv1.ConditionStatus_CONDITION_STATUS_UNSPECIFIED), "Unknown"},
		{EventType(syncpodv1.EventType_EVENT_TYPE_WARNING), "Warning"},
		{EventType(syncpodv1.EventType_EVENT_TYPE_NORMAL), "Normal"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
