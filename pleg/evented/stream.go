package evented

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Stream keeps the runtime's container-event stream open for the PLEG
// with its retry policy. Every field but the hooks' optional ones
// is required; durations and counts are the PLEG's (see pleg.Options).
type Stream struct {
	// Source is the runtime.
	Source Source
	// Required: a runtime without GetContainerEvents is an error
	// (--evented=on), not a quiet fallback to relist mode.
	Required bool
	// MaxFailures, RetryDelay, Backoff, BackoffMax and Confirm are
	// pleg.Options' Evented* fields.
	MaxFailures int
	RetryDelay  time.Duration
	Backoff     time.Duration
	BackoffMax  time.Duration
	Confirm     time.Duration
	// RelistPeriod is only logged: the period the PLEG falls back to
	// ("adaptive" when it follows what relists cost).
	RelistPeriod string
	// Now is the clock; Log receives the stream's logs.
	Now func() time.Time
	Log *slog.Logger

	// Confirmed is called once per stream that stays open Confirm long or
	// delivers an event: the PLEG is in evented mode.
	Confirmed func()
	// Ended is called each time a stream ends, before any retry: the PLEG
	// is in relist mode. failed is false for Unimplemented, which is not
	// retried; a failure forces a relist.
	Ended func(failed bool)
	// Handle receives the events of a stream in order, in batches.
	Handle func([]*runtimeapi.ContainerEventResponse)
}

// Run consumes streams until ctx is done (it returns nil) or, with
// Required, the runtime answers Unimplemented. Each failure is followed
// by a retry: the first MaxFailures-1 in a row after RetryDelay; from the
// MaxFailures-th on, after a backoff doubling from Backoff up to
// BackoffMax, instead of giving evented mode up for good as the kubelet
// does. A stream that held longer than BackoffMax resets the count.
// Unimplemented (containerd 1.6) ends Run at once.
func (s *Stream) Run(ctx context.Context) error {
	failures := 0
	for {
		opened := s.Now()
		err := s.consumeOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		unimplemented := status.Code(err) == codes.Unimplemented
		s.Ended(!unimplemented)
		if unimplemented {
			if s.Required {
				return fmt.Errorf("evented PLEG required (--evented=on) but the runtime does not offer GetContainerEvents: %w", err)
			}
			s.Log.Info("runtime does not offer CRI GetContainerEvents; using relist mode",
				"relist_period", s.RelistPeriod, "reason", err.Error())
			return nil
		}
		if s.Now().Sub(opened) > s.BackoffMax {
			failures = 0 // the stream held: this is a fresh failure
		}
		failures++
		delay := s.retryDelay(failures)
		if failures >= s.MaxFailures {
			s.Log.Warn("container event stream failed too often; relist mode until it is retried",
				"failures", failures, "retry_in", delay.String(), "relist_period", s.RelistPeriod, "err", err)
		} else {
			s.Log.Warn("container event stream failed; relisting and retrying",
				"failures", failures, "retry_in", delay.String(), "err", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// retryDelay is the pause after the failures-th stream failure in a row.
func (s *Stream) retryDelay(failures int) time.Duration {
	if failures < s.MaxFailures {
		return s.RetryDelay
	}
	d := s.Backoff
	for range failures - s.MaxFailures {
		if d >= s.BackoffMax {
			break
		}
		d *= 2
	}
	return min(d, s.BackoffMax)
}

// consumeOnce runs one stream until it fails. Once it returns, nothing of
// this stream can call Confirmed any more: the confirmation timer may fire
// at the very moment the stream fails, and its late confirm would
// otherwise overwrite Run's fallback to relist mode.
func (s *Stream) consumeOnce(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once     sync.Once
		mu       sync.Mutex
		finished bool
	)
	defer func() {
		mu.Lock()
		finished = true
		mu.Unlock()
	}()
	confirm := func() {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		once.Do(s.Confirmed)
	}
	established := func() {
		go func() {
			t := time.NewTimer(s.Confirm)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
				confirm()
			}
		}()
	}
	return Consume(ctx, s.Source, func(evs []*runtimeapi.ContainerEventResponse) {
		confirm()
		s.Handle(evs)
	}, established)
}
