package cache

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// entry is one pod's status. pod is the status as readers get it; it is
// nil after an Apply until the next read builds it from idx.
type entry struct {
	pod      *syncpodv1.ObservedPod
	modified time.Time
	idx      *index // built by the first Apply; nil until then
}

// index is a pod's status kept sorted newest first and keyed by object
// id, for event updates in O(log n) plus a pointer memmove, and reads that
// copy two slices of pointers. The sandboxes and containers it points to
// are never modified: an update replaces the pointer, and a mutation of
// the slices never touches a slice already handed to a reader.
type index struct {
	uid, name, namespace string
	sandboxes            sorted[*syncpodv1.ObservedSandbox]
	containers           sorted[*syncpodv1.ObservedContainer]
}

func newIndex(p *syncpodv1.ObservedPod) *index {
	return &index{
		uid: p.GetUid(), name: p.GetName(), namespace: p.GetNamespace(),
		sandboxes:  newSorted(p.GetSandboxes()),
		containers: newSorted(p.GetContainers()),
	}
}

// build returns the status the index holds.
func (ix *index) build(observedAt time.Time) *syncpodv1.ObservedPod {
	return &syncpodv1.ObservedPod{
		Uid: ix.uid, Name: ix.name, Namespace: ix.namespace, ObservedAt: timestamppb.New(observedAt),
		Sandboxes:  slices.Clone(ix.sandboxes.list),
		Containers: slices.Clone(ix.containers.list),
	}
}

// object is a sandbox or container status.
type object interface {
	comparable
	GetId() string
	GetCreatedAt() *timestamppb.Timestamp
}

// newestFirst orders objects newest first (by created_at, then id), the
// order of ObservedPod's lists.
func newestFirst[T object](a, b T) int {
	return cmp.Or(cmpTime(b.GetCreatedAt(), a.GetCreatedAt()), cmp.Compare(a.GetId(), b.GetId()))
}

func cmpTime(a, b *timestamppb.Timestamp) int {
	return cmp.Or(cmp.Compare(a.GetSeconds(), b.GetSeconds()), cmp.Compare(a.GetNanos(), b.GetNanos()))
}

// sorted is a list of objects in newestFirst order with an id index.
type sorted[T object] struct {
	list []T
	byID map[string]T
}

func newSorted[T object](in []T) sorted[T] {
	s := sorted[T]{list: slices.Clone(in), byID: make(map[string]T, len(in))}
	slices.SortFunc(s.list, newestFirst[T])
	s.list = slices.CompactFunc(s.list, func(a, b T) bool { return a.GetId() == b.GetId() })
	for _, v := range s.list {
		s.byID[v.GetId()] = v
	}
	return s
}

// pos is the position of v (present or not) in the list.
func (s *sorted[T]) pos(v T) (int, bool) {
	return slices.BinarySearchFunc(s.list, v, newestFirst[T])
}

// upsert adds v or replaces the object with v's id.
func (s *sorted[T]) upsert(v T) {
	if old, ok := s.byID[v.GetId()]; ok {
		i, found := s.pos(old)
		if found && newestFirst(old, v) == 0 {
			s.list[i] = v
			s.byID[v.GetId()] = v
			return
		}
		s.remove(v.GetId())
	}
	i, _ := s.pos(v)
	s.list = slices.Insert(s.list, i, v)
	s.byID[v.GetId()] = v
}

// remove drops the object with id, if any.
func (s *sorted[T]) remove(id string) {
	old, ok := s.byID[id]
	if !ok {
		return
	}
	if i, found := s.pos(old); found {
		s.list = slices.Delete(s.list, i, i+1)
	}
	delete(s.byID, id)
}

// removeIf drops every object f selects, in O(n).
func (s *sorted[T]) removeIf(f func(T) bool) {
	s.list = slices.DeleteFunc(s.list, func(v T) bool {
		if f(v) {
			delete(s.byID, v.GetId())
			return true
		}
		return false
	})
}

