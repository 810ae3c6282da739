package core

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/pleg/cache"
	"github.com/syncpod/syncpod/pleg/diff"
	"github.com/syncpod/syncpod/pleg/evented"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Publish hands lifecycle events over with their pod's status, stamped
// at; a State calls it with its lock held, so events come out in the
// order the State decided them. It must not call back into the State.
type Publish func(events []diff.Event, observed *syncpodv1.ObservedPod, at time.Time)

// State is the PLEG's core. Build it with New.
type State struct {
	cache   *cache.Cache
	publish Publish

	mu        sync.Mutex
	records   map[string]*diff.Record
	reinspect map[string]bool
	// eventAt is, per sandbox or container id, the creation time of the
	// last runtime event applied about it, and podEventAt the same per pod
	// uid. A relist's picture dates from its start: what an event applied
	// after that start says about an object is newer and wins (see
	// mergeRelist). Entries no newer than the last global relist's start
	// can no longer matter and are pruned by Relisted.
	eventAt    map[string]time.Time
	podEventAt map[string]time.Time
}

// New returns an empty State writing to c and publishing through publish.
func New(c *cache.Cache, publish Publish) *State {
	return &State{
		cache:      c,
		publish:    publish,
		records:    map[string]*diff.Record{},
		reinspect:  map[string]bool{},
		eventAt:    map[string]time.Time{},
		podEventAt: map[string]time.Time{},
	}
}

// Inspection is one pod to inspect in a relist and, once the caller has
// inspected it, its result.
type Inspection struct {
	// UID is the pod's uid.
	UID string
	// Listing is the pod's part of the relist; nil: the pod vanished.
	Listing *observe.Listing
	// Events are the relist's events of the pod, against its record.
	Events []diff.Event
	// Pod and Err are the inspection's result, set by the caller.
	Pod *syncpodv1.ObservedPod
	Err error
	// OnDemand: a single-pod relist someone waits for; no POD_SYNC.
	OnDemand bool
}

// Changed diffs a relist's listings (by pod uid) against the records
// and returns, sorted by uid, the pods to inspect: those
// with events and those marked for re-inspection.
func (s *State) Changed(listings map[string]*observe.Listing) []*Inspection {
	s.mu.Lock()
	defer s.mu.Unlock()
	uids := slices.Collect(maps.Keys(s.records))
	for uid := range listings {
		if _, ok := s.records[uid]; !ok {
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids)
	var todo []*Inspection
	for _, uid := range uids {
		l := listings[uid]
		if !s.reinspect[uid] && s.records[uid].Unchanged(l) {
			continue // the steady state: no record built, nothing diffed
		}
		events := diff.Compute(uid, s.records[uid], diff.FromListing(l))
		if len(events) > 0 || s.reinspect[uid] {
			todo = append(todo, &Inspection{UID: uid, Listing: l, Events: events})
		}
	}
	return todo
}

// ChangedPod is Changed for a single-pod relist of uid: always
// an inspection, on demand.
func (s *State) ChangedPod(uid string, l *observe.Listing) *Inspection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Inspection{UID: uid, Listing: l, Events: diff.Compute(uid, s.records[uid], diff.FromListing(l)), OnDemand: true}
}

// Relisted ends a global relist that started at start: what events said
// before it is in its picture now, and the cache is current as of start
//
func (s *State) Relisted(start time.Time) {
	s.mu.Lock()
	maps.DeleteFunc(s.eventAt, func(_ string, t time.Time) bool { return !t.After(start) })
	maps.DeleteFunc(s.podEventAt, func(_ string, t time.Time) bool { return !t.After(start) })
	s.mu.Unlock()
	s.cache.UpdateTime(start)
}

// Applied is what applying an inspection did.
type Applied struct {
	// Failed: the inspection had failed; the pod keeps its record and is
	// inspected again next relist, when its events are regenerated.
	Failed bool
	// Events are the events published.
	Events []diff.Event
	// Pod is the status published with them.
	Pod *syncpodv1.ObservedPod
}

