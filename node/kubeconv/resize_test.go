package kubeconv

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestResizePolicyGoesBothWays: a container's resizePolicy reaches
// the planner and comes back as the API server holds it.
func TestResizePolicyGoesBothWays(t *testing.T) {
	kp := kubeconvtest.APIPod()
	kp.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
	}
	p, _, err := PodFromAPI(kp)
	if err != nil {
		t.Fatal(err)
	}
	got := p.GetSpec().GetContainers()[0].GetResizePolicy()
	if len(got) != 2 || got[1].GetResourceName() != "memory" ||
		got[1].GetRestartPolicy() != syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER {
		t.Fatalf("resizePolicy converted to %v", got)
	}
	back := PodToAPI(&plannerv1.PodRecord{Pod: p}).Spec.Containers[0].ResizePolicy
	if len(back) != 2 || back[0] != kp.Spec.Containers[0].ResizePolicy[0] || back[1] != kp.Spec.Containers[0].ResizePolicy[1] {
		t.Errorf("rendered back: %+v", back)
	}
	bad := kubeconvtest.APIPod()
	bad.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: "Sometimes"}}
	if _, _, err := PodFromAPI(bad); err == nil {
		t.Error("an unknown resize restart policy was accepted")
	}
}

// TestStatusToAPIReportsResizes: status resources, allocated
// resources and the resize conditions, which the node owns.
func TestStatusToAPIReportsResizes(t *testing.T) {
	st := &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
		Conditions: []*syncpodv1.PodCondition{{Type: "PodResizeInProgress", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE}},
		ContainerStatuses: []*syncpodv1.ContainerStatus{{Name: "app",
			Resources:          &syncpodv1.ResourceRequirements{Requests: &syncpodv1.ResourceList{Cpu: "500m"}, Limits: &syncpodv1.ResourceList{Memory: "64Mi"}},
			AllocatedResources: &syncpodv1.ResourceList{Cpu: "1"}}}}
	kp := kubeconvtest.APIPod()
	kp.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: "Deferred"}}
	out := StatusToAPI(st, kp, "", 3)
	cs := out.ContainerStatuses[0]
	if cs.Resources == nil || !cs.Resources.Requests.Cpu().Equal(resource.MustParse("500m")) || !cs.Resources.Limits.Memory().Equal(resource.MustParse("64Mi")) ||
		cs.Resources.Limits.Cpu().Value() != 0 {
		t.Errorf("resources %+v", cs.Resources)
	}
	if !cs.AllocatedResources.Cpu().Equal(resource.MustParse("1")) || len(cs.AllocatedResources) != 1 {
		t.Errorf("allocatedResources %+v", cs.AllocatedResources)
	}
	var types []string
	for _, c := range out.Conditions {
		types = append(types, string(c.Type))
		if c.Type == corev1.PodResizeInProgress && c.ObservedGeneration != 3 {
			t.Errorf("PodResizeInProgress observedGeneration %d, want 3", c.ObservedGeneration)
		}
	}
	for _, typ := range types {
		if typ == string(corev1.PodResizePending) {
			t.Errorf("the API server's PodResizePending was kept beside the node's conditions: %v", types)
		}
	}
}