// Cache holds the observed status of every pod. The zero value is not
// usable; call New.
type Cache struct {
	mu        sync.Mutex
	pods      map[string]*entry
	absent    map[string]time.Time // tombstones newer than timestamp
	timestamp time.Time            // zero until the first complete relist
	changed   chan struct{}
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{pods: map[string]*entry{}, absent: map[string]time.Time{}, changed: make(chan struct{})}
}

// broadcast wakes every waiter. Callers hold mu.
func (c *Cache) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// set stores e and clears an older tombstone. Callers hold mu.
func (c *Cache) set(uid string, e *entry) {
	c.pods[uid] = e
	if t, ok := c.absent[uid]; ok && !t.After(e.modified) {
		delete(c.absent, uid)
	}
	c.broadcast()
}

// Set stores pod's status current as of modified, replacing any previous
// one.
func (c *Cache) Set(uid string, pod *syncpodv1.ObservedPod, modified time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(uid, &entry{pod: pod, modified: modified})
}

// SetIfNewer stores pod's status only when modified is after the cached
// entry's time (rule ); it reports whether it did.
func (c *Cache) SetIfNewer(uid string, pod *syncpodv1.ObservedPod, modified time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && !modified.After(e.modified) {
		return false
	}
	c.set(uid, &entry{pod: pod, modified: modified})
	return true
}

// Delta is a change to one pod's status, from one runtime event. Objects
// are matched by id; everything the delta does not name is kept.
type Delta struct {
	// Name and Namespace, when not empty, replace the pod's.
	Name, Namespace string
	// Sandboxes are added or replace the sandbox with the same id.
	Sandboxes []*syncpodv1.ObservedSandbox
	// Containers are added or replace the container with the same id.
	Containers []*syncpodv1.ObservedContainer
	// RemoveContainers are container ids to drop (after the upserts).
	RemoveContainers []string
	// RemoveSandboxes are sandbox ids to drop with their containers
	// (costs O(containers of the pod); a sandbox is removed once).
	RemoveSandboxes []string
	// Force applies the delta even when it is not newer than the entry
	// (removals are final whatever their time); the entry's time then
	// stays the later of the two.
	Force bool
}

// Apply changes uid's status by d as of modified, creating the entry if
// there is none. Unless d.Force, it does nothing when modified is not
// after the entry's time. It reports whether it changed the
// cache; a pod left with no sandbox and no container is removed and
// marked absent as of modified. It costs O(objects in d).
func (c *Cache) Apply(uid string, d Delta, modified time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if !d.Force {
		switch {
		case ok && !modified.After(e.modified):
			return false
		case !ok && !c.timestamp.IsZero() && !modified.After(c.timestamp):
			return false // the pod was absent at a later relist
		case !ok && !modified.After(c.absent[uid]):
			return false // ...or at a later single-pod relist
		}
	}
	if !ok {
		e = &entry{idx: newIndex(&syncpodv1.ObservedPod{Uid: uid})}
	}
	if e.idx == nil {
		e.idx = newIndex(e.pod)
	}
	ix := e.idx
	ix.uid = uid
	ix.name = cmp.Or(d.Name, ix.name)
	ix.namespace = cmp.Or(d.Namespace, ix.namespace)
	for _, s := range d.Sandboxes {
		ix.sandboxes.upsert(s)
	}
	for _, ct := range d.Containers {
		ix.containers.upsert(ct)
	}
	for _, id := range d.RemoveContainers {
		ix.containers.remove(id)
	}
	for _, id := range d.RemoveSandboxes {
		ix.sandboxes.remove(id)
		ix.containers.removeIf(func(ct *syncpodv1.ObservedContainer) bool { return ct.GetSandboxId() == id })
	}
	e.pod = nil
	if modified.After(e.modified) {
		e.modified = modified
	}
	if len(ix.sandboxes.list) == 0 && len(ix.containers.list) == 0 {
		delete(c.pods, uid)
		c.markAbsent(uid, e.modified)
		c.broadcast()
		return true
	}
	c.set(uid, e)
	return true
}

