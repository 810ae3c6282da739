package pleg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/pleg/core"
	"github.com/syncpod/syncpod/pleg/termination"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Relist runs one relist: list, diff every pod against
// its record, inspect the pods with events or marked for re-inspection (in
// parallel, each bounded by the inspect timeout; each pod's result is
// applied as soon as it is in, so a slow pod delays nobody else's events),
// then stamp the cache with the relist's start time. It reports whether
// the list calls succeeded.
func (p *PLEG) Relist(ctx context.Context) bool {
	p.relistMu.Lock()
	defer p.relistMu.Unlock()
	start := p.opts.Now()
	if !p.lastStart.IsZero() {
		p.metrics.RelistInterval.Observe(start.Sub(p.lastStart).Seconds())
	}
	p.lastStart = start
	defer func() { p.metrics.RelistDuration.Observe(p.opts.Now().Sub(start).Seconds()) }()
	// What the relist costs for being periodic: the lists and
	// the diff, which every relist repeats; not the inspections, which
	// each change costs once whatever the period.
	cpu0 := p.opts.CPUTime()
	periodic := func(failed bool) {
		p.relisted(p.opts.Now().Sub(start)+max(p.opts.CPUTime()-cpu0, 0), failed)
	}
	sandboxes, containers, err := p.list(ctx)
	if err != nil {
		periodic(true)
		p.metrics.RelistErrors.Inc()
		p.log.Warn("relist: listing the runtime failed", "err", err)
		return false
	}
	p.lastRelist.Store(start.UnixNano())

	listings := observe.Group(sandboxes, containers)
	var runPods, runContainers int
	for _, l := range listings {
		s, c := l.Running()
		if s > 0 {
			runPods++
		}
		runContainers += c
	}
	p.metrics.RunningPods.Set(float64(runPods))
	p.metrics.RunningContainers.Set(float64(runContainers))

	todo := p.core.Changed(listings)
	periodic(false)
	p.inspectAll(ctx, todo, start)
	p.core.Relisted(start)
	return true
}

func (p *PLEG) list(ctx context.Context) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	return p.listBoth(ctx, crilabels.ManagedSelector())
}

// listBoth lists the sandboxes and the containers matching sel, the two
// calls at once (each is a round trip to the runtime, and neither needs
// the other's answer: done one after the other, they were half of an
// on-demand pod relist on containerd 2.4).
func (p *PLEG) listBoth(ctx context.Context, sel map[string]string) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.ListTimeout)
	defer cancel()
	var (
		sandboxes []*runtimeapi.PodSandbox
		sbErr     error
		done      = make(chan struct{})
	)
	go func() {
		defer close(done)
		sandboxes, sbErr = p.opts.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	}()
	containers, err := p.opts.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	<-done
	if sbErr != nil {
		return nil, nil, fmt.Errorf("ListPodSandbox: %w", sbErr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("ListContainers: %w", err)
	}
	return sandboxes, containers, nil
}

// inspectAll inspects todo with bounded parallelism and applies each
// result as it arrives.
func (p *PLEG) inspectAll(ctx context.Context, todo []*core.Inspection, start time.Time) {
	if len(todo) == 0 {
		return
	}
	results := make(chan *core.Inspection, len(todo))
	sem := make(chan struct{}, p.opts.InspectParallelism)
	go func() {
		for _, in := range todo {
			if in.Listing == nil { // vanished: nothing to read
				results <- in
				continue
			}
			sem <- struct{}{}
			go func() {
				// One status call at a time within a pod: the pods
				// already run InspectParallelism at once, which is the
				// bound the flag promises on the runtime. A straggler
				// gives its slot back (its calls are one per pod at
				// most, and the relist must not wait on them).
				var straggled bool
				in.Pod, in.Err, straggled = p.inspectPatiently(ctx, in.UID, in.Listing, start, 1, func() { <-sem })
				if straggled {
					in = nil
				}
				results <- in
			}()
		}
	}()
	for range todo {
		if in := <-results; in != nil {
			p.apply(in, start)
		}
	}
}

// errStraggled is the outcome of an inspection that outlasted the
// inspect patience.
var errStraggled = errors.New("the inspection outlasted the inspect patience; its result is dropped")

