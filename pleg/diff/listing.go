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
