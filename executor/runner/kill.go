package runner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/syncpod/syncpod/cri/crilabels"

	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// GracePeriod is the stop grace period in seconds for a container of pod
// killed for reason: the pod's deletion grace period if set;
// else the probe's own grace period for probe kills; else the pod's
// termination grace period (DefaultGracePeriod when unset); never below
// MinGracePeriod. c may be nil (a container no longer in the spec).
func GracePeriod(pod *syncpodv1.Pod, c *syncpodv1.Container, reason syncpodv1.KillReason) int64 {
	g := DefaultGracePeriod
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		g = pod.GetDeletionGracePeriodSeconds()
	case reason == syncpodv1.KillReason_KILL_REASON_STARTUP_PROBE && c.GetStartupProbe() != nil && c.GetStartupProbe().TerminationGracePeriodSeconds != nil:
		g = c.GetStartupProbe().GetTerminationGracePeriodSeconds()
	case reason == syncpodv1.KillReason_KILL_REASON_LIVENESS_PROBE && c.GetLivenessProbe() != nil && c.GetLivenessProbe().TerminationGracePeriodSeconds != nil:
		g = c.GetLivenessProbe().GetTerminationGracePeriodSeconds()
	case pod.GetSpec().TerminationGracePeriodSeconds != nil:
		g = pod.GetSpec().GetTerminationGracePeriodSeconds()
	}
	return max(g, MinGracePeriod)
}

// findContainer returns the spec of the container named name (init,
// regular or ephemeral), whether it is an init container, and its index in
// its list.
func findContainer(pod *syncpodv1.Pod, name string) (c *syncpodv1.Container, init bool, index int) {
	for i, ic := range pod.GetSpec().GetInitContainers() {
		if ic.GetName() == name {
			return ic, true, i
		}
	}
	for i, rc := range pod.GetSpec().GetContainers() {
		if rc.GetName() == name {
			return rc, false, i
		}
	}
	for i, ec := range pod.GetSpec().GetEphemeralContainers() {
		if ec.GetName() == name {
			return ec, false, i
		}
	}
	return nil, false, -1
}

// containerKind is which list of the pod spec a container is in.
type containerKind int

const (
	kindRegular containerKind = iota
	kindInit
	kindEphemeral
)

// kindOf returns the spec of the container named name and its kind; nil
// when the pod has none of that name.
func kindOf(pod *syncpodv1.Pod, name string) (*syncpodv1.Container, containerKind) {
	c, init, _ := findContainer(pod, name)
	switch {
	case init:
		return c, kindInit
	case c != nil && slices.Contains(pod.GetSpec().GetEphemeralContainers(), c):
		return c, kindEphemeral
	}
	return c, kindRegular
}

func isSidecar(c *syncpodv1.Container) bool {
	return c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
}

type killTarget struct {
	oc        *syncpodv1.ObservedContainer
	sidecar   int // spec index among init containers, -1 for others
	done      chan struct{}
	err       error
	grace     int64
	waited    time.Duration
	startedAt time.Time
	spec      *syncpodv1.Container // nil when no longer in the pod spec
	hook      *executorv1.StepResult
	// keep, for a sidecar the kill keeps running until its turn,
	// is what that did; nil for the others.
	keep *keptSidecar
	// stopped: the stop was asked for (a kept sidecar that is down when
	// its turn comes has nothing to stop).
	stopped bool
}

