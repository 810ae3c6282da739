package pleg

import (
	"context"

	"github.com/syncpod/syncpod/pleg/evented"
	"github.com/syncpod/syncpod/pleg/termination"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runEvented runs the container-event stream (package evented) wired to
// the PLEG: a confirmed stream switches to evented mode and counts a
// connection; a stream's end switches back to relist mode, and a failure
// is counted and forces a relist.
func (p *PLEG) runEvented(ctx context.Context) error {
	s := &evented.Stream{
		Source:       p.opts.Runtime,
		Required:     p.opts.Evented == EventedOn,
		MaxFailures:  p.opts.EventedMaxFailures,
		RetryDelay:   p.opts.EventedRetryDelay,
		Backoff:      p.opts.EventedBackoff,
		BackoffMax:   p.opts.EventedBackoffMax,
		Confirm:      p.opts.EventedConfirm,
		RelistPeriod: p.relistPeriodName(),
		Now:          p.opts.Now,
		Log:          p.log,
		Confirmed: func() {
			p.metrics.EventedConnections.Inc()
			p.setMode(plegv1.PlegMode_PLEG_MODE_EVENTED)
		},
		Ended: func(failed bool) {
			p.setMode(plegv1.PlegMode_PLEG_MODE_RELIST)
			if failed {
				p.metrics.EventedErrors.Inc()
				p.kickRelist()
			}
		},
		Handle: p.applyEvents,
	}
	return s.Run(ctx)
}

// applyEvents applies a batch of CRI events to the core and records what
// it did.
func (p *PLEG) applyEvents(evs []*runtimeapi.ContainerEventResponse) {
	for _, ev := range evs {
		for _, c := range ev.GetContainersStatuses() {
			termination.AddTerminationMessage(c, p.opts.ReadTail)
		}
	}
	n := p.core.ApplyEvents(evs, p.opts.Now())
	p.metrics.RuntimeEvents.WithLabelValues("ignored").Add(float64(n.Ignored))
	p.metrics.RuntimeEvents.WithLabelValues("applied").Add(float64(n.Applied))
	p.metrics.RuntimeEvents.WithLabelValues("stale").Add(float64(n.Stale))
	for _, lag := range n.Lags {
		p.metrics.EventLag.Observe(lag.Seconds())
	}
	if n.Published > 0 {
		p.log.Debug("applied container events", "events", len(evs), "published", n.Published)
	}
}
