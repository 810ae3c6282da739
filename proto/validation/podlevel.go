package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/syncpod/syncpod/proto/podresources"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// podResources checks spec.resources as the API server does:
// quantities, a limit not below its request, not on a windows pod, a
// pod-level request (as defaulted) at least the containers' aggregate
// request and at most the pod-level limit, and no regular container
// limiting a resource above the pod-level limit.
func (l *list) podResources(s *syncpodv1.PodSpec) {
	r := s.GetResources()
	if r == nil {
		return
	}
	if s.GetOs().GetName() == "windows" {
		l.Add("spec.resources", "may not be set for a windows pod")
		return
	}
	before := l.Len()
	l.resources("spec.resources", r)
	if l.Len() != before {
		return // the arithmetic below needs quantities that parse
	}
	pod := &syncpodv1.Pod{Spec: s}
	set := podresources.Parse(r.GetRequests())
	lim := podresources.Parse(r.GetLimits())
	agg := podresources.ContainerRequests(pod)
	eff := podresources.PodLevel(pod)
	cpu := func(m int64) string { return resource.NewMilliQuantity(m, resource.DecimalSI).String() }
	mem := func(b int64) string { return resource.NewQuantity(b, resource.BinarySI).String() }
	if set.HasCPU && agg.HasCPU && agg.MilliCPU > set.MilliCPU {
		l.Add("spec.resources.requests.cpu", "%s must be greater than or equal to the containers' aggregate request of %s", r.GetRequests().GetCpu(), cpu(agg.MilliCPU))
	}
	if set.HasMemory && agg.HasMemory && agg.Memory > set.Memory {
		l.Add("spec.resources.requests.memory", "%s must be greater than or equal to the containers' aggregate request of %s", r.GetRequests().GetMemory(), mem(agg.Memory))
	}
	if !set.HasCPU && lim.HasCPU && eff.Requests.HasCPU && eff.Requests.MilliCPU > lim.MilliCPU {
		l.Add("spec.resources.requests.cpu", "unset, so the containers' aggregate request of %s, which must be less than or equal to the pod-level limit of %s", cpu(eff.Requests.MilliCPU), r.GetLimits().GetCpu())
	}
	if !set.HasMemory && lim.HasMemory && eff.Requests.HasMemory && eff.Requests.Memory > lim.Memory {
		l.Add("spec.resources.requests.memory", "unset, so the containers' aggregate request of %s, which must be less than or equal to the pod-level limit of %s", mem(eff.Requests.Memory), r.GetLimits().GetMemory())
	}
	for i, c := range s.GetContainers() {
		cl := podresources.Parse(c.GetResources().GetLimits())
		path := fmt.Sprintf("spec.containers[%d].resources.limits", i)
		if lim.HasCPU && cl.HasCPU && cl.MilliCPU > lim.MilliCPU {
			l.Add(path+".cpu", "%s must be less than or equal to the pod-level limit of %s", c.GetResources().GetLimits().GetCpu(), r.GetLimits().GetCpu())
		}
		if lim.HasMemory && cl.HasMemory && cl.Memory > lim.Memory {
			l.Add(path+".memory", "%s must be less than or equal to the pod-level limit of %s", c.GetResources().GetLimits().GetMemory(), r.GetLimits().GetMemory())
		}
	}
}
