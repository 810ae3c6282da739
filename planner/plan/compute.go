package plan

import (
	"fmt"
	"slices"
	"strings"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Container kinds used in messages.
const (
	kindContainer = "container"
	kindInit      = "init container"
	kindSidecar   = "sidecar"
	kindEphemeral = "ephemeral container"
)

// Compute returns the actions that bring the observed pod to the desired
// one: the kubelet's computePodActions (see the package doc for the rules
// and promises). observed may be nil ("nothing exists yet") and probes may be
// empty. Inputs are expected to have passed validation (package validate);
// Compute never panics on other inputs, but its answer for them is only
// "something reasonable".
func Compute(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, probes []*syncpodv1.ContainerProbeResults) *syncpodv1.PodActions {
	v := newView(pod, observed, probes)
	a := &syncpodv1.PodActions{}
	v.compute(a)
	if !a.KillPod && !a.CreateSandbox && len(a.ContainersToReset) == 0 {
		// the resizes of the containers kept running, when
		// the pod itself is kept.
		a.ContainersToUpdate = v.updates.ordered()
	}
	if IsEmpty(a) {
		a.Reset() // nothing to do: every field empty, as PlanResponse documents
		return a
	}
	finishKills(a)
	return a
}

// SandboxChange is R-2's verdict on the pod's sandbox alone: why a new
// one is needed (no sandbox, several ready, not ready, network mode
// changed, no IP, settings changed), or SANDBOX_REASON_UNSPECIFIED when the
// newest sandbox serves. The pod's PodReadyToStartContainers condition is
// this verdict, as the kubelet's.
func SandboxChange(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod) syncpodv1.SandboxReason {
	a := &syncpodv1.PodActions{}
	v := newView(pod, observed, nil)
	if !v.sandboxChanges(a) {
		return syncpodv1.SandboxReason_SANDBOX_REASON_UNSPECIFIED
	}
	return a.GetSandboxReason()
}

// IsEmpty reports whether a asks for nothing: no pod kill, no sandbox, no
// start, no kill, no reset and no resource update. sandbox_id, attempt and message do not
// count. A nil a is empty.
func IsEmpty(a *syncpodv1.PodActions) bool {
	return !a.GetKillPod() && !a.GetCreateSandbox() &&
		len(a.GetInitContainersToStart()) == 0 &&
		len(a.GetContainersToStart()) == 0 &&
		len(a.GetEphemeralContainersToStart()) == 0 &&
		len(a.GetContainersToKill()) == 0 &&
		len(a.GetContainersToReset()) == 0 &&
		len(a.GetContainersToUpdate()) == 0
}

func (v *view) compute(a *syncpodv1.PodActions) {
	create := v.sandboxChanges(a)
	a.KillPod, a.CreateSandbox = create, create
	// every container restarts in place; a deleted pod is being
	// stopped instead.
	if !v.deleted && v.restartingAll() {
		if create {
			// a new sandbox first, with nothing started in it; the
			// next plan resets the instances left in the old one.
			a.KillPodReason = syncpodv1.KillPodReason_KILL_POD_REASON_SANDBOX_CHANGED
			a.SandboxConfigHash = v.sandboxHash
			a.Message += "; every container of the pod restarts: nothing is started before the reset"
			return
		}
		v.resetActions(a)
		a.Message = "a container's exit matched a RestartAllContainers rule: every container of the pod is removed and the pod starts again from its first init container"
		return
	}
	if create {
		a.KillPodReason = syncpodv1.KillPodReason_KILL_POD_REASON_SANDBOX_CHANGED
		v.newSandbox(a)
		if a.CreateSandbox {
			a.SandboxConfigHash = v.sandboxHash
		}
		return
	}
	v.removedActions(a)
	v.ephemeralActions(a)               // even while initialising
	if !v.initActions(a) || a.KillPod {
		if a.KillPod {
			a.EphemeralContainersToStart = nil
		}
		return
	}
	keep := v.regularActions(a)
	if keep == 0 && len(a.ContainersToStart) == 0 {
		a.KillPod = true
		a.KillPodReason = syncpodv1.KillPodReason_KILL_POD_REASON_NOTHING_TO_RUN
		a.InitContainersToStart = nil
		a.EphemeralContainersToStart = nil
		a.Message = "no container is running or to be started: the pod is stopped"
	}
}

// ephemeralActions is: every ephemeral container with no instance at
// all, in any sandbox, is started, once; one with any instance, whatever
// its state or spec, is left alone. A deleted pod starts nothing.
func (v *view) ephemeralActions(a *syncpodv1.PodActions) {
	if v.deleted {
		return
	}
	for _, c := range v.spec.GetEphemeralContainers() {
		if v.newest(c.GetName()) != nil {
			continue
		}
		a.EphemeralContainersToStart = append(a.EphemeralContainersToStart, start(c, syncpodv1.StartReason_START_REASON_EPHEMERAL,
			fmt.Sprintf("%s %s has not been started: starting it", kindEphemeral, c.GetName())))
	}
}

// sandboxChanges is R-2: it sets attempt, sandbox_id, sandbox_reason and
// message and reports whether a sandbox must be created.
func (v *view) sandboxChanges(a *syncpodv1.PodActions) bool {
	if len(v.sandboxes) == 0 {
		a.SandboxReason = syncpodv1.SandboxReason_SANDBOX_REASON_NO_SANDBOX
		a.Message = "the pod has no sandbox: creating one (attempt 0)"
		return true
	}
	var maxAttempt uint32
	ready := 0
	for _, s := range v.sandboxes {
		maxAttempt = max(maxAttempt, s.GetAttempt())
		if s.GetState() == syncpodv1.SandboxState_SANDBOX_STATE_READY {
			ready++
		}
	}
	s0 := v.sandboxes[0]
	a.SandboxId = s0.GetId()
	a.Attempt = maxAttempt
	next := maxAttempt + 1
	hostNetwork := v.spec.GetHostNetwork()
	switch {
	case ready > 1:
		a.SandboxReason = syncpodv1.SandboxReason_SANDBOX_REASON_MULTIPLE_READY
		a.Message = fmt.Sprintf("%d sandboxes are ready: replacing sandbox %s (attempt %d)", ready, s0.GetId(), next)
	case s0.GetState() != syncpodv1.SandboxState_SANDBOX_STATE_READY:
		a.SandboxReason = syncpodv1.SandboxReason_SANDBOX_REASON_NOT_READY
		a.Message = fmt.Sprintf("sandbox %s is not ready: replacing it (attempt %d)", s0.GetId(), next)
	case s0.GetHostNetwork() != hostNetwork:
		a.SandboxReason = syncpodv1.SandboxReason_SANDBOX_REASON_NETWORK_CHANGED
		a.SandboxId = ""
		a.Message = fmt.Sprintf("host_network changed to %t: creating a new sandbox (attempt %d)", hostNetwork, next)
	case !hostNetwork && s0.GetIp() == "":
		a.SandboxReason = syncpodv1.SandboxReason_SANDBOX_REASON_NO_IP
		a.Message = fmt.Sprintf("sandbox %s has no IP: replacing it (attempt %d)", s0.GetId(), next)
	case s0.GetConfigHash() != "" && s0.GetConfigHash() != v.sandboxHash:
		// Pods are mutable (docs/design.md): a changed pod-level setting the
		// sandbox was created with needs a new one, as asks for the
		// settings the kubelet compares.
		a.SandboxReason = syncpodv1.SandboxReason_SANDBOX_REASON_CONFIG_CHANGED
		a.Message = fmt.Sprintf("the pod's sandbox settings changed: replacing sandbox %s (attempt %d)", s0.GetId(), next)
	default:
		return false
	}
	a.Attempt = next
	return true
}

// newSandbox applies when a sandbox is (re)created.
func (v *view) newSandbox(a *syncpodv1.PodActions) {
	if v.deleted {
		a.CreateSandbox = false
		a.Message += "; but the pod is being deleted: no new sandbox"
		return
	}
	// R-2.4a
	if v.podPolicy() == syncpodv1.RestartPolicy_RESTART_POLICY_NEVER && a.Attempt != 0 && len(v.containers) > 0 {
		a.CreateSandbox = false
		a.Message += "; but restart policy Never: the pod is not given a new sandbox"
		return
	}
	// R-2.4b, R-12.3
	containers := v.spec.GetContainers()
	var toStart []int
	for i, c := range containers {
		st := v.newest(c.GetName())
		if st.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED && st.GetExitCode() == 0 && v.effectiveIsOnFailure(c) {
			continue
		}
		toStart = append(toStart, i)
	}
	if len(toStart) == 0 && v.anyRegularCreated() {
		a.CreateSandbox = false
		a.Message += "; but every container has succeeded: no new sandbox"
		return
	}
	if inits := v.spec.GetInitContainers(); len(inits) > 0 { // R-2.4c
		c := inits[0]
		a.InitContainersToStart = []*syncpodv1.ContainerStart{start(c, syncpodv1.StartReason_START_REASON_NEW_SANDBOX,
			fmt.Sprintf("%s %s is started first in the new sandbox", kindOfInit(c), c.GetName()))}
		return
	}
	for _, i := range toStart { // R-2.4d
		c := containers[i]
		a.ContainersToStart = append(a.ContainersToStart, start(c, syncpodv1.StartReason_START_REASON_NEW_SANDBOX,
			fmt.Sprintf("container %s is started in the new sandbox", c.GetName())))
	}
}

// anyRegularCreated: some regular container's newest status is CREATED,
// RUNNING or EXITED (the kubelet's hasAnyRegularContainerCreated).
func (v *view) anyRegularCreated() bool {
	for _, c := range v.spec.GetContainers() {
		if st := v.newest(c.GetName()); st != nil && !isUnknownState(st.GetState()) {
			return true
		}
	}
	return false
}

// regularActions is R-4 over the regular containers; it returns keepCount.
func (v *view) regularActions(a *syncpodv1.PodActions) int {
	keep := 0
	for _, c := range v.spec.GetContainers() {
		name := c.GetName()
		st := v.newest(name)
		if st.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING || st == nil {
			ok, reason, msg := v.shouldRestart(kindContainer, c, st)
			if !ok {
				continue
			}
			a.ContainersToStart = append(a.ContainersToStart, start(c, reason, msg))
			if st != nil && isUnknownState(st.GetState()) {
				a.ContainersToKill = append(a.ContainersToKill, kill(st, syncpodv1.KillReason_KILL_REASON_UNKNOWN_STATE,
					`Container is in "unknown" state, try killing it before restart`))
			}
			continue
		}
		//
		var (
			killReason  syncpodv1.KillReason
			startReason syncpodv1.StartReason
			msg         string
			restart     bool
		)
		switch {
		case !hashMatches(c, st):
			killReason, startReason = syncpodv1.KillReason_KILL_REASON_SPEC_CHANGED, syncpodv1.StartReason_START_REASON_SPEC_CHANGED
			msg = fmt.Sprintf("Container %s definition changed", name)
			restart = !v.deleted
		case v.liveness(c, st) == syncpodv1.ProbeResult_PROBE_RESULT_FAILURE:
			killReason, startReason = syncpodv1.KillReason_KILL_REASON_LIVENESS_PROBE, syncpodv1.StartReason_START_REASON_LIVENESS_PROBE
			msg = fmt.Sprintf("Container %s failed liveness probe", name)
			restart = v.restartWhileRunning(c)
		case v.startup(c, st) == syncpodv1.ProbeResult_PROBE_RESULT_FAILURE:
			killReason, startReason = syncpodv1.KillReason_KILL_REASON_STARTUP_PROBE, syncpodv1.StartReason_START_REASON_STARTUP_PROBE
			msg = fmt.Sprintf("Container %s failed startup probe", name)
			restart = v.restartWhileRunning(c)
		default:
			resizeRestart, resizeMsg := v.resize(&v.updates, c, st)
			if !resizeRestart {
				keep++
				continue
			}
			// whatever the restart policy, as the kubelet's.
			killReason, startReason = syncpodv1.KillReason_KILL_REASON_RESIZE, syncpodv1.StartReason_START_REASON_RESIZE
			msg, restart = resizeMsg, true
		}
		if restart {
			if killReason != syncpodv1.KillReason_KILL_REASON_RESIZE {
				msg += ", will be restarted"
			}
			a.ContainersToStart = append(a.ContainersToStart, start(c, startReason, msg))
		}
		a.ContainersToKill = append(a.ContainersToKill, kill(st, killReason, msg))
	}
	return keep
}

// removedActions kills every running container of the current sandbox
// whose name is no longer in the spec (pods are mutable: docs/design.md). The
// kubelet's pods cannot lose a container; its nearest rule is, a
// container killed without its spec, whose preStop hook and grace period
// the executor restores from the container's annotations.
func (v *view) removedActions(a *syncpodv1.PodActions) {
	inSpec := map[string]bool{}
	for _, c := range v.spec.GetInitContainers() {
		inSpec[c.GetName()] = true
	}
	for _, c := range v.spec.GetContainers() {
		inSpec[c.GetName()] = true
	}
	for _, c := range v.spec.GetEphemeralContainers() {
		inSpec[c.GetName()] = true
	}
	for _, st := range v.containers {
		if inSpec[st.GetName()] || st.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
			continue
		}
		a.ContainersToKill = append(a.ContainersToKill, kill(st, syncpodv1.KillReason_KILL_REASON_REMOVED_FROM_SPEC,
			fmt.Sprintf("Container %s is no longer in the pod spec", st.GetName())))
	}
}

