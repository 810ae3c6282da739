package cache

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

type entry struct {
	pod      *syncpodv1.ObservedPod
	modified time.Time
}

// Cache holds the observed status of every pod. The zero value is not
// usable; call New.
type Cache struct {
	mu        sync.Mutex
	pods      map[string]entry
	timestamp time.Time // zero until the first complete relist
	changed   chan struct{}
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{pods: map[string]entry{}, changed: make(chan struct{})}
}

// broadcast wakes every waiter. Callers hold mu.
func (c *Cache) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Set stores pod's status read at modified (a relist's start time),
// replacing any previous one.
func (c *Cache) Set(uid string, pod *syncpodv1.ObservedPod, modified time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods[uid] = entry{pod: pod, modified: modified}
	c.broadcast()
}

// SetIfNewer stores pod's status only when modified is after the cached
// entry's time (rule ); it reports whether it did.
func (c *Cache) SetIfNewer(uid string, pod *syncpodv1.ObservedPod, modified time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && !modified.After(e.modified) {
		return false
	}
	c.pods[uid] = entry{pod: pod, modified: modified}
	c.broadcast()
	return true
}

// Delete forgets a pod (it vanished from the runtime) as of modified; the
// pod then reads as empty once the global timestamp passes the caller's
// newer-than time.
func (c *Cache) Delete(uid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
	c.broadcast()
}

// DeleteIfOlder forgets a pod unless its cached status is newer than t (an
// event stored it after a relist that started at t listed nothing); it
// reports whether it did.
func (c *Cache) DeleteIfOlder(uid string, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && e.modified.After(t) {
		return false
	}
	delete(c.pods, uid)
	c.broadcast()
	return true
}

// UpdateTime moves the global timestamp forward to t (never back).
func (c *Cache) UpdateTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.timestamp) {
		c.timestamp = t
		c.broadcast()
	}
}

// Get returns the cached status of uid (nil when none) and its time.
func (c *Cache) Get(uid string) (*syncpodv1.ObservedPod, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.pods[uid]
	return e.pod, e.modified
}

// lookup answers GetNewerThan without waiting; ok is false when the cache
// cannot answer yet. Callers hold mu.
func (c *Cache) lookup(uid string, minTime time.Time) (*syncpodv1.ObservedPod, bool) {
	e, found := c.pods[uid]
	if found && e.modified.After(minTime) {
		return e.pod, true
	}
	if !c.timestamp.IsZero() && c.timestamp.After(minTime) {
		if found {
			return e.pod, true
		}
		return &syncpodv1.ObservedPod{Uid: uid}, true
	}
	return nil, false
}

// GetNewerThan returns the status of uid once the cache holds one read
// after minTime, or once the global timestamp is after minTime (then a pod
// the runtime does not know is an empty ObservedPod with only uid set). A
// zero minTime accepts any status after the first complete relist. It
// waits until ctx is done and then returns ctx's error.
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
		out = append(out, c.pods[uid].pod)
	}
	return out, c.timestamp
}

// Len is the number of cached pods.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods)
}
