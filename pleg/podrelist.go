package pleg

import (
	"context"
	"time"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/observe"
)

// PodRelistQueue bounds the queue of on-demand pod relists (the kubelet's
// is 200). A request beyond it is counted and answered by a global relist
// run at once instead: in evented mode the next periodic one is minutes
// away, and nothing else moves the cache's freshness forward.
const PodRelistQueue = 200

type podRelist struct {
	uid string
}

// requestPodRelist queues an on-demand relist of uid for a caller waiting
// for a status newer than newerThan. A request for a pod already queued
// joins it: the queued request then waits for the newest status any of
// its callers waits for.
func (p *PLEG) requestPodRelist(uid string, newerThan time.Time) {
	p.pendingMu.Lock()
	defer p.pendingMu.Unlock()
	if t, queued := p.pending[uid]; queued {
		if newerThan.After(t) {
			p.pending[uid] = newerThan
		}
		return
	}
	select {
	case p.podRelists <- podRelist{uid: uid}:
		p.pending[uid] = newerThan
	default:
		p.metrics.PodRelistsDropped.Inc()
		p.kickRelist()
	}
}

// runPodRelists carries out queued pod relists until ctx ends. A request
// whose callers the cache can already answer when it comes up is skipped:
// a relist that ran while it was queued (a global one, or this pod's for
// an earlier caller: the planner asks ahead after its executor call and
// again at its next sync) or an event answered them. It is judged by the
// newest status any of its callers waits for, so a caller that joined a
// queued request is never left to wait for the next global relist.
func (p *PLEG) runPodRelists(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-p.podRelists:
			p.pendingMu.Lock()
			newerThan := p.pending[r.uid]
			delete(p.pending, r.uid)
			p.pendingMu.Unlock()
			if _, answered := p.cache.Peek(r.uid, newerThan); !answered {
				p.RelistPod(ctx, r.uid)
			}
		}
	}
}

// RelistPod relists one pod: list its sandboxes and containers by
// uid label, diff against its record, inspect it and apply the result like
// a relist would, without the POD_SYNC event (the asker reads the status
// itself). It reports whether the list calls succeeded.
func (p *PLEG) RelistPod(ctx context.Context, uid string) bool {
	p.relistMu.Lock()
	defer p.relistMu.Unlock()
	start := p.opts.Now()
	defer func() { p.metrics.PodRelistDuration.Observe(p.opts.Now().Sub(start).Seconds()) }()

	sel := crilabels.ManagedSelector()
	sel[crilabels.PodUID] = uid
	sandboxes, containers, err := p.listBoth(ctx, sel)
	if err != nil {
		p.log.Debug("pod relist: listing the runtime failed", "pod_uid", uid, "err", err)
		return false
	}
	listing := observe.Group(sandboxes, containers)[uid]
	in := p.core.ChangedPod(uid, listing)
	if listing != nil {
		var straggled bool
		in.Pod, in.Err, straggled = p.inspectPatiently(ctx, uid, listing, start, podRelistCalls, func() {})
		if straggled {
			return true // its callers wait on; the pod is inspected again
		}
	}
	p.apply(in, start)
	return true
}
