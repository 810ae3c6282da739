package pleg

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// WakeSource is the runtime's own event service, whose task events wake
// relists in relist mode (R-34; package wake's Source, on containerd).
type WakeSource interface {
	// Watch subscribes and calls wake for every event that should wake a
	// relist until the stream ends, and returns its error: codes.Unimplemented
	// when the runtime has no such service.
	Watch(ctx context.Context, wake func()) error
}

// WakeUp reports whether the runtime's event stream is up and waking
// relists: the relist-mode period is then the safety net
// (WakePeriod).
func (p *PLEG) WakeUp() bool { return p.wakeUp.Load() }

// runWake keeps the runtime's event stream open while the PLEG relists
// until ctx is done. A stream that stays open WakeConfirm long, or
// delivers an event, is up: the period becomes WakePeriod until it ends.
// Every end is retried: a failure after WakeRetry, doubling to
// WakeBackoffMax while streams fail before they are up; a runtime without
// the service (Unimplemented) every WakeBackoffMax. That the stream is up
// or lost is logged at info, as is the first Unimplemented.
func (p *PLEG) runWake(ctx context.Context) {
	delay := p.opts.WakeRetry
	saidUnimplemented := false
	for {
		wasUp, err := p.watchOnce(ctx)
		if ctx.Err() != nil {
			if wasUp {
				p.setWake(false, nil)
			}
			return
		}
		if wasUp {
			p.setWake(false, err)
			delay = p.opts.WakeRetry
		}
		wait := delay
		switch {
		case status.Code(err) == codes.Unimplemented:
			if !saidUnimplemented {
				p.log.Info("runtime offers no event service to wake relists; relisting at the adaptive period",
					"relist_period", p.relistPeriodName(), "reason", err.Error())
				saidUnimplemented = true
			}
			wait = p.opts.WakeBackoffMax
		default:
			p.log.Debug("runtime event stream failed", "retry_in", wait.String(), "err", err)
			if !wasUp {
				delay = min(2*delay, p.opts.WakeBackoffMax)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// watchOnce runs one stream until it ends and reports whether it was up.
// Once it returns nothing of this stream can mark the stream up: the
// confirmation may fire at the very moment the stream fails.
func (p *PLEG) watchOnce(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		up, done bool
	)
	confirm := func() {
		mu.Lock()
		defer mu.Unlock()
		if up || done {
			return
		}
		up = true
		p.setWake(true, nil)
	}
	t := time.AfterFunc(p.opts.WakeConfirm, confirm)
	defer t.Stop()
	err := p.opts.Wake.Watch(ctx, func() {
		// Counted before confirm's kick: a relist it starts may publish
		// what the event woke it for.
		p.metrics.Wakes.Inc()
		confirm()
		p.wakeRelist()
	})
	mu.Lock()
	done = true
	wasUp := up
	mu.Unlock()
	return wasUp, err
}

// setWake records that the stream is up or lost, logs it, and makes the
// relist loop re-read its period.
func (p *PLEG) setWake(up bool, err error) {
	p.wakeUp.Store(up)
	p.metrics.WakeStream.Set(b2f(up))
	if up {
		p.log.Info("runtime event stream up: its task events wake relists", "safety_net_period", p.relistModePeriod().String())
	} else if err != nil {
		p.log.Info("runtime event stream lost; relisting at the adaptive period until it is back",
			"relist_period", p.relistPeriodName(), "err", err.Error())
	}
	p.kickRelist()
}

// wakeRelist asks the relist loop for a relist now and its follow-ups
// (runRelist). Wake-ups arriving while a relist runs make exactly one
// more, whose follow-ups replace those of the one before.
func (p *PLEG) wakeRelist() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
