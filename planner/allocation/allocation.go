// Package allocation is the node's side of an in-place resize (rule
// what a pod's containers were admitted with, whether a change of
// their resources fits the node now (then it is admitted), later
// ("Deferred", retried when room frees) or never ("Infeasible"), and the
// pod as it runs: its spec with the admitted resources. The kubelet's
// allocation manager (pkg/kubelet/allocation). It is pure: the store
// keeps the answer with the pod, in the transaction that stores the pod.
package allocation

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/syncpod/syncpod/proto/podresources"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Reasons of a pending resize, as the kubelet names them.
const (
	ReasonDeferred   = "Deferred"
	ReasonInfeasible = "Infeasible"
)

// Capacity is what the node offers its pods (its allocatable). A zero
// field is unbounded.
type Capacity struct {
	MilliCPU    int64
	MemoryBytes int64
}

// Initial is the allocation of a pod the node has just taken: every
// container admitted with what it asks for.
func Initial(pod *syncpodv1.Pod) *plannerv1.PodAllocation {
	return &plannerv1.PodAllocation{Containers: wanted(pod), Generation: pod.GetGeneration()}
}

// Pod is pod as it runs: a copy whose init and regular containers have
// the resources alloc admitted (the kubelet's UpdatePodFromAllocation);
// pod itself when alloc is nil or changes nothing.
func Pod(pod *syncpodv1.Pod, alloc *plannerv1.PodAllocation) *syncpodv1.Pod {
	if alloc == nil || !differs(pod, alloc) {
		return pod
	}
	out := proto.Clone(pod).(*syncpodv1.Pod)
	for _, cs := range [][]*syncpodv1.Container{out.GetSpec().GetInitContainers(), out.GetSpec().GetContainers()} {
		for _, c := range cs {
			if r, ok := alloc.GetContainers()[c.GetName()]; ok {
				c.Resources = proto.Clone(r).(*syncpodv1.ResourceRequirements)
				if isEmpty(c.Resources) {
					c.Resources = nil
				}
			}
		}
	}
	return out
}

// differs reports whether a container of pod asks for other resources
// than alloc admitted.
func differs(pod *syncpodv1.Pod, alloc *plannerv1.PodAllocation) bool {
	for _, cs := range [][]*syncpodv1.Container{pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers()} {
		for _, c := range cs {
			if r, ok := alloc.GetContainers()[c.GetName()]; ok && !Equal(r, c.GetResources()) {
				return true
			}
		}
	}
	return false
}

// Decide is the kubelet's handlePodResourcesResize for pod, whose
// previous allocation is prev (nil: a pod just taken), with others the
// other pods that hold resources on the node, as they run (Pod of their
// allocation). When pod asks for what prev admitted, nothing waits; when
// its new requests fit beside the others', they are admitted; otherwise
// prev stays and the resize waits: Infeasible when the pod alone asks for
// more than the node has, Deferred when the others are in the way (the
// kubelet's messages). A container new to the spec is admitted with what
// it asks for, one gone from it is forgotten.
func Decide(pod *syncpodv1.Pod, prev *plannerv1.PodAllocation, others []*syncpodv1.Pod, capacity Capacity) *plannerv1.PodAllocation {
	if prev == nil {
		return Initial(pod)
	}
	next, want := carried(pod, prev)
	if !differs(pod, next) {
		next.Generation = pod.GetGeneration()
		return next
	}
	reason, msg := fit(pod, others, capacity)
	if reason == "" {
		next.Containers = want
		next.Generation = pod.GetGeneration()
		return next
	}
	next.PendingReason, next.PendingMessage, next.PendingGeneration = reason, msg, pod.GetGeneration()
	return next
}

// NeedsRoom reports whether Decide's answer for pod and prev depends on
// the other pods: only a change of resources is weighed against them, so
// a caller may leave others nil when this is false.
func NeedsRoom(pod *syncpodv1.Pod, prev *plannerv1.PodAllocation) bool {
	if prev == nil {
		return false
	}
	next, _ := carried(pod, prev)
	return differs(pod, next)
}

