package podresources

import syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

// QOSClass is a pod's Kubernetes quality-of-service class.
type QOSClass string

// The QoS classes, spelled as Kubernetes spells them.
const (
	Guaranteed QOSClass = "Guaranteed"
	Burstable  QOSClass = "Burstable"
	BestEffort QOSClass = "BestEffort"
)

// QOS is the kubelet's ComputePodQOS over CPU and memory. A pod
// that sets pod-level CPU or memory takes its class from those values
// alone. Otherwise each container (init containers included) has a class
// of its own and the pod is BestEffort or Guaranteed only when all of
// them are, Burstable otherwise. A set of requirements is BestEffort when
// it sets neither resource, Guaranteed when both are limited and each
// request equals its limit, Burstable otherwise. Requests are taken as
// the API server defaults them (an unset request is its limit).
func QOS(pod *syncpodv1.Pod) QOSClass {
	if PodLevelSet(pod) {
		return requirementsQOS(PodLevel(pod))
	}
	var class QOSClass
	for _, c := range allContainers(pod) {
		q := requirementsQOS(Container(c))
		switch {
		case q == Burstable:
			return Burstable
		case class == "":
			class = q
		case class != q:
			return Burstable
		}
	}
	if class == "" {
		return BestEffort
	}
	return class
}

func requirementsQOS(r Requirements) QOSClass {
	if r.Requests.IsZero() && r.Limits.IsZero() {
		return BestEffort
	}
	cpu := resourceQOS(r.Requests.MilliCPU, r.Limits.MilliCPU)
	mem := resourceQOS(r.Requests.Memory, r.Limits.Memory)
	if cpu != mem {
		return Burstable
	}
	return cpu
}

// resourceQOS compares one resource's request and limit (unset is zero).
func resourceQOS(req, lim int64) QOSClass {
	switch {
	case req != lim:
		return Burstable
	case req == 0:
		return BestEffort
	default:
		return Guaranteed
	}
}
