package pleg

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/pleg/diff"
	"github.com/syncpod/syncpod/pleg/observe"
	"github.com/syncpod/syncpod/proto/crilabels"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// inspection is one pod to inspect in a relist and, once done, its result.
type inspection struct {
	uid     string
	listing *observe.Listing // nil: the pod vanished
	events  []diff.Event
	pod     *syncpodv1.ObservedPod
	err     error
	// onDemand: a single-pod relist someone waits for; no POD_SYNC.
	onDemand bool
}

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

	sandboxes, containers, err := p.list(ctx)
	if err != nil {
		p.metrics.RelistErrors.Inc()
		p.log.Warn("relist: listing the runtime failed", "err", err)
		return false
	}
	p.lastRelist.Store(start.UnixNano())
	p.lastGoodStart = start

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

	p.stateMu.Lock()
	uids := slices.Collect(maps.Keys(p.records))
	for uid := range listings {
		if _, ok := p.records[uid]; !ok {
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids)
	var todo []*inspection
	for _, uid := range uids {
		l := listings[uid]
		events := diff.Compute(uid, p.records[uid], l.Record())
		if len(events) > 0 || p.reinspect[uid] {
			todo = append(todo, &inspection{uid: uid, listing: l, events: events})
		}
	}
	p.stateMu.Unlock()
	p.inspectAll(ctx, todo, start)
	p.stateMu.Lock()
	// What events said before this relist started is in its picture now.
	maps.DeleteFunc(p.eventAt, func(_ string, t time.Time) bool { return !t.After(start) })
	maps.DeleteFunc(p.podEventAt, func(_ string, t time.Time) bool { return !t.After(start) })
	p.stateMu.Unlock()
	p.cache.UpdateTime(start)
	return true
}

func (p *PLEG) list(ctx context.Context) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	lctx, cancel := context.WithTimeout(ctx, p.opts.ListTimeout)
	defer cancel()
	sandboxes, err := p.opts.Runtime.ListPodSandbox(lctx, &runtimeapi.PodSandboxFilter{LabelSelector: crilabels.ManagedSelector()})
	if err != nil {
		return nil, nil, fmt.Errorf("ListPodSandbox: %w", err)
	}
	containers, err := p.opts.Runtime.ListContainers(lctx, &runtimeapi.ContainerFilter{LabelSelector: crilabels.ManagedSelector()})
	if err != nil {
		return nil, nil, fmt.Errorf("ListContainers: %w", err)
	}
	return sandboxes, containers, nil
}

// inspectAll inspects todo with bounded parallelism and applies each
// result as it arrives.
func (p *PLEG) inspectAll(ctx context.Context, todo []*inspection, start time.Time) {
	if len(todo) == 0 {
		return
	}
	results := make(chan *inspection, len(todo))
	sem := make(chan struct{}, p.opts.InspectParallelism)
	go func() {
		for _, in := range todo {
			if in.listing == nil { // vanished: nothing to read
				results <- in
				continue
			}
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				in.pod, in.err = p.inspect(ctx, in.uid, in.listing, start)
				results <- in
			}()
		}
	}()
	for range todo {
		p.apply(<-results, start)
	}
}

// inspect reads the full status of one pod, bounded by the inspect
// timeout.
func (p *PLEG) inspect(ctx context.Context, uid string, l *observe.Listing, start time.Time) (*syncpodv1.ObservedPod, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.InspectTimeout)
	defer cancel()
	in := observe.Inspected{SandboxOf: make(map[string]string, len(l.Containers))}
	// An object removed between the list and its status call (the
	// executor cleaning up) is simply gone: the next relist reports its
	// removal. Only other errors fail the inspection.
	for _, s := range l.Sandboxes {
		resp, err := p.opts.Runtime.PodSandboxStatus(ctx, s.GetId(), false)
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("PodSandboxStatus %s: %w", s.GetId(), err)
		}
		in.Sandboxes = append(in.Sandboxes, resp.GetStatus())
	}
	for _, c := range l.Containers {
		resp, err := p.opts.Runtime.ContainerStatus(ctx, c.GetId(), false)
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ContainerStatus %s: %w", c.GetId(), err)
		}
		observe.AddTerminationMessage(resp.GetStatus(), p.opts.ReadTail)
		in.Containers = append(in.Containers, resp.GetStatus())
		in.SandboxOf[c.GetId()] = c.GetPodSandboxId()
	}
	return observe.Pod(uid, in, start), nil
}