// Apply writes one inspection of a relist that started at start into the
// cache and the records and publishes its events at now. For an
// object a runtime event told about after start, the event's word stands
// (mergeRelist), and the events are recomputed against the record as it
// is now, so a relist neither undoes a newer event-derived state nor
// publishes a transition out of order with the events already published
// (no CONTAINER_STARTED after a CONTAINER_DIED for one container).
func (s *State) Apply(in *Inspection, start, now time.Time) Applied {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.Err != nil {
		s.reinspect[in.UID] = true
		return Applied{Failed: true}
	}
	delete(s.reinspect, in.UID)
	pod := in.Pod
	if pod == nil { // vanished
		pod = &syncpodv1.ObservedPod{Uid: in.UID}
	}
	rec := diff.FromListing(in.Listing)
	if rec == nil {
		rec = &diff.Record{UID: in.UID}
	}
	modified := start
	if evAt := s.podEventAt[in.UID]; evAt.After(start) {
		cached, at := s.cache.Get(in.UID)
		pod, rec = s.mergeRelist(start, pod, rec, cached, s.records[in.UID])
		modified = evAt
		if at.After(evAt) {
			modified = at
		}
		pod.ObservedAt = timestamppb.New(modified)
	}
	events := diff.Compute(in.UID, s.records[in.UID], rec)
	if len(pod.GetSandboxes()) == 0 && len(pod.GetContainers()) == 0 {
		s.cache.DeleteIfOlder(in.UID, modified)
		pod = &syncpodv1.ObservedPod{Uid: in.UID}
	} else if modified.Equal(start) {
		s.cache.SetIfNewer(in.UID, pod, start)
	} else {
		s.cache.Set(in.UID, pod, modified)
	}
	if len(rec.Entries) == 0 {
		delete(s.records, in.UID)
	} else {
		s.records[in.UID] = rec
	}
	if len(events) == 0 && !in.OnDemand && in.Listing != nil {
		events = []diff.Event{{PodUID: in.UID, Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_POD_SYNC}}
	}
	s.publish(events, pod, now)
	return Applied{Events: events, Pod: pod}
}

// mergeRelist combines a relist's status and record of a pod (as of
// start) with the cached status and current record, which runtime events
// applied after start have changed: each sandbox or container an event
// told about after start keeps its event-derived state (or absence);
// every other one takes the relist's. Neither input is modified. Callers
// hold mu.
func (s *State) mergeRelist(start time.Time, relisted *syncpodv1.ObservedPod, relistRec *diff.Record,
	cached *syncpodv1.ObservedPod, curRec *diff.Record) (*syncpodv1.ObservedPod, *diff.Record) {
	newer := func(id string) bool { return s.eventAt[id].After(start) }
	pod := &syncpodv1.ObservedPod{
		Uid: relisted.GetUid(), Name: cmp.Or(relisted.GetName(), cached.GetName()),
		Namespace: cmp.Or(relisted.GetNamespace(), cached.GetNamespace()),
	}
	for _, sb := range relisted.GetSandboxes() {
		if !newer(sb.GetId()) {
			pod.Sandboxes = append(pod.Sandboxes, sb)
		}
	}
	for _, sb := range cached.GetSandboxes() {
		if newer(sb.GetId()) {
			pod.Sandboxes = append(pod.Sandboxes, sb)
		}
	}
	for _, c := range relisted.GetContainers() {
		if !newer(c.GetId()) {
			pod.Containers = append(pod.Containers, c)
		}
	}
	for _, c := range cached.GetContainers() {
		if newer(c.GetId()) {
			pod.Containers = append(pod.Containers, c)
		}
	}
	observe.Sort(pod)
	rec := &diff.Record{UID: relistRec.UID}
	for _, e := range relistRec.Entries {
		if !newer(e.ID) {
			rec.Entries = append(rec.Entries, e)
		}
	}
	if curRec != nil {
		for _, e := range curRec.Entries {
			if newer(e.ID) {
				rec.Entries = append(rec.Entries, e)
			}
		}
	}
	return pod, rec
}

