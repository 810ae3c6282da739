package plan

import (
	"fmt"
	"strings"

	"github.com/syncpod/syncpod/proto/k8snames"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// hasContainerPolicy reports whether c sets a (known) restart policy of its
// own; unknown enum values count as unset.
func hasContainerPolicy(c *syncpodv1.Container) bool {
	return k8snames.ContainerRestartPolicy(c.GetRestartPolicy()) != ""
}

// isSidecar reports whether an init container is restartable.
func isSidecar(c *syncpodv1.Container) bool {
	return c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
}

// podPolicy is the pod's restart policy, unspecified read as Always.
func (v *view) podPolicy() syncpodv1.RestartPolicy {
	switch p := v.spec.GetRestartPolicy(); p {
	case syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE, syncpodv1.RestartPolicy_RESTART_POLICY_NEVER:
		return p
	default:
		return syncpodv1.RestartPolicy_RESTART_POLICY_ALWAYS
	}
}

// effectiveIsOnFailure reports whether the policy that applies to c is
// OnFailure: its own when set, else the pod's (R-2.4b, R-12.3).
func (v *view) effectiveIsOnFailure(c *syncpodv1.Container) bool {
	if hasContainerPolicy(c) {
		return c.GetRestartPolicy() == syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ON_FAILURE
	}
	return v.podPolicy() == syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE
}

// ruleMatches reports whether an exit-code rule matches code.
func ruleMatches(r *syncpodv1.ContainerRestartRule, code int32) bool {
	ec := r.GetExitCodes()
	in := false
	for _, v := range ec.GetValues() {
		if v == code {
			in = true
			break
		}
	}
	switch ec.GetOperator() {
	case syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN:
		return in
	case syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_NOT_IN:
		return !in
	default:
		return false
	}
}

// RestartsAfterExit reports whether a container of a pod with this spec
// that exited with code is restarted, by its restart rules, its own
// restart policy or the pod's (R-4.2 EXITED branch, R-12.1), and says why,
// e.g. "restart policy OnFailure". It is the one place this is decided:
// the plan and the pod phase (planner/status) both ask it. Sidecars and
// finished init containers are the caller's concern.
func RestartsAfterExit(spec *syncpodv1.PodSpec, c *syncpodv1.Container, code int32) (bool, string) {
	return (&view{spec: spec}).exitDecision(c, code)
}

// exitDecision is RestartsAfterExit for the view's pod.
func (v *view) exitDecision(c *syncpodv1.Container, code int32) (bool, string) {
	if hasContainerPolicy(c) {
		if r, i := matchingRule(c, code); r != nil {
			// A RestartAllContainers match restarts the container too, with
			// the whole pod; an unknown action falls through to the
			// container's policy, as the kubelet's ContainerShouldRestart.
			switch r.GetAction() {
			case syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART, actionRestartAll:
				return true, fmt.Sprintf("restart rule %d (%s) matched", i, describeRule(r))
			}
		}
		why := "container restart policy " + k8snames.ContainerRestartPolicy(c.GetRestartPolicy())
		switch c.GetRestartPolicy() {
		case syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS:
			return true, why
		case syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ON_FAILURE:
			return code != 0, why
		default:
			return false, why
		}
	}
	p := v.podPolicy()
	why := "restart policy " + k8snames.RestartPolicy(p)
	switch p {
	case syncpodv1.RestartPolicy_RESTART_POLICY_NEVER:
		return false, why
	case syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE:
		return code != 0, why
	default:
		return true, why
	}
}

func describeRule(r *syncpodv1.ContainerRestartRule) string {
	var b strings.Builder
	switch r.GetAction() {
	case syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART:
		b.WriteString("Restart")
	case actionRestartAll:
		b.WriteString("RestartAllContainers")
	default:
		b.WriteString("no action")
	}
	b.WriteString(" on exit code ")
	if r.GetExitCodes().GetOperator() == syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_NOT_IN {
		b.WriteString("NotIn ")
	} else {
		b.WriteString("In ")
	}
	fmt.Fprint(&b, r.GetExitCodes().GetValues())
	return b.String()
}

// restartWhileRunning decides whether a running container killed by a probe
// failure is restarted: its own policy when set (anything but Never), else
// pod policy ≠ Never; exit-code rules are not consulted.
func (v *view) restartWhileRunning(c *syncpodv1.Container) bool {
	if v.deleted {
		return false
	}
	if hasContainerPolicy(c) {
		return c.GetRestartPolicy() != syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
	}
	return v.podPolicy() != syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
}

// isUnknownState reports whether a state is to be treated as unknown:
// UNKNOWN, UNSPECIFIED or any value this build does not know.
func isUnknownState(s syncpodv1.ContainerState) bool {
	switch s {
	case syncpodv1.ContainerState_CONTAINER_STATE_CREATED,
		syncpodv1.ContainerState_CONTAINER_STATE_RUNNING,
		syncpodv1.ContainerState_CONTAINER_STATE_EXITED:
		return false
	default:
		return true
	}
}

// initFailed is the kubelet's isInitContainerFailed: OOMKilled, a non-zero
// exit, or an unknown state.
func initFailed(st *syncpodv1.ObservedContainer) bool {
	switch {
	case strings.Contains(st.GetReason(), "OOMKilled"):
		return true
	case st.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_EXITED:
		return st.GetExitCode() != 0
	default:
		return isUnknownState(st.GetState())
	}
}

// shouldRestart is the kubelet's ShouldContainerBeRestarted for a container
// that is not running, with the start reason and message it implies.
func (v *view) shouldRestart(kind string, c *syncpodv1.Container, st *syncpodv1.ObservedContainer) (bool, syncpodv1.StartReason, string) {
	name := c.GetName()
	if v.deleted {
		return false, 0, ""
	}
	if st == nil {
		return true, syncpodv1.StartReason_START_REASON_NOT_STARTED,
			fmt.Sprintf("%s %s has not been started", kind, name)
	}
	switch s := st.GetState(); {
	case s == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING:
		return false, 0, ""
	case s == syncpodv1.ContainerState_CONTAINER_STATE_CREATED:
		return true, syncpodv1.StartReason_START_REASON_CREATED,
			fmt.Sprintf("%s %s was created but never started", kind, name)
	case s == syncpodv1.ContainerState_CONTAINER_STATE_EXITED:
		ok, why := v.exitDecision(c, st.GetExitCode())
		return ok, syncpodv1.StartReason_START_REASON_EXITED,
			fmt.Sprintf("%s %s exited with %d; %s", kind, name, st.GetExitCode(), why)
	default:
		return true, syncpodv1.StartReason_START_REASON_UNKNOWN_STATE,
			fmt.Sprintf("%s %s is in unknown state; killed before restart", kind, name)
	}
}