// markAbsent records that uid was absent as of t. Callers hold mu.
func (c *Cache) markAbsent(uid string, t time.Time) {
	if t.After(c.timestamp) && t.After(c.absent[uid]) {
		c.absent[uid] = t
	}
}

// Delete forgets a pod (it vanished from the runtime); the pod then reads
// as empty once the global timestamp passes the caller's newer-than time.
func (c *Cache) Delete(uid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
	c.broadcast()
}

// DeleteIfOlder forgets a pod unless its cached status is newer than t (an
// event stored it after a relist that started at t listed nothing), and
// marks it absent as of t; it reports whether it did.
func (c *Cache) DeleteIfOlder(uid string, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && e.modified.After(t) {
		return false
	}
	delete(c.pods, uid)
	c.markAbsent(uid, t)
	c.broadcast()
	return true
}

// UpdateTime moves the global timestamp forward to t (never back).
func (c *Cache) UpdateTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.timestamp) {
		c.timestamp = t
		maps.DeleteFunc(c.absent, func(_ string, at time.Time) bool { return !at.After(t) })
		c.broadcast()
	}
}

// snapshot returns e's status, building it if an Apply changed it. Callers
// hold mu.
func snapshot(e *entry) *syncpodv1.ObservedPod {
	if e.pod == nil {
		e.pod = e.idx.build(e.modified)
	}
	return e.pod
}

// Get returns the cached status of uid (nil when none) and its time.
func (c *Cache) Get(uid string) (*syncpodv1.ObservedPod, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if !ok {
		return nil, time.Time{}
	}
	return snapshot(e), e.modified
}

// Modified returns the time uid's cached status is current as of (zero
// when none), without building the status.
func (c *Cache) Modified(uid string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok {
		return e.modified
	}
	return time.Time{}
}

// lookup answers GetNewerThan without waiting; ok is false when the cache
// cannot answer yet. Callers hold mu.
func (c *Cache) lookup(uid string, minTime time.Time) (*syncpodv1.ObservedPod, bool) {
	e, found := c.pods[uid]
	if found && e.modified.After(minTime) {
		return snapshot(e), true
	}
	if at, ok := c.absent[uid]; !found && ok && at.After(minTime) {
		return &syncpodv1.ObservedPod{Uid: uid}, true
	}
	if !c.timestamp.IsZero() && c.timestamp.After(minTime) {
		if found {
			return snapshot(e), true
		}
		return &syncpodv1.ObservedPod{Uid: uid}, true
	}
	return nil, false
}

// GetNewerThan returns the status of uid once the cache holds one current
// after minTime, or once the pod is known absent after minTime (then an
// empty ObservedPod with only uid set), or once the global timestamp is
// after minTime. A zero minTime accepts any status after the first
// complete relist. It waits until ctx is done and then returns ctx's
// error.
func (c *Cache) GetNewerThan(ctx context.Context, uid string, minTime time.Time) (*syncpodv1.ObservedPod, error) {
	for {
		c.mu.Lock()
		pod, ok := c.lookup(uid, minTime)
		wake := c.changed
		c.mu.Unlock()
		if ok {
			return pod, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Peek answers GetNewerThan without waiting; ok is false when the cache
// cannot answer yet.
func (c *Cache) Peek(uid string, minTime time.Time) (pod *syncpodv1.ObservedPod, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lookup(uid, minTime)
}

// List returns every cached status sorted by uid, and the global
// timestamp.
func (c *Cache) List() ([]*syncpodv1.ObservedPod, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*syncpodv1.ObservedPod, 0, len(c.pods))
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
		out = append(out, snapshot(c.pods[uid]))
	}
	return out, c.timestamp
}

// Len is the number of cached pods.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods)
}
