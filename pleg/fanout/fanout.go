package fanout

import (
	"context"
	"errors"
	"sync"
	"time"

	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("fanout: subscription closed")

// Counters receive the overflow counts; nil fields are ignored.
type Counters struct {
	// Discarded is called with 1 for every event dropped for a subscriber.
	Discarded func()
	// Resync is called once per overflow (one RESYNC event queued).
	Resync func()
}

// Broadcaster fans events out to subscribers.
type Broadcaster struct {
	mu       sync.RWMutex
	subs     map[*Subscription]struct{}
	counters Counters
	now      func() time.Time
}

// New returns a broadcaster; now stamps RESYNC events (nil: time.Now).
func New(counters Counters, now func() time.Time) *Broadcaster {
	if now == nil {
		now = time.Now
	}
	return &Broadcaster{subs: map[*Subscription]struct{}{}, counters: counters, now: now}
}

// Subscription is one subscriber's queue. Next and Close may be called
// from different goroutines.
type Subscription struct {
	b      *Broadcaster
	filter map[string]struct{}

	mu       sync.Mutex
	ring     []*plegv1.PodLifecycleEvent
	head, n  int
	resyncAt *timestamppb.Timestamp // non-nil: a RESYNC is owed
	closed   bool
	notify   chan struct{}
}

// Subscribe adds a subscriber with room for buffer events (at least 1),
// receiving only events of the given pod uids (all when empty).
func (b *Broadcaster) Subscribe(buffer int, podUIDs []string) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	s := &Subscription{b: b, ring: make([]*plegv1.PodLifecycleEvent, buffer), notify: make(chan struct{}, 1)}
	if len(podUIDs) > 0 {
		s.filter = make(map[string]struct{}, len(podUIDs))
		for _, u := range podUIDs {
			s.filter[u] = struct{}{}
		}
	}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Subscribers is the number of open subscriptions.
func (b *Broadcaster) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs)
}

// Publish offers ev to every subscriber; it never blocks. ev is shared by
// all subscribers and must not be modified afterwards.
func (b *Broadcaster) Publish(ev *plegv1.PodLifecycleEvent) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for s := range b.subs {
		s.offer(ev)
	}
}

func (s *Subscription) offer(ev *plegv1.PodLifecycleEvent) {
	if s.filter != nil {
		if _, ok := s.filter[ev.GetPodUid()]; !ok {
			return
		}
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return
	case s.resyncAt != nil:
		s.mu.Unlock()
		s.count(s.b.counters.Discarded)
		return
	case s.n == len(s.ring):
		s.resyncAt = timestamppb.New(s.b.now())
		s.mu.Unlock()
		s.count(s.b.counters.Resync)
		s.count(s.b.counters.Discarded)
	default:
		s.ring[(s.head+s.n)%len(s.ring)] = ev
		s.n++
		s.mu.Unlock()
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *Subscription) count(f func()) {
	if f != nil {
		f()
	}
}

// Next returns the next event, waiting until one is queued, ctx is done
// (its error) or the subscription is closed (ErrClosed). After an
// overflow, the events queued before it come first, then one RESYNC.
func (s *Subscription) Next(ctx context.Context) (*plegv1.PodLifecycleEvent, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if s.n > 0 {
			ev := s.ring[s.head]
			s.ring[s.head] = nil
			s.head = (s.head + 1) % len(s.ring)
			s.n--
			s.mu.Unlock()
			return ev, nil
		}
		if s.resyncAt != nil {
			ev := &plegv1.PodLifecycleEvent{Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_RESYNC, Time: s.resyncAt}
			s.resyncAt = nil
			s.mu.Unlock()
			return ev, nil
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close removes the subscriber and frees its buffer; Next then returns
// ErrClosed. Close is idempotent.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	delete(s.b.subs, s)
	s.b.mu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.ring = nil
	s.n = 0
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}
