package diff

import "github.com/syncpod/syncpod/cri/observe"

// FromListing turns one relist's view of a pod into the record Compute
// compares; nil stays nil.
func FromListing(l *observe.Listing) *Record {
	if l == nil {
		return nil
	}
	r := &Record{UID: l.UID, Entries: make([]Entry, 0, len(l.Sandboxes)+len(l.Containers))}
	for _, s := range l.Sandboxes {
		r.Entries = append(r.Entries, Entry{ID: s.GetId(), State: FromSandboxState(s.GetState()), Sandbox: true})
	}
	for _, c := range l.Containers {
		r.Entries = append(r.Entries, Entry{ID: c.GetId(), State: FromContainerState(c.GetState())})
	}
	return r
}

// unchangedScanLimit bounds the entries Unchanged searches one by one when
// a record has no index and its order differs from the listing's; larger
// pods are left to Compute.
const unchangedScanLimit = 32

// Unchanged reports whether listing l shows exactly what r holds: the same
// ids, each in the same state (so Compute(uid, r, FromListing(l)) has no
// event). It allocates nothing: the steady relist, where almost every
// pod is unchanged, calls it for every pod instead of building a record
// and diffing. A false answer only means "diff it": it is also given for
// a large pod whose order differs from its record's.
func (r *Record) Unchanged(l *observe.Listing) bool {
	if r == nil || l == nil {
		return r == nil && l == nil
	}
	if len(r.Entries) != len(l.Sandboxes)+len(l.Containers) {
		return false
	}
	for i, s := range l.Sandboxes {
		if e := r.find(i, s.GetId()); e == nil || !e.Sandbox || e.State != FromSandboxState(s.GetState()) {
			return false
		}
	}
	for i, c := range l.Containers {
		if e := r.find(len(l.Sandboxes)+i, c.GetId()); e == nil || e.Sandbox || e.State != FromContainerState(c.GetState()) {
			return false
		}
	}
	return true
}

// find returns r's entry for id, looking at position hint first; nil when
// there is none or it cannot be found cheaply.
func (r *Record) find(hint int, id string) *Entry {
	if hint < len(r.Entries) && r.Entries[hint].ID == id {
		return &r.Entries[hint]
	}
	if r.idx != nil {
		if j, ok := r.idx[id]; ok {
			return &r.Entries[j]
		}
		return nil
	}
	if len(r.Entries) > unchangedScanLimit {
		return nil
	}
	for j := range r.Entries {
		if r.Entries[j].ID == id {
			return &r.Entries[j]
		}
	}
	return nil
}