// EventsApplied counts what ApplyEvents did with a batch.
type EventsApplied struct {
	// Ignored events carried no pod; Stale ones were older than the cache.
	Ignored, Applied, Stale int
	// Lags are, per applied event, how long after its creation now is.
	Lags []time.Duration
	// Published is the number of lifecycle events published.
	Published int
}

// ApplyEvents applies a batch of CRI events in order to the cache and the
// records (package evented's rules), each in O(statuses it carries), then
// publishes what they map to at each event's time, each pod's status
// built once for the batch (a later, never an older, status than the
// event's own). now dates the lags.
func (s *State) ApplyEvents(evs []*runtimeapi.ContainerEventResponse, now time.Time) EventsApplied {
	s.mu.Lock()
	defer s.mu.Unlock()
	type timed struct {
		diff.Event
		at time.Time
	}
	var out []timed
	var n EventsApplied
	for _, ev := range evs {
		ch := evented.Decode(ev)
		if ch.UID == "" {
			n.Ignored++
			continue
		}
		var removed []string
		if ch.SandboxDeleted {
			// The sandbox's containers go with it: find them (O(pod), once
			// per sandbox) for the record.
			if pod, _ := s.cache.Get(ch.UID); pod != nil {
				for _, c := range pod.GetContainers() {
					if c.GetSandboxId() == ch.ContainerID {
						removed = append(removed, c.GetId())
					}
				}
			}
		}
		taken, forward := evented.Apply(s.cache, ch)
		if taken {
			n.Applied++
			n.Lags = append(n.Lags, max(now.Sub(ch.Time), 0))
		} else {
			n.Stale++
		}
		if taken || ch.Deleted {
			s.noteEvent(ch, taken, removed)
		}
		for _, e := range forward {
			out = append(out, timed{e, ch.Time})
		}
	}
	status := map[string]*syncpodv1.ObservedPod{}
	for _, e := range out {
		pod, ok := status[e.PodUID]
		if !ok {
			if pod, _ = s.cache.Get(e.PodUID); pod == nil {
				pod = &syncpodv1.ObservedPod{Uid: e.PodUID}
			}
			status[e.PodUID] = pod
		}
		s.publish([]diff.Event{e.Event}, pod, e.at)
	}
	n.Published = len(out)
	return n
}

// noteEvent records what an applied event says in the pod's diff record
// and the event times, so a relist that started earlier neither undoes it
// nor publishes its transitions again. A stale DELETED event (taken false)
// only removes. Callers hold mu.
func (s *State) noteEvent(ch evented.Change, taken bool, removedWithSandbox []string) {
	rec := s.records[ch.UID]
	if rec == nil {
		rec = &diff.Record{UID: ch.UID}
		s.records[ch.UID] = rec
	}
	if taken {
		for _, e := range ch.Entries {
			rec.Set(e)
			s.eventAt[e.ID] = ch.Time
		}
	}
	for _, ids := range [][]string{ch.Removed, removedWithSandbox} {
		for _, id := range ids {
			rec.Remove(id)
			if ch.Time.After(s.eventAt[id]) {
				s.eventAt[id] = ch.Time
			}
		}
	}
	if ch.Time.After(s.podEventAt[ch.UID]) {
		s.podEventAt[ch.UID] = ch.Time
	}
	if len(rec.Entries) == 0 {
		delete(s.records, ch.UID)
	}
}

// Reinspect marks uid to be inspected at the next relist whatever its
// diff, as a failed inspection does.
func (s *State) Reinspect(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reinspect[uid] = true
}

// Reinspecting reports whether uid is marked for re-inspection.
func (s *State) Reinspecting(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reinspect[uid]
}
