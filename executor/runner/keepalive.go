package runner

import (
	"context"
	"time"

	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// KeepRunningPollPeriod is how often a pod kill looks at a sidecar it
// keeps running while the sidecar waits for its turn to stop: the
// kubelet's PLEG relists every second; half of that finds an exit before
// the relist that would have reported it.
const KeepRunningPollPeriod = 500 * time.Millisecond

// keptSidecar is what a pod kill keeps running of one sidecar until its
// turn to stop.
type keptSidecar struct {
	start *syncpodv1.ContainerStart
	// live: the current instance (the target's oc) was running when last
	// looked at.
	live bool
	// steps are the starts tried, in order; abort is a start's error that
	// makes the runtime or the store unusable.
	steps   []*executorv1.StepResult
	abort   error
	retryAt time.Time
}

// keepRunning waits until it is t's turn to stop, as waitAll does, and
// meanwhile starts t's sidecar again whenever its instance has exited,
// with the crash-loop back-off a running pod's sync would give it.
// A start that fails for another reason is not tried again. It returns
// how long it waited; t.oc is then the sidecar's newest instance.
func (p *pass) keepRunning(ctx context.Context, t *killTarget, prereq []*killTarget, deadline time.Time) time.Duration {
	began := time.Now()
	turn := make(chan struct{})
	go func() {
		defer close(turn)
		waitAll(ctx, prereq, deadline)
	}()
	k := t.keep
	tick := time.NewTicker(KeepRunningPollPeriod)
	defer tick.Stop()
	var notBefore time.Time // the back-off's end
	gaveUp := false
	for {
		select {
		case <-turn:
			return time.Since(began)
		default:
		}
		if k.live {
			k.live = p.stillRunning(ctx, t)
		}
		if !k.live && !gaveUp && !p.r.clock.Now().Before(notBefore) {
			switch st := p.restartKept(ctx, t); {
			case st == nil:
				gaveUp = true // the sidecar is no longer in the spec
			case st.GetOutcome() == executorv1.Outcome_OUTCOME_SUCCEEDED:
				k.live = true
			case st.GetBackoffUntil() != nil:
				notBefore = st.GetBackoffUntil().AsTime()
			default:
				gaveUp = true
			}
			if k.abort != nil {
				gaveUp = true
			}
		}
		select {
		case <-turn:
			return time.Since(began)
		case <-tick.C:
		}
	}
}

// stillRunning reads the state of t's current instance; when it has
// exited, t.oc becomes what the runtime says of it (its finish time is
// what the back-off counts from). A runtime that does not answer leaves
// the instance counted as running.
func (p *pass) stillRunning(ctx context.Context, t *killTarget) bool {
	// The polls are not the pass's work: they go unrecorded.
	resp, err := p.r.rt.ContainerStatus(ctx, t.oc.GetId(), false)
	if err != nil {
		if runtimeclient.IgnoreNotFound(err) == nil {
			return false
		}
		return true
	}
	oc := observe.Container(resp.GetStatus(), t.oc.GetSandboxId())
	if oc.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
		return true
	}
	if oc.GetName() == "" {
		oc.Name = t.oc.GetName()
	}
	t.oc = oc
	return false
}

// restartKept starts t's sidecar again in its sandbox, as a running pod's
// sync would, back-off included, and returns the step of the
// start (nil when none was tried). On success t.oc is the new instance.
// It runs in a pass of its own, so that the sidecars kept running while
// the pod's other containers stop do not share the kill's state.
func (p *pass) restartKept(ctx context.Context, t *killTarget) *executorv1.StepResult {
	k := t.keep
	var sb *syncpodv1.ObservedSandbox
	for _, s := range p.observed.GetSandboxes() {
		if s.GetId() == t.oc.GetSandboxId() {
			sb = s
		}
	}
	if sb == nil {
		return nil
	}
	// The sidecar's history is its current instance: the newest, and
	// (exited) the one the back-off is counted from.
	observed := &syncpodv1.ObservedPod{Uid: p.observed.GetUid(), Name: p.observed.GetName(), Namespace: p.observed.GetNamespace(),
		Sandboxes: p.observed.GetSandboxes(), Containers: []*syncpodv1.ObservedContainer{t.oc}}
	for _, oc := range p.observed.GetContainers() {
		if oc.GetName() != t.oc.GetName() {
			observed.Containers = append(observed.Containers, oc)
		}
	}
	sub := &pass{r: p.r, rt: p.rt, img: p.img, pod: p.pod, observed: observed,
		actions: &syncpodv1.PodActions{SandboxId: sb.GetId(), Attempt: sb.GetAttempt()}, sandboxID: sb.GetId(), src: p.src}
	ok := sub.startContainer(ctx, k.start, kindInit)
	k.steps = append(k.steps, sub.steps...)
	if sub.abort != nil && k.abort == nil {
		k.abort = sub.abort
	}
	if !sub.retryAt.IsZero() && (k.retryAt.IsZero() || sub.retryAt.Before(k.retryAt)) {
		k.retryAt = sub.retryAt
	}
	if len(sub.steps) == 0 {
		return nil
	}
	st := sub.steps[len(sub.steps)-1]
	if ok {
		// The step's message has the count; the instance carries it on
		// for the next restart's.
		t.oc = &syncpodv1.ObservedContainer{Id: st.GetContainerId(), Name: t.oc.GetName(), SandboxId: sb.GetId(),
			State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, RestartCount: t.oc.GetRestartCount() + 1}
		p.r.log.Info("sidecar started again while the pod terminates", "pod_uid", p.pod.GetUid(),
			"container", t.oc.GetName(), "container_id", t.oc.GetId())
	}
	return st
}
