package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/labels"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// Filter selects pods by namespace (empty: all) and a parsed label selector.
type Filter struct {
	// Namespace to match; empty matches every namespace.
	Namespace string
	// Selector on the pod's labels; nil matches everything.
	Selector labels.Selector
}

// ParseFilter builds a Filter from the wire form of ListPods and WatchPods.
// A malformed selector is ErrInvalid.
func ParseFilter(namespace, selector string) (Filter, error) {
	f := Filter{Namespace: namespace}
	if selector == "" {
		return f, nil
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return Filter{}, invalidf("label_selector: %v", err)
	}
	f.Selector = sel
	return f, nil
}

// Matches reports whether the record passes the filter.
func (f Filter) Matches(rec *plannerv1.PodRecord) bool {
	p := rec.GetPod()
	if f.Namespace != "" && p.GetNamespace() != f.Namespace {
		return false
	}
	if f.Selector != nil && !f.Selector.Matches(labels.Set(p.GetLabels())) {
		return false
	}
	return true
}

// hub fans committed changes out to subscriptions.
type hub struct {
	mu      sync.Mutex
	nextID  uint64
	subs    map[uint64]*Subscription
	resyncs atomic.Uint64
}

func newHub() *hub { return &hub{subs: map[uint64]*Subscription{}} }

// publish delivers the change old -> new (either may be nil) to every
// subscription, without ever blocking.
func (h *hub) publish(old, cur *plannerv1.PodRecord, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		oldMatch := old != nil && s.filter.Matches(old)
		newMatch := cur != nil && s.filter.Matches(cur)
		var ev *plannerv1.WatchPodsResponse
		switch {
		case oldMatch && newMatch:
			ev = &plannerv1.WatchPodsResponse{Type: plannerv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, Record: cur}
		case newMatch:
			ev = &plannerv1.WatchPodsResponse{Type: plannerv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, Record: cur}
		case oldMatch:
			// Removed, or no longer matching the filter: the watcher sees
			// the last state it was entitled to.
			ev = &plannerv1.WatchPodsResponse{Type: plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED, Record: old}
		default:
			continue
		}
		ev.Time = timestamppb.New(at)
		if s.push(ev) {
			h.resyncs.Add(1)
		}
	}
}

// add registers a subscription whose queue starts with initial.
func (h *hub) add(f Filter, buffer int, initial []*plannerv1.WatchPodsResponse) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	s := &Subscription{
		hub:    h,
		id:     h.nextID,
		filter: f,
		// The initial snapshot does not count against the buffer: a
		// watcher always gets every existing pod.
		limit:  buffer + len(initial),
		queue:  initial,
		notify: make(chan struct{}, 1),
	}
	if len(initial) > 0 {
		s.notify <- struct{}{}
	}
	h.subs[s.id] = s
	return s
}

func (h *hub) remove(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.subs[id]; ok {
		delete(h.subs, id)
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

func (h *hub) closeAll() {
	h.mu.Lock()
	ids := make([]uint64, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.remove(id)
	}
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Subscription is one watcher's bounded queue of changes. Not safe for
// concurrent Next calls.
type Subscription struct {
	hub    *hub
	id     uint64
	filter Filter
	limit  int
	notify chan struct{}

	mu     sync.Mutex
	queue  []*plannerv1.WatchPodsResponse
	closed bool
}

// push appends ev; when the queue is full it is replaced by one RESYNC and
// push reports true (an overflow to count).
func (s *Subscription) push(ev *plannerv1.WatchPodsResponse) (overflow bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if len(s.queue) >= s.limit {
		s.queue = append(s.queue[:0], &plannerv1.WatchPodsResponse{
			Type: plannerv1.WatchEventType_WATCH_EVENT_TYPE_RESYNC,
			Time: proto.Clone(ev.GetTime()).(*timestamppb.Timestamp),
		})
		overflow = true
	} else {
		s.queue = append(s.queue, ev)
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return overflow
}

// Next blocks until at least one change is queued and returns every queued
// change, oldest first. It returns ctx.Err() when ctx ends and ErrClosed
// once the subscription or the store is closed.
func (s *Subscription) Next(ctx context.Context) ([]*plannerv1.WatchPodsResponse, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			out := s.queue
			s.queue = nil
			s.mu.Unlock()
			return out, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.notify:
		}
	}
}

// Close ends the subscription; pending changes are discarded.
func (s *Subscription) Close() {
	s.hub.remove(s.id)
}
