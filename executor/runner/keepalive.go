package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/internal/probe"
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
	// probes are the startup and liveness probes of the current instance.
	probes keptProbes
}

// keptProbes is where the startup and liveness probes of a kept sidecar's
// current instance stand: the startup probe first (when the sidecar has
// one), then the liveness probe, each from initial_delay_seconds after the
// instance started, every period_seconds.
type keptProbes struct {
	since    time.Time // the instance's start
	started  bool      // the startup probe succeeded, or there is none
	next     time.Time // the next attempt is due
	failures int       // consecutive failures of the current probe
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
	// A probe attempt or a probe's stop in progress ends with the turn.
	probeCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-turn:
			cancel()
		case <-probeCtx.Done():
		}
	}()
	k := t.keep
	since := t.oc.GetStartedAt().AsTime()
	if t.oc.GetStartedAt() == nil {
		since = began
	}
	// The instance running when the kill began had started in the
	// running pod (the planner's startup result is not the executor's to
	// know): only its liveness probe runs.
	p.resetProbes(t, since, true)
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
		if k.live && p.probeKept(probeCtx, t, deadline) {
			k.live = p.stillRunning(ctx, t)
		}
		if !k.live && !gaveUp && !p.r.clock.Now().Before(notBefore) {
			switch st := p.restartKept(ctx, t); {
			case st == nil:
				gaveUp = true // the sidecar is no longer in the spec
			case st.GetOutcome() == executorv1.Outcome_OUTCOME_SUCCEEDED:
				k.live = true
				p.resetProbes(t, time.Now(), false)
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

// resetProbes starts the probes of t's sidecar over for an instance that
// started at since; started: its startup probe is not run.
func (p *pass) resetProbes(t *killTarget, since time.Time, started bool) {
	k := t.keep
	c, _, _ := findContainer(p.pod, t.oc.GetName())
	k.probes = keptProbes{since: since, started: started || c.GetStartupProbe().GetHandler() == nil}
	k.probes.next = since.Add(time.Duration(p.keptProbe(t).GetInitialDelaySeconds()) * time.Second)
}

// keptProbe is the probe t's sidecar is on: its startup probe until that
// succeeds, then its liveness probe; nil for none.
func (p *pass) keptProbe(t *killTarget) *syncpodv1.Probe {
	c, _, _ := findContainer(p.pod, t.oc.GetName())
	pr := c.GetLivenessProbe()
	if !t.keep.probes.started {
		pr = c.GetStartupProbe()
	}
	if pr.GetHandler() == nil {
		return nil
	}
	return pr
}

// probeKept makes the attempt of t's startup or liveness probe that is
// due, if one is, as the planner's prober would in a running pod (R-4.3,
// ); when the probe has failed failure_threshold times in
// a row, the instance is stopped, as a running pod's sync stops it, with
// the probe's own grace period when it sets one, and never past
// the kill's deadline. It reports whether it stopped the instance.
func (p *pass) probeKept(ctx context.Context, t *killTarget, deadline time.Time) bool {
	k := t.keep
	pr := p.keptProbe(t)
	now := time.Now()
	if pr == nil || now.Before(k.probes.next) {
		return false
	}
	host := "127.0.0.1"
	for _, sb := range p.observed.GetSandboxes() {
		if sb.GetId() == t.oc.GetSandboxId() && !sb.GetHostNetwork() && !p.pod.GetSpec().GetHostNetwork() && sb.GetIp() != "" {
			host = sb.GetIp()
		}
	}
	out, detail := probe.Attempt(ctx, execer{p.r}, pr, probe.Target{ContainerID: t.oc.GetId(), Host: host})
	k.probes.next = time.Now().Add(probe.Period(pr))
	kind, reason := "liveness", syncpodv1.KillReason_KILL_REASON_LIVENESS_PROBE
	if !k.probes.started {
		kind, reason = "startup", syncpodv1.KillReason_KILL_REASON_STARTUP_PROBE
	}
	switch out {
	case probe.Error:
		return false
	case probe.Success:
		k.probes.failures = 0
		if !k.probes.started {
			k.probes.started = true
			c, _, _ := findContainer(p.pod, t.oc.GetName())
			// The liveness probe's delay counts from the instance's start.
			k.probes.next = k.probes.since.Add(time.Duration(c.GetLivenessProbe().GetInitialDelaySeconds()) * time.Second)
		}
		return false
	}
	k.probes.failures++
	p.r.log.Info("probe of a sidecar kept running while the pod terminates failed", "pod_uid", p.pod.GetUid(),
		"container", t.oc.GetName(), "container_id", t.oc.GetId(), "probe", kind, "detail", detail)
	if k.probes.failures < probe.FailureThreshold(pr) || ctx.Err() != nil {
		return false
	}
	c, _, _ := findContainer(p.pod, t.oc.GetName())
	grace := GracePeriod(p.pod, c, reason)
	if left := int64(time.Until(deadline) / time.Second); left < grace {
		grace = max(left, MinGracePeriod)
	}
	msg := fmt.Sprintf("Init container %s failed %s probe, will be restarted", t.oc.GetName(), kind)
	t0 := time.Now()
	if err := runtimeclient.IgnoreNotFound(p.rt.StopContainer(ctx, t.oc.GetId(), grace)); err != nil {
		// Not a failure of the kill: the instance is still stopped in its
		// turn (the turn may be what cut this stop short).
		p.r.log.Info("cannot stop a sidecar whose probe failed while the pod terminates", "pod_uid", p.pod.GetUid(),
			"container", t.oc.GetName(), "container_id", t.oc.GetId(), "err", err)
		return false
	}
	k.steps = append(k.steps, stepResult(executorv1.Step_STEP_KILL_CONTAINER, t.oc.GetName(), executorv1.Outcome_OUTCOME_SUCCEEDED, t0,
		withReason(probeKillReason, msg), withContainer(t.oc.GetId())))
	return true
}

// probeKillReason is the reason of a kill step for a kept sidecar's failed
// probe: the step's message is then the Killing event's.
const probeKillReason = "Unhealthy"

// execer runs the exec probes of kept sidecars through the runner.
type execer struct{ r *Runner }

func (e execer) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (int32, error) {
	code, _, err := e.ExecSyncOutput(ctx, id, cmd, timeout)
	return code, err
}

func (e execer) ExecSyncOutput(ctx context.Context, id string, cmd []string, timeout time.Duration) (int32, []byte, error) {
	resp, err := e.r.ExecSync(ctx, id, cmd, timeout)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, ctx.Err() // the probe's timeout
		}
		return 0, nil, err
	}
	return resp.GetExitCode(), append(resp.GetStdout(), resp.GetStderr()...), nil
}
