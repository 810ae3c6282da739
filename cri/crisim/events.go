package crisim

import (
	"context"
	"fmt"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// broker fans container events out to subscribers. Each subscriber has a
// bounded buffer; one that is full when an event arrives is cut off
// (its failed channel closes) rather than losing the event silently or
// stalling the runtime.
type broker struct {
	size       int
	onOverflow func()

	mu     sync.Mutex
	closed bool
	subs   map[*subscriber]struct{}
}

type subscriber struct {
	ch     chan *runtimeapi.ContainerEventResponse
	failed chan struct{} // closed when cut off; err says why
	err    error
}

func newBroker(size int) *broker {
	return &broker{size: size, subs: map[*subscriber]struct{}{}, onOverflow: func() {}}
}

func (b *broker) hasSubscribers() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

func (b *broker) subscribe() (*subscriber, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrShuttingDown
	}
	s := &subscriber{ch: make(chan *runtimeapi.ContainerEventResponse, b.size), failed: make(chan struct{})}
	b.subs[s] = struct{}{}
	return s, nil
}

func (b *broker) unsubscribe(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, s)
}

func (b *broker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// publish never blocks.
func (b *broker) publish(ev *runtimeapi.ContainerEventResponse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.ch <- ev:
		default:
			s.err = fmt.Errorf("%w: its buffer of %d events is full; resubscribe and relist", ErrSubscriberBehind, b.size)
			close(s.failed)
			delete(b.subs, s)
			b.onOverflow()
		}
	}
}

func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		s.err = ErrShuttingDown
		close(s.failed)
		delete(b.subs, s)
	}
}

// GetContainerEvents streams every event from now on to send until ctx
// ends, the subscriber falls behind, or the runtime shuts down. subscribed,
// when not nil, is called once the subscription is in place: every change
// after that is delivered.
func (r *Runtime) GetContainerEvents(ctx context.Context, subscribed func(), send func(*runtimeapi.ContainerEventResponse) error) error {
	s, err := r.events.subscribe()
	if err != nil {
		return err
	}
	defer r.events.unsubscribe(s)
	if subscribed != nil {
		subscribed()
	}
	for {
		// Deliver what is buffered before reporting a failure, so a
		// subscriber sees everything up to the cut.
		select {
		case ev := <-s.ch:
			if err := send(ev); err != nil {
				return err
			}
			continue
		default:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.failed:
			return s.err
		case ev := <-s.ch:
			if err := send(ev); err != nil {
				return err
			}
		}
	}
}