// killPod stops every running container in parallel (sidecars after the
// regular containers, in reverse spec order; ), then every
// sandbox. NotFound is ignored. A sidecar the actions keep running is
// started again whenever it exits before its turn. It reports
// success.
func (p *pass) killPod(ctx context.Context) bool {
	began := time.Now()
	grace := GracePeriod(p.pod, nil, syncpodv1.KillReason_KILL_REASON_UNSPECIFIED)
	// an override (an eviction's) replaces the pod's value; the
	// floor is applied at each stop, after the hook and the ordering wait.
	override := p.actions.KillGracePeriodOverrideSeconds
	if override != nil {
		grace = max(p.actions.GetKillGracePeriodOverrideSeconds(), 0)
	}
	keep := map[string]*syncpodv1.ContainerStart{}
	for _, cs := range p.actions.GetSidecarsToKeepRunning() {
		keep[cs.GetName()] = cs
	}
	var targets []*killTarget
	targeted := map[string]bool{}
	for _, oc := range sortedContainers(p.observed) {
		running := oc.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING
		// a sidecar kept running whose newest instance has exited is
		// a target too: it is started again if its turn has not come.
		keptDown := !running && keep[oc.GetName()] != nil && !targeted[oc.GetName()] &&
			oc.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED
		targeted[oc.GetName()] = true
		if !running && !keptDown {
			continue
		}
		t := &killTarget{oc: oc, sidecar: -1, done: make(chan struct{}), grace: grace}
		c, init, idx := findContainer(p.pod, oc.GetName())
		if init && isSidecar(c) {
			t.sidecar = idx
			if cs := keep[oc.GetName()]; cs != nil {
				t.keep = &keptSidecar{start: cs, live: running}
			}
		}
		if keptDown && t.keep == nil {
			continue
		}
		if c == nil {
			// an instance whose spec is gone (an orphan's, or one
			// removed from the pod) gets its hook and grace period back
			// from its annotations.
			c, t.grace = p.restoredSpec(ctx, oc, grace)
			if override != nil {
				t.grace = grace
			}
		}
		t.spec = c
		targets = append(targets, t)
	}
	// Kill order for the report: regular containers by name, then sidecars
	// in reverse spec order.
	sort.SliceStable(targets, func(i, j int) bool {
		a, b := targets[i], targets[j]
		if (a.sidecar < 0) != (b.sidecar < 0) {
			return a.sidecar < 0
		}
		if a.sidecar < 0 {
			return a.oc.GetName() < b.oc.GetName()
		}
		return a.sidecar > b.sidecar
	})
	deadline := time.Now().Add(time.Duration(grace) * time.Second)
	var wg sync.WaitGroup
	for _, t := range targets {
		var prereq []*killTarget
		if t.sidecar >= 0 {
			for _, o := range targets {
				if o.sidecar < 0 || o.sidecar > t.sidecar {
					prereq = append(prereq, o)
				}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(t.done)
			// the preStop hook runs first (a sidecar's too, while
			// the regular containers stop), then the ordering wait; both
			// are taken from the grace period.
			// A kept sidecar that is down has no hook to run: its instance
			// started again later is stopped without one.
			if t.spec != nil && (t.keep == nil || t.keep.live) {
				t.grace, t.hook = p.preStop(ctx, t.spec, t.oc.GetId(), t.grace)
			}
			if len(prereq) > 0 {
				if t.keep != nil {
					t.waited = p.keepRunning(ctx, t, prereq, deadline)
				} else {
					t.waited = waitAll(ctx, prereq, deadline)
				}
				t.grace = max(t.grace-int64(t.waited/time.Second), MinGracePeriod)
			}
			t.grace = max(t.grace, MinGracePeriod)
			if t.keep != nil && !t.keep.live {
				return
			}
			t.startedAt = time.Now()
			t.stopped = true
			t.err = runtimeclient.IgnoreNotFound(p.rt.StopContainer(ctx, t.oc.GetId(), t.grace))
		}()
	}
	wg.Wait()
	ok := true
	stopped := 0
	for _, t := range targets {
		if t.hook != nil {
			p.steps = append(p.steps, t.hook)
		}
		if k := t.keep; k != nil {
			p.steps = append(p.steps, k.steps...)
			if k.abort != nil && p.abort == nil {
				p.abort = k.abort
			}
			if !k.retryAt.IsZero() && (p.retryAt.IsZero() || k.retryAt.Before(p.retryAt)) {
				p.retryAt = k.retryAt
			}
		}
		if !t.stopped {
			continue
		}
		stopped++
		msg := fmt.Sprintf("Stopping container %s (grace %ds)", t.oc.GetName(), t.grace)
		if t.err != nil {
			ok = false
			p.fatal(t.err)
			p.add(executorv1.Step_STEP_KILL_CONTAINER, t.oc.GetName(), executorv1.Outcome_OUTCOME_FAILED, t.startedAt,
				withReason("KillContainerError", t.err.Error()), withContainer(t.oc.GetId()))
			continue
		}
		p.add(executorv1.Step_STEP_KILL_CONTAINER, t.oc.GetName(), executorv1.Outcome_OUTCOME_SUCCEEDED, t.startedAt,
			withMessage(msg), withContainer(t.oc.GetId()))
	}
	// every sandbox is stopped whatever became of the containers;
	// a failed container stop still fails the pass.
	for _, sb := range p.observed.GetSandboxes() {
		t0 := time.Now()
		if err := runtimeclient.IgnoreNotFound(p.rt.StopPodSandbox(ctx, sb.GetId())); err != nil {
			ok = false
			p.fatal(err)
			p.add(executorv1.Step_STEP_STOP_SANDBOX, sb.GetId(), executorv1.Outcome_OUTCOME_FAILED, t0, withReason("KillPodSandboxError", err.Error()))
			continue
		}
		p.add(executorv1.Step_STEP_STOP_SANDBOX, sb.GetId(), executorv1.Outcome_OUTCOME_SUCCEEDED, t0)
	}
	if ok {
		p.add(executorv1.Step_STEP_KILL_POD, p.pod.GetName(), executorv1.Outcome_OUTCOME_SUCCEEDED, began,
			withMessage(fmt.Sprintf("stopped %d containers and %d sandboxes", stopped, len(p.observed.GetSandboxes()))))
	} else {
		p.add(executorv1.Step_STEP_KILL_POD, p.pod.GetName(), executorv1.Outcome_OUTCOME_FAILED, began, withReason("KillPodError", "a container or sandbox could not be stopped"))
	}
	return ok
}

// restoredSpec is what brings back for an instance killed without
// its container spec: a stand-in container carrying the preStop hook the
// instance was created with (nil when it had none or the runtime cannot
// say), and the grace period: grace, which the pod decides, unless the pod
// sets none (an orphan's stand-in) and the instance recorded its own.
func (p *pass) restoredSpec(ctx context.Context, oc *syncpodv1.ObservedContainer, grace int64) (*syncpodv1.Container, int64) {
	resp, err := p.rt.ContainerStatus(ctx, oc.GetId(), false)
	if err != nil {
		p.r.log.Info("cannot read the annotations of a container killed without its spec", "pod_uid", p.pod.GetUid(),
			"container", oc.GetName(), "container_id", oc.GetId(), "err", err)
		return nil, grace
	}
	ann := resp.GetStatus().GetAnnotations()
	if p.pod.DeletionGracePeriodSeconds == nil && p.pod.GetSpec().TerminationGracePeriodSeconds == nil {
		if g, err := strconv.ParseInt(ann[crilabels.TerminationGracePeriod], 10, 64); err == nil {
			grace = max(g, MinGracePeriod)
		}
	}
	raw, ok := ann[crilabels.PreStopHandler]
	if !ok {
		return nil, grace
	}
	h := &syncpodv1.LifecycleHandler{}
	if err := protojson.Unmarshal([]byte(raw), h); err != nil {
		p.r.log.Info("unreadable preStop annotation: the container is stopped without its hook", "pod_uid", p.pod.GetUid(),
			"container", oc.GetName(), "container_id", oc.GetId(), "err", err)
		return nil, grace
	}
	return &syncpodv1.Container{Name: oc.GetName(), Lifecycle: &syncpodv1.Lifecycle{PreStop: h}}, grace
}

// waitAll waits until every target is done, ctx ends or deadline passes,
// and returns how long it waited.
func waitAll(ctx context.Context, ts []*killTarget, deadline time.Time) time.Duration {
	began := time.Now()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for _, t := range ts {
		select {
		case <-t.done:
		case <-timer.C:
			return time.Since(began)
		case <-ctx.Done():
			return time.Since(began)
		}
	}
	return time.Since(began)
}

// killContainer stops one container of ContainersToKill.
func (p *pass) killContainer(ctx context.Context, k *syncpodv1.ContainerKill) bool {
	c, _, _ := findContainer(p.pod, k.GetName())
	grace := GracePeriod(p.pod, c, k.GetReason())
	if c == nil { // removed from the spec
		c, grace = p.restoredSpec(ctx, &syncpodv1.ObservedContainer{Id: k.GetContainerId(), Name: k.GetName()}, grace)
	}
	if c != nil {
		var hook *executorv1.StepResult
		if grace, hook = p.preStop(ctx, c, k.GetContainerId(), grace); hook != nil {
			p.steps = append(p.steps, hook)
		}
	}
	t0 := time.Now()
	if err := runtimeclient.IgnoreNotFound(p.rt.StopContainer(ctx, k.GetContainerId(), grace)); err != nil {
		p.fatal(err)
		p.add(executorv1.Step_STEP_KILL_CONTAINER, k.GetName(), executorv1.Outcome_OUTCOME_FAILED, t0,
			withReason("KillContainerError", err.Error()), withContainer(k.GetContainerId()))
		return false
	}
	msg := k.GetMessage()
	if msg == "" {
		msg = "Stopping container " + k.GetName()
	}
	p.add(executorv1.Step_STEP_KILL_CONTAINER, k.GetName(), executorv1.Outcome_OUTCOME_SUCCEEDED, t0,
		withMessage(fmt.Sprintf("%s (grace %ds)", msg, grace)), withContainer(k.GetContainerId()))
	return true
}

// pruneInitContainers keeps, per init container name, only the newest
// EXITED/UNKNOWN instance. Failures are reported and ignored.
func (p *pass) pruneInitContainers(ctx context.Context) {
	reset := resetIDs(p.actions) // already gone
	for _, ic := range p.pod.GetSpec().GetInitContainers() {
		seen := false
		for _, oc := range sortedContainers(p.observed) {
			if oc.GetName() != ic.GetName() || reset[oc.GetId()] {
				continue
			}
			st := oc.GetState()
			if st != syncpodv1.ContainerState_CONTAINER_STATE_EXITED && st != syncpodv1.ContainerState_CONTAINER_STATE_UNKNOWN {
				continue
			}
			if !seen {
				seen = true
				continue
			}
			p.removeInit(ctx, oc, "pruned: a newer instance is kept")
			if p.abort != nil {
				return
			}
		}
	}
}

// purgeInitContainers removes every init container instance after a pod
// kill for a new sandbox.
func (p *pass) purgeInitContainers(ctx context.Context) {
	for _, oc := range sortedContainers(p.observed) {
		if _, init, _ := findContainer(p.pod, oc.GetName()); !init {
			continue
		}
		p.removeInit(ctx, oc, "purged: the pod gets a new sandbox")
		if p.abort != nil {
			return
		}
	}
}

func (p *pass) removeInit(ctx context.Context, oc *syncpodv1.ObservedContainer, why string) {
	t0 := time.Now()
	if err := runtimeclient.IgnoreNotFound(p.rt.RemoveContainer(ctx, oc.GetId())); err != nil {
		p.fatal(err)
		p.add(executorv1.Step_STEP_PRUNE_INIT_CONTAINER, oc.GetName(), executorv1.Outcome_OUTCOME_FAILED, t0,
			withReason("RemoveContainerError", err.Error()), withContainer(oc.GetId()))
		return
	}
	p.add(executorv1.Step_STEP_PRUNE_INIT_CONTAINER, oc.GetName(), executorv1.Outcome_OUTCOME_SUCCEEDED, t0,
		withMessage(why), withContainer(oc.GetId()))
}

// sortedContainers returns observed containers newest first (by
// created_at, then id for determinism), without mutating observed.
func sortedContainers(o *syncpodv1.ObservedPod) []*syncpodv1.ObservedContainer {
	out := append([]*syncpodv1.ObservedContainer(nil), o.GetContainers()...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].GetCreatedAt().AsTime(), out[j].GetCreatedAt().AsTime()
		if !a.Equal(b) {
			return a.After(b)
		}
		return out[i].GetId() < out[j].GetId()
	})
	return out
}
