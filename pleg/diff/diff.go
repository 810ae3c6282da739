package diff

import (
	"slices"

	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// State is a container's (or sandbox's) state as the PLEG compares it
// CREATED and UNKNOWN runtime states both count as Unknown, and an
// ID missing from a snapshot is NonExistent.
type State int

// The four PLEG states.
const (
	NonExistent State = iota
	Running
	Exited
	Unknown
)

// States lists every State, for exhaustive tests.
var States = [...]State{NonExistent, Running, Exited, Unknown}

// String is the state's name as used in golden files.
func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Exited:
		return "exited"
	case Unknown:
		return "unknown"
	default:
		return "non-existent"
	}
}

// ParseState is the inverse of String.
func ParseState(s string) (State, bool) {
	for _, st := range States {
		if st.String() == s {
			return st, true
		}
	}
	return NonExistent, false
}

// FromContainerState maps a CRI container state (R-13.3: CREATED and
// UNKNOWN are unknown).
func FromContainerState(s runtimeapi.ContainerState) State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return Running
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return Exited
	default:
		return Unknown
	}
}

// FromSandboxState maps a CRI sandbox state: a ready sandbox is running, a
// not-ready one exited (sandboxes are treated as containers, R-13.3).
func FromSandboxState(s runtimeapi.PodSandboxState) State {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return Running
	}
	return Exited
}

// Entry is one container or sandbox in a pod record.
type Entry struct {
	// ID is the runtime's container or sandbox ID.
	ID string
	// State is its PLEG state.
	State State
	// Sandbox is true for a pod sandbox.
	Sandbox bool
}

// Record is what one listing saw of one pod. A nil *Record is a pod the
// listing did not see.
type Record struct {
	// UID is the pod's uid.
	UID string
	// Entries are the pod's sandboxes and containers, in any order, each
	// id once.
	Entries []Entry
	// idx maps an id to its position in Entries; built by the first Set
	// or Remove, kept up to date by them.
	idx map[string]int
}

// index returns id -> position, building it if needed.
func (r *Record) index() map[string]int {
	if r.idx == nil || len(r.idx) != len(r.Entries) {
		r.idx = make(map[string]int, len(r.Entries))
		for i, e := range r.Entries {
			r.idx[e.ID] = i
		}
	}
	return r.idx
}

// Set adds e or replaces the entry with e's id, in O(1) once indexed (a
// runtime event updating one container of a large pod). r is modified.
func (r *Record) Set(e Entry) {
	idx := r.index()
	if i, ok := idx[e.ID]; ok {
		r.Entries[i] = e
		return
	}
	idx[e.ID] = len(r.Entries)
	r.Entries = append(r.Entries, e)
}

// Remove drops the entry of id, if any, in O(1) once indexed (the order of
// Entries changes). r is modified.
func (r *Record) Remove(id string) {
	idx := r.index()
	i, ok := idx[id]
	if !ok {
		return
	}
	last := len(r.Entries) - 1
	r.Entries[i] = r.Entries[last]
	idx[r.Entries[i].ID] = i
	r.Entries = r.Entries[:last]
	delete(idx, id)
}

// State returns the state of id in r, NonExistent when absent or r is
// nil. It scans the entries unless r is indexed.
func (r *Record) State(id string) State {
	if r == nil {
		return NonExistent
	}
	if r.idx != nil && len(r.idx) == len(r.Entries) {
		if i, ok := r.idx[id]; ok {
			return r.Entries[i].State
		}
		return NonExistent
	}
	for _, e := range r.Entries {
		if e.ID == id {
			return e.State
		}
	}
	return NonExistent
}

// states returns id -> state of r's entries.
func (r *Record) states() map[string]State {
	if r == nil {
		return nil
	}
	m := make(map[string]State, len(r.Entries))
	for _, e := range r.Entries {
		m[e.ID] = e.State
	}
	return m
}

// IDs returns the sorted IDs of r's entries.
func (r *Record) IDs() []string {
	if r == nil {
		return nil
	}
	ids := make([]string, 0, len(r.Entries))
	for _, e := range r.Entries {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return ids
}

// Event is one computed lifecycle event.
type Event struct {
	// PodUID is the pod's uid.
	PodUID string
	// Type is the event type.
	Type plegv1.PodLifecycleEventType
	// ContainerID is the container or sandbox the event is about.
	ContainerID string
}

// Transition returns the events for one container going from old to cur
// (the table of ), CONTAINER_CHANGED included.
func Transition(old, cur State) []plegv1.PodLifecycleEventType {
	if old == cur {
		return nil
	}
	switch cur {
	case Running:
		return []plegv1.PodLifecycleEventType{plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED}
	case Exited:
		return []plegv1.PodLifecycleEventType{plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED}
	case Unknown:
		return []plegv1.PodLifecycleEventType{plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_CHANGED}
	default: // NonExistent
		if old == Exited {
			return []plegv1.PodLifecycleEventType{plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED}
		}
		return []plegv1.PodLifecycleEventType{
			plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED,
			plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED,
		}
	}
}

// Compute returns the events of pod uid between its previous and current
// records (either may be nil), CONTAINER_CHANGED included. IDs are merged
// from both records and visited in sorted order, so the result is
// deterministic.
func Compute(uid string, old, cur *Record) []Event {
	ids := append(old.IDs(), cur.IDs()...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	oldStates, curStates := old.states(), cur.states() // O(n), not a scan per id
	var out []Event
	for _, id := range ids {
		for _, t := range Transition(oldStates[id], curStates[id]) {
			out = append(out, Event{PodUID: uid, Type: t, ContainerID: id})
		}
	}
	return out
}

// Sent reports whether events of type t are sent to subscribers:
// CONTAINER_CHANGED is computed but never sent, as the kubelet does
//
func Sent(t plegv1.PodLifecycleEventType) bool {
	return t != plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_CHANGED
}

// Sendable drops the events that are computed but never sent. It returns
// a new slice.
func Sendable(events []Event) []Event {
	out := make([]Event, 0, len(events))
	for _, e := range events {
		if Sent(e.Type) {
			out = append(out, e)
		}
	}
	return out
}
