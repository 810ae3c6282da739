package observe

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
)

// TestContainerKeepsTheRuntimesResources: the Linux resources the
// runtime reports for a container are what a resize is compared with;
// none reported, none observed.
func TestContainerKeepsTheRuntimesResources(t *testing.T) {
	c := &runtimeapi.ContainerStatus{Id: "c1", Resources: &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{
		CpuShares: 512, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 64 << 20, OomScoreAdj: 999}}}
	r := Container(c, "sb").GetResources()
	if r.GetCpuShares() != 512 || r.GetCpuQuota() != 50000 || r.GetCpuPeriod() != 100000 || r.GetMemoryLimitBytes() != 64<<20 {
		t.Errorf("observed resources %v", r)
	}
	if got := Container(&runtimeapi.ContainerStatus{Id: "c2"}, "sb").GetResources(); got != nil {
		t.Errorf("a runtime that reports none: %v, want nil", got)
	}
}

// TestContainerKeepsTheMemoryRequestItWasCreatedWith: the memory
// request comes from the container's annotation; none, or garbage, is
// unknown.
func TestContainerKeepsTheMemoryRequestItWasCreatedWith(t *testing.T) {
	for ann, want := range map[string]int64{"67108864": 64 << 20, "0": 0, "": -1, "lots": -1} {
		c := &runtimeapi.ContainerStatus{Id: "c1"}
		if ann != "" {
			c.Annotations = map[string]string{crilabels.MemoryRequest: ann}
		}
		got := Container(c, "sb").MemoryRequestBytes
		switch {
		case want < 0 && got != nil:
			t.Errorf("annotation %q: %d, want unknown", ann, *got)
		case want >= 0 && (got == nil || *got != want):
			t.Errorf("annotation %q: %v, want %d", ann, got, want)
		}
	}
}