// apply writes one inspection into the cache and the records and
// publishes its events. The relist's picture dates from its
// start: for an object a runtime event told about after that start, the
// event's word stands (mergeRelist), and the events are recomputed
// against the record as it is now, so a relist neither undoes a newer
// event-derived state nor publishes a transition out of order with the
// events already published (issue 10: CONTAINER_DIED then
// CONTAINER_STARTED for one container).
func (p *PLEG) apply(in *inspection, start time.Time) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	now := p.opts.Now()
	if in.err != nil {
		p.metrics.InspectionErrors.Inc()
		p.reinspect[in.uid] = true
		p.log.Warn("relist: cannot inspect pod; will re-inspect and regenerate its events next relist",
			"pod_uid", in.uid, "events", len(in.events), "err", in.err)
		return
	}
	delete(p.reinspect, in.uid)
	pod := in.pod
	if pod == nil { // vanished
		pod = &syncpodv1.ObservedPod{Uid: in.uid}
	}
	rec := in.listing.Record()
	if rec == nil {
		rec = &diff.Record{UID: in.uid}
	}
	modified := start
	if evAt := p.podEventAt[in.uid]; evAt.After(start) {
		cached, at := p.cache.Get(in.uid)
		pod, rec = p.mergeRelist(start, pod, rec, cached, p.records[in.uid])
		modified = evAt
		if at.After(evAt) {
			modified = at
		}
		pod.ObservedAt = timestamppb.New(modified)
	}
	events := diff.Compute(in.uid, p.records[in.uid], rec)
	if len(pod.GetSandboxes()) == 0 && len(pod.GetContainers()) == 0 {
		p.cache.DeleteIfOlder(in.uid, modified)
		pod = &syncpodv1.ObservedPod{Uid: in.uid}
	} else if modified.Equal(start) {
		p.cache.SetIfNewer(in.uid, pod, start)
	} else {
		p.cache.Set(in.uid, pod, modified)
	}
	if len(rec.Entries) == 0 {
		delete(p.records, in.uid)
	} else {
		p.records[in.uid] = rec
	}
	if len(events) == 0 && !in.onDemand && in.listing != nil {
		events = []diff.Event{{PodUID: in.uid, Type: plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_POD_SYNC}}
	}
	for _, e := range events {
		if e.Type != plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED {
			continue
		}
		for _, c := range pod.GetContainers() {
			if c.GetId() == e.ContainerID {
				p.log.Debug("container died", "pod_uid", in.uid, "container_id", c.GetId(), "container", c.GetName(),
					"exit_code", c.GetExitCode(), "reason", c.GetReason())
			}
		}
	}
	p.publish(events, pod, now)
}

// mergeRelist combines a relist's status and record of a pod (as of
// start) with the cached status and current record, which runtime events
// applied after start have changed: each sandbox or container an event
// told about after start keeps its event-derived state (or absence);
// every other one takes the relist's. Neither input is modified. Callers
// hold stateMu.
func (p *PLEG) mergeRelist(start time.Time, relisted *syncpodv1.ObservedPod, relistRec *diff.Record,
	cached *syncpodv1.ObservedPod, curRec *diff.Record) (*syncpodv1.ObservedPod, *diff.Record) {
	newer := func(id string) bool { return p.eventAt[id].After(start) }
	pod := &syncpodv1.ObservedPod{
		Uid: relisted.GetUid(), Name: cmp.Or(relisted.GetName(), cached.GetName()),
		Namespace: cmp.Or(relisted.GetNamespace(), cached.GetNamespace()),
	}
	for _, s := range relisted.GetSandboxes() {
		if !newer(s.GetId()) {
			pod.Sandboxes = append(pod.Sandboxes, s)
		}
	}
	for _, s := range cached.GetSandboxes() {
		if newer(s.GetId()) {
			pod.Sandboxes = append(pod.Sandboxes, s)
		}
	}
	for _, c := range relisted.GetContainers() {
		if !newer(c.GetId()) {
			pod.Containers = append(pod.Containers, c)
		}
	}
	for _, c := range cached.GetContainers() {
		if newer(c.GetId()) {
			pod.Containers = append(pod.Containers, c)
		}
	}
	observe.Sort(pod)
	rec := &diff.Record{UID: relistRec.UID}
	for _, e := range relistRec.Entries {
		if !newer(e.ID) {
			rec.Entries = append(rec.Entries, e)
		}
	}
	if curRec != nil {
		for _, e := range curRec.Entries {
			if newer(e.ID) {
				rec.Entries = append(rec.Entries, e)
			}
		}
	}
	return pod, rec
}
