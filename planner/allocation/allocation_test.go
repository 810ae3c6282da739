package allocation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/allocation"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func c(name, cpu, mem string, sidecar bool) *syncpodv1.Container {
	ctr := &syncpodv1.Container{Name: name, Resources: &syncpodv1.ResourceRequirements{Requests: &syncpodv1.ResourceList{Cpu: cpu, Memory: mem}}}
	if sidecar {
		ctr.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	}
	return ctr
}

// TestRequests: a pod's requests as the kubelet counts them.
func TestRequests(t *testing.T) {
	tests := []struct {
		name     string
		spec     *syncpodv1.PodSpec
		cpu, mem int64
	}{
		{"R-25.1 regular containers add up", &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{c("a", "100m", "1Mi", false), c("b", "1", "", false)}}, 1100, 1 << 20},
		{"R-25.1 a big init container wins", &syncpodv1.PodSpec{InitContainers: []*syncpodv1.Container{c("i", "2", "", false)},
			Containers: []*syncpodv1.Container{c("a", "1", "", false)}}, 2000, 0},
		{"R-25.1 sidecars count beside both", &syncpodv1.PodSpec{InitContainers: []*syncpodv1.Container{c("s", "500m", "", true), c("i", "1", "", false)},
			Containers: []*syncpodv1.Container{c("a", "1", "", false)}}, 1500, 0},
		{"R-25.1 limits stand in for requests, overhead adds", &syncpodv1.PodSpec{Overhead: &syncpodv1.ResourceList{Cpu: "10m"},
			Containers: []*syncpodv1.Container{{Name: "a", Resources: &syncpodv1.ResourceRequirements{Limits: &syncpodv1.ResourceList{Cpu: "200m"}}}}}, 210, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cpu, mem := allocation.Requests(&syncpodv1.Pod{Spec: tc.spec})
			if cpu != tc.cpu || mem != tc.mem {
				t.Errorf("Requests = %d, %d; want %d, %d", cpu, mem, tc.cpu, tc.mem)
			}
		})
	}
}

// TestDecide: decisions, and the pod as it runs.
func TestDecide(t *testing.T) {
	capacity := allocation.Capacity{MilliCPU: 2000, MemoryBytes: 1 << 30}
	pod := func(cpu string) *syncpodv1.Pod {
		return &syncpodv1.Pod{Generation: 2, Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{c("a", cpu, "", false)}}}
	}
	prev := allocation.Initial(pod("500m"))
	other := pod("1")
	tests := []struct {
		name       string
		pod        *syncpodv1.Pod
		wantCPU    string
		wantReason string
	}{
		{"R-25.1 unchanged (1000m is 1)", pod("0.5"), "500m", ""},
		{"R-25.1 fits", pod("1"), "1", ""},
		{"R-25.1 no room beside the others", pod("1500m"), "500m", allocation.ReasonDeferred},
		{"R-25.1 more than the node", pod("3"), "500m", allocation.ReasonInfeasible},
	}
	if allocation.NeedsRoom(pod("3"), nil) {
		t.Error("NeedsRoom true for a pod just taken")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := allocation.Decide(tc.pod, prev, []*syncpodv1.Pod{other}, capacity)
			// Where NeedsRoom says the others do not matter, Decide
			// must give the same answer without them.
			if !allocation.NeedsRoom(tc.pod, prev) {
				if alone := allocation.Decide(tc.pod, prev, nil, capacity); !proto.Equal(alone, a) {
					t.Errorf("NeedsRoom false, but Decide without the others: %v, with: %v", alone, a)
				}
			} else if tc.wantCPU == "500m" && tc.wantReason == "" {
				t.Error("NeedsRoom true for a pod asking for what it was admitted with")
			}
			if got := a.GetContainers()["a"].GetRequests().GetCpu(); got != tc.wantCPU || a.GetPendingReason() != tc.wantReason {
				t.Errorf("Decide: cpu %q reason %q (%s); want %q %q", got, a.GetPendingReason(), a.GetPendingMessage(), tc.wantCPU, tc.wantReason)
			}
			runs := allocation.Pod(tc.pod, a)
			if got := runs.GetSpec().GetContainers()[0].GetResources().GetRequests().GetCpu(); got != tc.wantCPU && !allocation.Equal(runs.GetSpec().GetContainers()[0].GetResources(), a.GetContainers()["a"]) {
				t.Errorf("the pod runs with %q, want %q", got, tc.wantCPU)
			}
			if tc.pod.GetSpec().GetContainers()[0].GetResources().GetRequests().GetCpu() == "" {
				t.Error("Pod modified its argument")
			}
		})
	}
}
