package pleg

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

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
	at  time.Time
	// newerThan is the status age the asker waits for: a relist that
	// finished while the request was queued may have answered it.
	newerThan time.Time
}

// requestPodRelist queues an on-demand relist of uid, for a caller waiting
// for a status newer than newerThan, unless one is queued.
func (p *PLEG) requestPodRelist(uid string, newerThan time.Time) {
	p.pendingMu.Lock()
	defer p.pendingMu.Unlock()
	if p.pending[uid] {
		return
	}
	select {
	case p.podRelists <- podRelist{uid: uid, at: p.opts.Now(), newerThan: newerThan}:
		p.pending[uid] = true
	default:
		p.metrics.PodRelistsDropped.Inc()
		p.kickRelist()
	}
}

// runPodRelists carries out queued pod relists until ctx ends. A request
// that a successful global relist started after already answered is
// skipped, and so is one whose asker the cache can already answer: a
// second asker that came while the pod was being relisted for the first
// (the planner asks ahead, after its executor call, and again at the next
// sync) is answered by that relist, and needs no second one.
func (p *PLEG) runPodRelists(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-p.podRelists:
			p.pendingMu.Lock()
			delete(p.pending, r.uid)
			p.pendingMu.Unlock()
			p.relistMu.Lock()
			stale := p.lastGoodStart.After(r.at)
			p.relistMu.Unlock()
			if _, answered := p.cache.Peek(r.uid, r.newerThan); !stale && !answered {
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
	lctx, cancel := context.WithTimeout(ctx, p.opts.ListTimeout)
	sandboxes, err := p.opts.Runtime.ListPodSandbox(lctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	var containers []*runtimeapi.Container
	if err == nil {
		containers, err = p.opts.Runtime.ListContainers(lctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	}
	cancel()
	if err != nil {
		p.log.Debug("pod relist: listing the runtime failed", "pod_uid", uid, "err", err)
		return false
	}
	listing := observe.Group(sandboxes, containers)[uid]
	in := p.core.ChangedPod(uid, listing)
	if listing != nil {
		in.Pod, in.Err = p.inspect(ctx, uid, listing, start)
	}
	p.apply(in, start)
	return true
}