func kindOfInit(c *syncpodv1.Container) string {
	if isSidecar(c) {
		return kindSidecar
	}
	return kindInit
}

func start(c *syncpodv1.Container, reason syncpodv1.StartReason, msg string) *syncpodv1.ContainerStart {
	return &syncpodv1.ContainerStart{Name: c.GetName(), SpecHash: SpecHash(c), Reason: reason, Message: msg}
}

func kill(st *syncpodv1.ObservedContainer, reason syncpodv1.KillReason, msg string) *syncpodv1.ContainerKill {
	return &syncpodv1.ContainerKill{ContainerId: st.GetId(), Name: st.GetName(), Reason: reason, Message: msg}
}

// finishKills sorts the kills by name then id and drops repeats of an id
// (the kubelet keys them by container id), keeping the first.
func finishKills(a *syncpodv1.PodActions) {
	k := a.ContainersToKill
	if len(k) < 2 {
		return
	}
	slices.SortStableFunc(k, func(x, y *syncpodv1.ContainerKill) int {
		if c := strings.Compare(x.GetName(), y.GetName()); c != 0 {
			return c
		}
		return strings.Compare(x.GetContainerId(), y.GetContainerId())
	})
	a.ContainersToKill = slices.CompactFunc(k, func(x, y *syncpodv1.ContainerKill) bool {
		return x.GetContainerId() == y.GetContainerId() && x.GetName() == y.GetName()
	})
}