// inspectPatiently inspects a pod (inspect), waiting at most the inspect
// patience, and calls release once it no longer waits. An inspection still running then (a
// runtime whose status calls hang for this pod) is left to end in the
// background, bounded by the inspect timeout, and straggled is true: the
// relist goes on without the pod, so one pod's hung calls hold up no
// other pod's events, no single-pod relist and no later relist (nor the
// health, R-13.6). No other inspection of a straggling pod starts (a call
// for it answers straggled at once): calls do not pile up on a hung
// runtime. When the straggler ends, its result, older than the relists
// that went on meanwhile, is dropped and the pod is marked for
// re-inspection, as after a failed inspection: its cached status
// stays what it was until an inspection succeeds.
func (p *PLEG) inspectPatiently(ctx context.Context, uid string, l *observe.Listing, start time.Time, calls int, release func()) (*syncpodv1.ObservedPod, error, bool) {
	if p.opts.InspectPatience >= p.opts.InspectTimeout {
		pod, err := p.inspect(ctx, uid, l, start, calls)
		release()
		return pod, err, false
	}
	p.stragglersMu.Lock()
	busy := p.stragglers[uid]
	p.stragglersMu.Unlock()
	if busy {
		release()
		return nil, nil, true
	}
	type result struct {
		pod *syncpodv1.ObservedPod
		err error
	}
	done := make(chan result, 1)
	go func() {
		pod, err := p.inspect(ctx, uid, l, start, calls)
		done <- result{pod, err}
	}()
	t := time.NewTimer(p.opts.InspectPatience)
	defer t.Stop()
	select {
	case r := <-done:
		release()
		return r.pod, r.err, false
	case <-t.C:
	}
	p.stragglersMu.Lock()
	p.stragglers[uid] = true
	p.stragglersMu.Unlock()
	release()
	p.metrics.InspectionStragglers.Inc()
	p.log.Warn("relist: a pod's inspection outlasts the inspect patience; going on without it", "pod_uid", uid, "patience", p.opts.InspectPatience)
	go func() {
		<-done
		p.stragglersMu.Lock()
		delete(p.stragglers, uid)
		p.stragglersMu.Unlock()
		p.apply(&core.Inspection{UID: uid, Err: errStraggled}, start)
	}()
	return nil, nil, true
}

// podRelistCalls bounds the status calls a single-pod relist makes at
// once.
const podRelistCalls = 4

// inspect reads the full status of one pod, bounded by the inspect
// timeout: the status of each of its sandboxes and containers, up to
// calls at once (a pod relist's inspection of a sandbox and its container
// is two round trips done one after the other, one done together).
func (p *PLEG) inspect(ctx context.Context, uid string, l *observe.Listing, start time.Time, calls int) (*syncpodv1.ObservedPod, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.InspectTimeout)
	defer cancel()
	sandboxes := make([]*runtimeapi.PodSandboxStatus, len(l.Sandboxes))
	containers := make([]*runtimeapi.ContainerStatus, len(l.Containers))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(calls)
	for i, s := range l.Sandboxes {
		readStatus(g, sandboxes, i, "PodSandboxStatus", s.GetId(), func() (*runtimeapi.PodSandboxStatus, error) {
			resp, err := p.opts.Runtime.PodSandboxStatus(gctx, s.GetId(), false)
			return resp.GetStatus(), err
		})
	}
	for i, c := range l.Containers {
		readStatus(g, containers, i, "ContainerStatus", c.GetId(), func() (*runtimeapi.ContainerStatus, error) {
			resp, err := p.opts.Runtime.ContainerStatus(gctx, c.GetId(), false)
			if err == nil {
				termination.AddTerminationMessage(resp.GetStatus(), p.opts.ReadTail)
			}
			return resp.GetStatus(), err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	in := observe.Inspected{SandboxOf: make(map[string]string, len(l.Containers))}
	for _, s := range sandboxes {
		if s != nil {
			in.Sandboxes = append(in.Sandboxes, s)
		}
	}
	for i, c := range containers {
		if c != nil {
			in.Containers = append(in.Containers, c)
			in.SandboxOf[c.GetId()] = l.Containers[i].GetPodSandboxId()
		}
	}
	return observe.Pod(uid, in, start), nil
}

// readStatus runs call in g and keeps its answer as out[i]. An object
// removed between the list and its status call (the executor cleaning up)
// is simply gone, out[i] left nil: the next relist reports its removal.
// Only other errors fail the inspection.
func readStatus[T any](g *errgroup.Group, out []*T, i int, what, id string, call func() (*T, error)) {
	g.Go(func() error {
		st, err := call()
		switch {
		case status.Code(err) == codes.NotFound:
			return nil
		case err != nil:
			return fmt.Errorf("%s %s: %w", what, id, err)
		}
		out[i] = st
		return nil
	})
}

// apply applies one inspection to the core and logs and counts what it
// did.
func (p *PLEG) apply(in *core.Inspection, start time.Time) {
	res := p.core.Apply(in, start, p.opts.Now())
	if res.Failed {
		p.metrics.InspectionErrors.Inc()
		p.log.Warn("relist: cannot inspect pod; will re-inspect and regenerate its events next relist",
			"pod_uid", in.UID, "events", len(in.Events), "err", in.Err)
		return
	}
	for _, e := range res.Events {
		if e.Type != plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED {
			continue
		}
		for _, c := range res.Pod.GetContainers() {
			if c.GetId() == e.ContainerID {
				p.log.Debug("container died", "pod_uid", in.UID, "container_id", c.GetId(), "container", c.GetName(),
					"exit_code", c.GetExitCode(), "reason", c.GetReason())
			}
		}
	}
}
