// Package podresources is the Kubernetes arithmetic of a pod's CPU and
// memory: the requests and limits a container has once the API server has
// defaulted them, the pod-level spec.resources defaulted likewise, the
// pod's total requests and limits the kubelet sizes its cgroup with
// (containers, sidecars and init containers aggregated, pod-level values
// where set, overhead on top), and the QoS class. Pure: no I/O; a
// quantity that does not parse counts as unset (validation refuses it
// before anything here runs).
package podresources

import (
	"k8s.io/apimachinery/pkg/api/resource"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// List holds CPU in millicores and memory in bytes, each with whether it
// is set (a set zero differs from an unset value in Kubernetes' sums).
type List struct {
	MilliCPU, Memory  int64
	HasCPU, HasMemory bool
}

// Parse reads a wire ResourceList.
func Parse(r *syncpodv1.ResourceList) List {
	var l List
	if q, ok := parse(r.GetCpu()); ok {
		l.MilliCPU, l.HasCPU = q.MilliValue(), true
	}
	if q, ok := parse(r.GetMemory()); ok {
		l.Memory, l.HasMemory = q.Value(), true
	}
	return l
}

func parse(s string) (resource.Quantity, bool) {
	if s == "" {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

// IsZero reports whether nothing is set.
func (l List) IsZero() bool { return !l.HasCPU && !l.HasMemory }

// add sums o into l (a resource set in either is set in the sum).
func (l *List) add(o List) {
	if o.HasCPU {
		l.MilliCPU += o.MilliCPU
		l.HasCPU = true
	}
	if o.HasMemory {
		l.Memory += o.Memory
		l.HasMemory = true
	}
}

// maxOf keeps the larger of l and o for each resource set in o.
func (l *List) maxOf(o List) {
	if o.HasCPU && (!l.HasCPU || o.MilliCPU > l.MilliCPU) {
		l.MilliCPU, l.HasCPU = o.MilliCPU, true
	}
	if o.HasMemory && (!l.HasMemory || o.Memory > l.Memory) {
		l.Memory, l.HasMemory = o.Memory, true
	}
}

// override replaces l's values with o's where o sets them.
func (l *List) override(o List) {
	if o.HasCPU {
		l.MilliCPU, l.HasCPU = o.MilliCPU, true
	}
	if o.HasMemory {
		l.Memory, l.HasMemory = o.Memory, true
	}
}

// Requirements are requests and limits.
type Requirements struct {
	Requests, Limits List
}

// Container is c's requests and limits as the API server stores them: a
// request left unset defaults to the limit of the same resource.
func Container(c *syncpodv1.Container) Requirements {
	req := Parse(c.GetResources().GetRequests())
	lim := Parse(c.GetResources().GetLimits())
	if !req.HasCPU && lim.HasCPU {
		req.MilliCPU, req.HasCPU = lim.MilliCPU, true
	}
	if !req.HasMemory && lim.HasMemory {
		req.Memory, req.HasMemory = lim.Memory, true
	}
	return Requirements{Requests: req, Limits: lim}
}

// PodLevelSet reports whether the pod sets pod-level CPU or memory
// (Kubernetes' IsPodLevelResourcesSet: those are the resources pod-level
// resources support).
func PodLevelSet(pod *syncpodv1.Pod) bool {
	r := pod.GetSpec().GetResources()
	return !Parse(r.GetRequests()).IsZero() || !Parse(r.GetLimits()).IsZero()
}

func isSidecar(c *syncpodv1.Container) bool {
	return c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
}

// aggregate is the pod's containers' sum by the kubelet's rule: regular
// containers and sidecars run together and add up; each init container
// runs with the sidecars started before it; the larger of the two wins.
func aggregate(pod *syncpodv1.Pod, pick func(Requirements) List) List {
	var sum List
	for _, c := range pod.GetSpec().GetContainers() {
		sum.add(pick(Container(c)))
	}
	var sidecars, inits List
	for _, c := range pod.GetSpec().GetInitContainers() {
		v := pick(Container(c))
		if isSidecar(c) {
			sum.add(v)
			sidecars.add(v)
			v = sidecars
		} else {
			v.add(sidecars)
		}
		inits.maxOf(v)
	}
	sum.maxOf(inits)
	return sum
}

// ContainerRequests is the containers' aggregate request (no pod-level
// values, no overhead).
func ContainerRequests(pod *syncpodv1.Pod) List {
	return aggregate(pod, func(r Requirements) List { return r.Requests })
}

// ContainerLimits is the containers' aggregate limit (no pod-level values,
// no overhead).
func ContainerLimits(pod *syncpodv1.Pod) List {
	return aggregate(pod, func(r Requirements) List { return r.Limits })
}

// PodLevel is the pod's spec.resources as the API server stores them
// a pod-level request left unset is the containers' aggregate
// request, or else the pod-level limit; a pod-level limit left unset
// where a request is set is, when every container limits that resource,
// the larger of the containers' aggregate limit and the pod-level
// request. Zero when the pod sets no pod-level CPU or memory.
func PodLevel(pod *syncpodv1.Pod) Requirements {
	if !PodLevelSet(pod) {
		return Requirements{}
	}
	r := pod.GetSpec().GetResources()
	req, lim := Parse(r.GetRequests()), Parse(r.GetLimits())
	agg := ContainerRequests(pod)
	if !req.HasCPU {
		if agg.HasCPU {
			req.MilliCPU, req.HasCPU = agg.MilliCPU, true
		} else if lim.HasCPU {
			req.MilliCPU, req.HasCPU = lim.MilliCPU, true
		}
	}
	if !req.HasMemory {
		if agg.HasMemory {
			req.Memory, req.HasMemory = agg.Memory, true
		} else if lim.HasMemory {
			req.Memory, req.HasMemory = lim.Memory, true
		}
	}
	allCPU, allMem := true, true
	for _, c := range allContainers(pod) {
		l := Parse(c.GetResources().GetLimits())
		allCPU = allCPU && l.HasCPU
		allMem = allMem && l.HasMemory
	}
	aggLim := ContainerLimits(pod)
	if req.HasCPU && !lim.HasCPU && allCPU {
		lim.MilliCPU, lim.HasCPU = max(aggLim.MilliCPU, req.MilliCPU), true
	}
	if req.HasMemory && !lim.HasMemory && allMem {
		lim.Memory, lim.HasMemory = max(aggLim.Memory, req.Memory), true
	}
	return Requirements{Requests: req, Limits: lim}
}

func allContainers(pod *syncpodv1.Pod) []*syncpodv1.Container {
	s := pod.GetSpec()
	return append(append([]*syncpodv1.Container(nil), s.GetInitContainers()...), s.GetContainers()...)
}

// Options select what the pod totals include.
type Options struct {
	// ExcludeOverhead leaves spec.overhead out (the sandbox's own
	// resources in the CRI sandbox config).
	ExcludeOverhead bool
}

// PodRequests is the kubelet's PodRequests: the containers' aggregate,
// replaced by the pod-level request where one is set, plus the overhead.
func PodRequests(pod *syncpodv1.Pod, o Options) List {
	out := ContainerRequests(pod)
	out.override(PodLevel(pod).Requests)
	if !o.ExcludeOverhead {
		out.add(Parse(pod.GetSpec().GetOverhead()))
	}
	return out
}

// PodLimits is the kubelet's PodLimits: the containers' aggregate,
// replaced by the pod-level limit where one is set, plus the overhead for
// each resource that has a non-zero limit.
func PodLimits(pod *syncpodv1.Pod, o Options) List {
	out := ContainerLimits(pod)
	out.override(PodLevel(pod).Limits)
	if !o.ExcludeOverhead {
		oh := Parse(pod.GetSpec().GetOverhead())
		if out.HasCPU && out.MilliCPU != 0 && oh.HasCPU {
			out.MilliCPU += oh.MilliCPU
		}
		if out.HasMemory && out.Memory != 0 && oh.HasMemory {
			out.Memory += oh.Memory
		}
	}
	return out
}

// LimitsDeclared reports, per resource, whether the pod's cgroup gets a
// limit for it: every container (init containers included) limits it, or
// a pod-level limit is set.
func LimitsDeclared(pod *syncpodv1.Pod) (cpu, memory bool) {
	cpu, memory = true, true
	for _, c := range allContainers(pod) {
		l := Parse(c.GetResources().GetLimits())
		cpu = cpu && l.HasCPU && l.MilliCPU != 0
		memory = memory && l.HasMemory && l.Memory != 0
	}
	if PodLevelSet(pod) {
		pl := PodLevel(pod).Limits
		cpu = cpu || pl.HasCPU && pl.MilliCPU != 0
		memory = memory || pl.HasMemory && pl.Memory != 0
	}
	return cpu, memory
}
