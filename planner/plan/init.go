package plan

import (
	"fmt"
	"slices"

	"github.com/syncpod/syncpod/proto/k8snames"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// initActions is R-5 (the kubelet's newest computeInitContainerActions): it
// fills init_containers_to_start, containers_to_kill and kill_pod, and
// reports whether the pod is initialised.
func (v *view) initActions(a *syncpodv1.PodActions) bool {
	inits := v.spec.GetInitContainers()
	if len(inits) == 0 {
		return true
	}
	// initialised when a regular container has an active status.
	initialised := false
	for _, c := range v.spec.GetContainers() {
		if v.newestActive(c.GetName()) != nil {
			initialised = true
			break
		}
	}
	previously := initialised
	last := len(inits) - 1
	var starts []*syncpodv1.ContainerStart // collected last to first
	add := func(i int, reason syncpodv1.StartReason, msg string) {
		if v.deleted {
			return
		}
		starts = append(starts, start(inits[i], reason, msg))
	}
	next := func(i int) {
		add(i+1, syncpodv1.StartReason_START_REASON_NEXT_INIT,
			fmt.Sprintf("%s %s is done: starting %s %s", kindOfInit(inits[i]), inits[i].GetName(), kindOfInit(inits[i+1]), inits[i+1].GetName()))
	}
	failPod := func(msg string) {
		a.KillPod = true
		a.KillPodReason = syncpodv1.KillPodReason_KILL_POD_REASON_INIT_FAILED
		a.InitContainersToStart = nil
		a.Message = msg
	}

	//
	for i := last; i >= 0; i-- {
		c := inits[i]
		name := c.GetName()
		sidecar := isSidecar(c)
		kind := kindOfInit(c)
		st := v.newestActive(name)
		if st == nil {
			if previously && sidecar {
				add(i, syncpodv1.StartReason_START_REASON_NOT_STARTED,
					fmt.Sprintf("sidecar %s has no status in the current sandbox: starting it again", name))
			}
			continue
		}
		if previously && !sidecar {
			continue // finished init containers never re-run
		}
		switch state := st.GetState(); {
		case state == syncpodv1.ContainerState_CONTAINER_STATE_CREATED:
			add(i, syncpodv1.StartReason_START_REASON_CREATED,
				fmt.Sprintf("%s %s was created but never started", kind, name))

		case state == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING:
			if !sidecar {
				break // initialisation in progress
			}
			if v.runningSidecar(a, c, st, add, i) {
				// The sidecar counts as started.
				if i == last {
					initialised = true
				} else if !previously {
					next(i)
				}
				v.restartRunningSidecar(a, c, st, add, i)
			}

		case state == syncpodv1.ContainerState_CONTAINER_STATE_EXITED:
			switch {
			case sidecar:
				add(i, syncpodv1.StartReason_START_REASON_EXITED,
					fmt.Sprintf("sidecar %s exited with %d; sidecars are always restarted", name, st.GetExitCode()))
			case initFailed(st):
				// ContainerRestartRules on, so ShouldContainerBeRestarted.
				ok, reason, msg := v.shouldRestart(kind, c, st)
				if !ok {
					failPod(fmt.Sprintf("init container %s failed (exit code %d%s) and may not be restarted%s",
						name, st.GetExitCode(), reasonSuffix(st), v.whyNoRestart(c, st)))
					return false
				}
				add(i, reason, msg)
			default:
				if i == last {
					initialised = true
				} else {
					next(i)
				}
			}

		default: // UNKNOWN, or a state this build does not know
			msg := fmt.Sprintf("Init container is in %q state, try killing it before restart", "unknown")
			if !sidecar {
				// only the container-level policy counts.
				allowed := v.podPolicy() != syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
				if hasContainerPolicy(c) {
					allowed = c.GetRestartPolicy() != syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
				}
				if !allowed || v.deleted {
					failPod(fmt.Sprintf("init container %s is in unknown state and may not be restarted%s", name, v.whyNoRestart(c, st)))
					return false
				}
			}
			a.ContainersToKill = append(a.ContainersToKill, kill(st, syncpodv1.KillReason_KILL_REASON_UNKNOWN_STATE, msg))
			add(i, syncpodv1.StartReason_START_REASON_UNKNOWN_STATE,
				fmt.Sprintf("%s %s is in unknown state; killed before restart", kind, name))
		}
		previously = true
	}
	if !previously {
		add(0, syncpodv1.StartReason_START_REASON_NOT_STARTED,
			fmt.Sprintf("%s %s is the first init container: starting it", kindOfInit(inits[0]), inits[0].GetName()))
	}
	slices.Reverse(starts)
	a.InitContainersToStart = starts
	return initialised
}

// runningSidecar is for a running sidecar: with a startup probe it
// waits for a result, and kills and restarts it on failure. It reports
// whether the sidecar counts as started.
func (v *view) runningSidecar(a *syncpodv1.PodActions, c *syncpodv1.Container, st *syncpodv1.ObservedContainer,
	add func(int, syncpodv1.StartReason, string), i int) bool {
	if c.GetStartupProbe() == nil {
		return true
	}
	switch v.startup(c, st) {
	case syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS:
		return true
	case syncpodv1.ProbeResult_PROBE_RESULT_FAILURE:
		msg := fmt.Sprintf("Init container %s failed startup probe", c.GetName())
		a.ContainersToKill = append(a.ContainersToKill, kill(st, syncpodv1.KillReason_KILL_REASON_STARTUP_PROBE, msg))
		add(i, syncpodv1.StartReason_START_REASON_STARTUP_PROBE, msg+", will be restarted")
	}
	return false // failed, or no result yet: wait
}

// restartRunningSidecar is for a started sidecar: a
// changed definition or a failed liveness probe kills and restarts it.
func (v *view) restartRunningSidecar(a *syncpodv1.PodActions, c *syncpodv1.Container, st *syncpodv1.ObservedContainer,
	add func(int, syncpodv1.StartReason, string), i int) {
	name := c.GetName()
	switch {
	case !hashMatches(c, st):
		msg := fmt.Sprintf("Init container %s definition changed", name)
		a.ContainersToKill = append(a.ContainersToKill, kill(st, syncpodv1.KillReason_KILL_REASON_SPEC_CHANGED, msg))
		add(i, syncpodv1.StartReason_START_REASON_SPEC_CHANGED, msg+", will be restarted")
	case v.liveness(c, st) == syncpodv1.ProbeResult_PROBE_RESULT_FAILURE:
		msg := fmt.Sprintf("Init container %s failed liveness probe", name)
		a.ContainersToKill = append(a.ContainersToKill, kill(st, syncpodv1.KillReason_KILL_REASON_LIVENESS_PROBE, msg))
		add(i, syncpodv1.StartReason_START_REASON_LIVENESS_PROBE, msg+", will be restarted")
	default:
		// a sidecar resizes in place as a container does.
		if restart, msg := v.resize(&v.updates, c, st); restart {
			a.ContainersToKill = append(a.ContainersToKill, kill(st, syncpodv1.KillReason_KILL_REASON_RESIZE, msg))
			add(i, syncpodv1.StartReason_START_REASON_RESIZE, msg)
		}
	}
}

func reasonSuffix(st *syncpodv1.ObservedContainer) string {
	if r := st.GetReason(); r != "" {
		return ", reason " + r
	}
	return ""
}

// whyNoRestart names what forbids a restart, for messages.
func (v *view) whyNoRestart(c *syncpodv1.Container, st *syncpodv1.ObservedContainer) string {
	if v.deleted {
		return ": the pod is being deleted"
	}
	if st.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
		_, why := v.exitDecision(c, st.GetExitCode())
		return "; " + why
	}
	if hasContainerPolicy(c) {
		return "; container restart policy " + k8snames.ContainerRestartPolicy(c.GetRestartPolicy())
	}
	return "; restart policy " + k8snames.RestartPolicy(v.podPolicy())
}
