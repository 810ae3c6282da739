package events

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Recorder keeps aggregated, bounded event lists per pod in memory. The
// sync loop records into it and flushes to the store; tests read it
// directly. Safe for concurrent use.
type Recorder struct {
	now func() time.Time
	max int

	mu   sync.Mutex
	pods map[string][]*syncpodv1.Event
}

// NewRecorder returns a recorder stamping events with now() and keeping at
// most max events per pod (max <= 0: DefaultMaxPerPod).
func NewRecorder(now func() time.Time, max int) *Recorder {
	if max <= 0 {
		max = DefaultMaxPerPod
	}
	return &Recorder{now: now, max: max, pods: map[string][]*syncpodv1.Event{}}
}

// New builds one event about pod at time at (count 1).
func New(pod *syncpodv1.Pod, typ syncpodv1.EventType, reason, container, message string, at time.Time) *syncpodv1.Event {
	ts := timestamppb.New(at)
	return &syncpodv1.Event{
		Type:              typ,
		Reason:            reason,
		Message:           message,
		InvolvedContainer: container,
		FirstTime:         ts,
		LastTime:          proto.Clone(ts).(*timestamppb.Timestamp),
		Count:             1,
		PodUid:            pod.GetUid(),
		PodName:           pod.GetName(),
		PodNamespace:      pod.GetNamespace(),
	}
}

// Eventf records an event about pod, now, with a formatted message.
func (r *Recorder) Eventf(pod *syncpodv1.Pod, typ syncpodv1.EventType, reason, container, format string, args ...any) {
	r.Record(New(pod, typ, reason, container, fmt.Sprintf(format, args...), r.now()))
}

// Record folds already built events into their pods' lists.
func (r *Recorder) Record(evs ...*syncpodv1.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		uid := e.GetPodUid()
		r.pods[uid] = Merge(r.pods[uid], []*syncpodv1.Event{e}, r.max)
	}
}

// Events returns a copy of the pod's events, oldest first.
func (r *Recorder) Events(uid string) []*syncpodv1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Merge(nil, r.pods[uid], r.max)
}

// Take returns the pod's events and forgets them (after a flush to the
// store, whose list aggregates them again).
func (r *Recorder) Take(uid string) []*syncpodv1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pods[uid]
	delete(r.pods, uid)
	return out
}

// Pods returns the uids that have events, sorted.
func (r *Recorder) Pods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.pods))
	for uid := range r.pods {
		out = append(out, uid)
	}
	sort.Strings(out)
	return out
}
