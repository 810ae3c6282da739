package pleg

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/syncpod/syncpod/pleg/diff"
	"github.com/syncpod/syncpod/pleg/evented"
	"github.com/syncpod/syncpod/pleg/observe"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runEvented consumes the runtime's container-event stream: a
// stream that is confirmed switches the PLEG to evented mode; each failure
// is counted, switches back to relist mode and forces a relist.
// The first EventedMaxFailures-1 retries follow each failure after
// EventedRetryDelay; from the EventedMaxFailures-th failure in a row on,
// the PLEG stays in relist mode and retries after a backoff doubling up to
// EventedBackoffMax, instead of giving evented mode up for good as the
// kubelet does. Unimplemented (containerd 1.6) is a quiet fallback to
// relist mode for good, except with --evented=on.
func (p *PLEG) runEvented(ctx context.Context) error {
	failures := 0
	for {
		opened := p.opts.Now()
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
		if p.opts.Now().Sub(opened) > p.opts.EventedBackoffMax {
			failures = 0 // the stream held: this is a fresh failure
		}
		failures++
		p.metrics.EventedErrors.Inc()
		p.kickRelist() // a failure forces a relist
		delay := p.retryDelay(failures)
		if failures >= p.opts.EventedMaxFailures {
			p.log.Warn("container event stream failed too often; relist mode until it is retried",
				"failures", failures, "retry_in", delay.String(), "relist_period", p.opts.RelistPeriod.String(), "err", err)
		} else {
			p.log.Warn("container event stream failed; relisting and retrying",
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
func (p *PLEG) retryDelay(failures int) time.Duration {
	if failures < p.opts.EventedMaxFailures {
		return p.opts.EventedRetryDelay
	}
	d := p.opts.EventedBackoff
	for range failures - p.opts.EventedMaxFailures {
		if d >= p.opts.EventedBackoffMax {
			break
		}
		d *= 2
	}
	return min(d, p.opts.EventedBackoffMax)
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
	return evented.Consume(ctx, p.opts.Runtime, func(evs []*runtimeapi.ContainerEventResponse) {
		confirm()
		p.applyEvents(evs)
	}, established)
}

// applyEvents applies a batch of CRI events in order to the cache and the
// records, each in O(statuses it carries), then publishes what they map
// to, each pod's status built once for the batch (a later, never an
// older, status than the event's own).
func (p *PLEG) applyEvents(evs []*runtimeapi.ContainerEventResponse) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	type timed struct {
		diff.Event
		at time.Time
	}
	var out []timed
	now := p.opts.Now()
	for _, ev := range evs {
		for _, c := range ev.GetContainersStatuses() {
			observe.AddTerminationMessage(c, p.opts.ReadTail)
		}
		ch := evented.Decode(ev)
		if ch.UID == "" {
			p.metrics.RuntimeEvents.WithLabelValues("ignored").Inc()
			continue
		}
		var removed []string
		if ch.SandboxDeleted {
			// The sandbox's containers go with it: find them (O(pod), once
			// per sandbox) for the record.
			if pod, _ := p.cache.Get(ch.UID); pod != nil {
				for _, c := range pod.GetContainers() {
					if c.GetSandboxId() == ch.ContainerID {
						removed = append(removed, c.GetId())
					}
				}
			}
		}
		taken, forward := evented.Apply(p.cache, ch)
		if taken {
			p.metrics.RuntimeEvents.WithLabelValues("applied").Inc()
			p.metrics.EventLag.Observe(max(now.Sub(ch.Time), 0).Seconds())
		} else {
			p.metrics.RuntimeEvents.WithLabelValues("stale").Inc()
		}
		if taken || ch.Deleted {
			p.noteEvent(ch, taken, removed)
		}
		for _, e := range forward {
			out = append(out, timed{e, ch.Time})
		}
	}
	if len(out) == 0 {
		return
	}
	status := map[string]*syncpodv1.ObservedPod{}
	for _, e := range out {
		pod, ok := status[e.PodUID]
		if !ok {
			if pod, _ = p.cache.Get(e.PodUID); pod == nil {
				pod = &syncpodv1.ObservedPod{Uid: e.PodUID}
			}
			status[e.PodUID] = pod
		}
		p.publish([]diff.Event{e.Event}, pod, e.at)
	}
	p.log.Debug("applied container events", "events", len(evs), "published", len(out))
}

// noteEvent records what an applied event says in the pod's diff record
// and the event times, so a relist that started earlier neither undoes it
// nor publishes its transitions again. A stale DELETED event (taken false)
// only removes. Callers hold stateMu.
func (p *PLEG) noteEvent(ch evented.Change, taken bool, removedWithSandbox []string) {
	rec := p.records[ch.UID]
	if rec == nil {
		rec = &diff.Record{UID: ch.UID}
		p.records[ch.UID] = rec
	}
	if taken {
		for _, e := range ch.Entries {
			rec.Set(e)
			p.eventAt[e.ID] = ch.Time
		}
	}
	for _, ids := range [][]string{ch.Removed, removedWithSandbox} {
		for _, id := range ids {
			rec.Remove(id)
			if ch.Time.After(p.eventAt[id]) {
				p.eventAt[id] = ch.Time
			}
		}
	}
	if ch.Time.After(p.podEventAt[ch.UID]) {
		p.podEventAt[ch.UID] = ch.Time
	}
	if len(rec.Entries) == 0 {
		delete(p.records, ch.UID)
	}
}