// carried is pod's allocation before a resize is decided: each container
// prev admitted keeps what it had, one new to the spec has what it asks
// for (want, also returned).
func carried(pod *syncpodv1.Pod, prev *plannerv1.PodAllocation) (next *plannerv1.PodAllocation, want map[string]*syncpodv1.ResourceRequirements) {
	next = &plannerv1.PodAllocation{Containers: map[string]*syncpodv1.ResourceRequirements{}, Generation: prev.GetGeneration()}
	want = wanted(pod)
	for name, r := range want {
		if old, ok := prev.GetContainers()[name]; ok {
			next.Containers[name] = old
		} else {
			next.Containers[name] = r
		}
	}
	return next, want
}

// fit is the resource part of the kubelet's admission of a resize
// (lifecycle's predicate, the scheduler's fitsRequest): CPU then memory,
// the first that does not fit is the answer.
func fit(pod *syncpodv1.Pod, others []*syncpodv1.Pod, capacity Capacity) (reason, msg string) {
	cpu, mem := Requests(pod)
	var usedCPU, usedMem int64
	for _, o := range others {
		c, m := Requests(o)
		usedCPU += c
		usedMem += m
	}
	type check struct {
		name                  string
		requested, used, have int64
	}
	for _, c := range []check{{"cpu", cpu, usedCPU, capacity.MilliCPU}, {"memory", mem, usedMem, capacity.MemoryBytes}} {
		switch {
		case c.have <= 0:
		case c.requested > c.have:
			// syncpod: a resize the node can never hold waits for
			// nothing.
			return ReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", c.name, c.requested, c.have)
		case c.requested+c.used > c.have:
			return ReasonDeferred, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", c.name, c.requested, c.used, c.have)
		}
	}
	return "", ""
}

// Requests are a pod's CPU (milli) and memory (bytes) requests as the
// kubelet counts them for admission (podresources.PodRequests): the
// larger of the regular containers and sidecars together and any init
// container with the sidecars started before it, or the pod-level
// request where one is set, plus the pod's overhead.
func Requests(pod *syncpodv1.Pod) (milliCPU, memoryBytes int64) {
	r := podresources.PodRequests(pod, podresources.Options{})
	return r.MilliCPU, r.Memory
}

// Equal reports whether a and b ask for the same quantities ("1" and
// "1000m" alike, unset and empty alike).
func Equal(a, b *syncpodv1.ResourceRequirements) bool {
	same := func(x, y string) bool {
		if x == "" || y == "" {
			return x == y
		}
		qx, ex := resource.ParseQuantity(x)
		qy, ey := resource.ParseQuantity(y)
		if ex != nil || ey != nil {
			return x == y
		}
		return qx.Cmp(qy) == 0
	}
	return same(a.GetRequests().GetCpu(), b.GetRequests().GetCpu()) &&
		same(a.GetRequests().GetMemory(), b.GetRequests().GetMemory()) &&
		same(a.GetLimits().GetCpu(), b.GetLimits().GetCpu()) &&
		same(a.GetLimits().GetMemory(), b.GetLimits().GetMemory())
}

func isEmpty(r *syncpodv1.ResourceRequirements) bool {
	return r.GetRequests().GetCpu() == "" && r.GetRequests().GetMemory() == "" &&
		r.GetLimits().GetCpu() == "" && r.GetLimits().GetMemory() == ""
}

// wanted is what pod's init and regular containers ask for, by name.
func wanted(pod *syncpodv1.Pod) map[string]*syncpodv1.ResourceRequirements {
	out := map[string]*syncpodv1.ResourceRequirements{}
	for _, cs := range [][]*syncpodv1.Container{pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers()} {
		for _, c := range cs {
			r := c.GetResources()
			if r == nil {
				r = &syncpodv1.ResourceRequirements{}
			}
			out[c.GetName()] = proto.Clone(r).(*syncpodv1.ResourceRequirements)
		}
	}
	return out
}

// Pending returns the records whose resize is Deferred, in the order the
// kubelet retries them: by the pod's creation time,
// then namespace and name.
func Pending(recs []*plannerv1.PodRecord) []*plannerv1.PodRecord {
	var out []*plannerv1.PodRecord
	for _, r := range recs {
		if r.GetAllocation().GetPendingReason() == ReasonDeferred {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].GetPod(), out[j].GetPod()
		if ta, tb := a.GetCreationTime().AsTime(), b.GetCreationTime().AsTime(); !ta.Equal(tb) {
			return ta.Before(tb)
		}
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	return out
}
