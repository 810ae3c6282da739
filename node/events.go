package node

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// maxRepeats bounds how many API events one planner event's count jump
// turns into (the API server's correlator aggregates them anyway).
const maxRepeats = 3

// eventRelay turns the planner's per-pod event lists into API events. The
// planner keeps each event with a count; the relay remembers the count it
// has passed on per (pod, event) and records the difference. A pod seen
// for the first time has its events from before the agent started
// skipped: an agent restart does not repeat them.
type eventRelay struct {
	since time.Time
	emit  func(ref *corev1.ObjectReference, eventType, reason, message string)

	mu   sync.Mutex
	seen map[types.UID]map[string]int32
}

func newEventRelay(since time.Time, emit func(*corev1.ObjectReference, string, string, string)) *eventRelay {
	return &eventRelay{since: since, emit: emit, seen: map[types.UID]map[string]int32{}}
}

func eventKey(e *syncpodv1.Event) string {
	return fmt.Sprintf("%d\x00%s\x00%s\x00%s", e.GetType(), e.GetReason(), e.GetInvolvedContainer(), e.GetMessage())
}

// Observe passes on the events of a pod's record that are new. kp is the
// API pod they are about.
func (r *eventRelay) Observe(kp *corev1.Pod, events []*syncpodv1.Event) {
	r.mu.Lock()
	counts, known := r.seen[kp.UID]
	if !known {
		counts = map[string]int32{}
		r.seen[kp.UID] = counts
	}
	type out struct {
		ref              *corev1.ObjectReference
		typ, reason, msg string
		times            int32
	}
	var outs []out
	for _, e := range events {
		k := eventKey(e)
		prev, had := counts[k]
		counts[k] = e.GetCount()
		if !known && !had && e.GetLastTime() != nil && e.GetLastTime().AsTime().Before(r.since) {
			continue
		}
		n := e.GetCount() - prev
		if n <= 0 {
			continue
		}
		outs = append(outs, out{ref: eventRef(kp, e.GetInvolvedContainer()), typ: eventTypeToAPI(e.GetType()),
			reason: e.GetReason(), msg: e.GetMessage(), times: min(n, maxRepeats)})
	}
	r.mu.Unlock()
	for _, o := range outs {
		for range o.times {
			r.emit(o.ref, o.typ, o.reason, o.msg)
		}
	}
}

// Forget drops what is known of pod uid.
func (r *eventRelay) Forget(uid types.UID) {
	r.mu.Lock()
	delete(r.seen, uid)
	r.mu.Unlock()
}

func eventTypeToAPI(t syncpodv1.EventType) string {
	if t == syncpodv1.EventType_EVENT_TYPE_WARNING {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}

// eventRef is the object an event is about: the pod, or one of its
// containers by field path, as the kubelet names them.
func eventRef(kp *corev1.Pod, container string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: kp.Namespace, Name: kp.Name, UID: kp.UID,
		ResourceVersion: kp.ResourceVersion,
	}
	if container == "" {
		return ref
	}
	for _, c := range kp.Spec.InitContainers {
		if c.Name == container {
			ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", container)
			return ref
		}
	}
	for _, c := range kp.Spec.EphemeralContainers {
		if c.Name == container {
			ref.FieldPath = fmt.Sprintf("spec.ephemeralContainers{%s}", container)
			return ref
		}
	}
	ref.FieldPath = fmt.Sprintf("spec.containers{%s}", container)
	return ref
}
