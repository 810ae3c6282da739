package pleg

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/syncpod/syncpod/pleg/evented"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// bumpInterval: while the event stream is up, the cache's global
// timestamp moves forward this often, so newer-than waiters are answered
// without waiting for the slow safety-net relist.
const bumpInterval = 2 * time.Second

// runEvented consumes the runtime's container-event stream: a
// stream that is confirmed switches the PLEG to evented mode; each failure
// is counted, switches back to relist mode and forces a relist; after
// EventedMaxFailures it gives up for good. Unimplemented (containerd 1.6)
// is a quiet fallback to relist mode, except with --evented=on.
func (p *PLEG) runEvented(ctx context.Context) error {
	failures := 0
	for {
		err := p.consumeOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		p.setMode(plegv1.PlegMode_PLEG_MODE_RELIST)
		if status.Code(err) == codes.Unimplemented {
			if p.opts.Evented == EventedOn {
				return fmt.Errorf("evented PLEG required (--evented=on) but the runtime does not offer GetContainerEvents: %w", err)
			}
			p.log.Info("runtime does not offer CRI GetContainerEvents; using relist mode",
				"relist_period", p.opts.RelistPeriod.String(), "reason", err.Error())
			return nil
		}
		failures++
		p.metrics.EventedErrors.Inc()
		p.kickRelist() // a failure forces a relist
		if failures >= p.opts.EventedMaxFailures {
			p.log.Warn("container event stream failed too often; falling back to relist mode for good",
				"failures", failures, "relist_period", p.opts.RelistPeriod.String(), "err", err)
			return nil
		}
		p.log.Warn("container event stream failed; relisting and retrying", "failures", failures, "err", err)
		t := time.NewTimer(p.opts.EventedRetryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// consumeOnce runs one stream until it fails. Once it returns, nothing of
// this stream can switch the mode to EVENTED any more: the confirmation
// timer may fire at the very moment the stream fails, and its late
// confirm would otherwise overwrite runEvented's fallback to RELIST.
func (p *PLEG) consumeOnce(ctx context.Context) error {
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
		once.Do(func() {
			p.metrics.EventedConnections.Inc()
			p.setMode(plegv1.PlegMode_PLEG_MODE_EVENTED)
			go p.bumpLoop(ctx)
		})
	}
	established := func() {
		go func() {
			t := time.NewTimer(p.opts.EventedConfirm)
			defer t.Stop()
			select {
			case <-ctx.Done():
			case <-t.C:
				confirm()
			}
		}()
	}
	return evented.Consume(ctx, p.opts.Runtime, func(ev *runtimeapi.ContainerEventResponse) {
		confirm()
		p.applyEvent(ev)
	}, established)
}

// bumpLoop moves the cache's global timestamp forward while the stream
// is up (until ctx, the stream's, is done).
func (p *PLEG) bumpLoop(ctx context.Context) {
	t := time.NewTicker(bumpInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.cache.UpdateTime(p.opts.Now())
		}
	}
}

// applyEvent updates the cache from one CRI event and publishes what it
// maps to.
func (p *PLEG) applyEvent(ev *runtimeapi.ContainerEventResponse) {
	res := evented.Apply(p.cache, ev)
	if res.UID == "" || len(res.Events) == 0 {
		return
	}
	if res.Observed == nil {
		if cur, _ := p.cache.Get(res.UID); cur != nil {
			res.Observed = cur
		}
	}
	p.publish(res.Events, res.Observed, res.Time)
}
