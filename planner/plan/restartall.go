package plan

import (
	"fmt"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

const actionRestartAll = syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS

// matchingRule is the kubelet's FindMatchingContainerRestartRule: the first
// of c's restart rules that matches code, with its index, or nil.
func matchingRule(c *syncpodv1.Container, code int32) (*syncpodv1.ContainerRestartRule, int) {
	for i, r := range c.GetRestartPolicyRules() {
		if ruleMatches(r, code) {
			return r, i
		}
	}
	return nil, -1
}

// triggersRestartAll reports whether instance st of container c exited with
// a code that matches a RestartAllContainers rule of c.
func triggersRestartAll(c *syncpodv1.Container, st *syncpodv1.ObservedContainer) bool {
	if st.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
		return false
	}
	r, _ := matchingRule(c, st.GetExitCode())
	return r.GetAction() == actionRestartAll
}

// TriggersRestartAll reports whether an exit of c with code matches one of
// its RestartAllContainers rules, the first matching rule deciding.
func TriggersRestartAll(c *syncpodv1.Container, code int32) bool {
	r, _ := matchingRule(c, code)
	return r.GetAction() == actionRestartAll
}

// CouldRestartAll reports whether some init or regular container of spec
// has a RestartAllContainers rule (the kubelet's AllContainersCouldRestart):
// only such pods report the AllContainersRestarting condition.
func CouldRestartAll(spec *syncpodv1.PodSpec) bool {
	for _, list := range [][]*syncpodv1.Container{spec.GetInitContainers(), spec.GetContainers()} {
		for _, c := range list {
			for _, r := range c.GetRestartPolicyRules() {
				if r.GetAction() == actionRestartAll {
					return true
				}
			}
		}
	}
	return false
}

// RestartingAll reports whether every container of the pod is being
// restarted in place: the newest instance of some init or regular
// container, in any sandbox, exited with a code that matched one of its
// RestartAllContainers rules. It stays true until that instance is removed,
// which the reset does last; the plan and the pod's AllContainersRestarting
// condition both ask it.
func RestartingAll(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod) bool {
	v := newView(pod, observed, nil)
	return v.restartingAll()
}

func (v *view) restartingAll() bool {
	for _, list := range [][]*syncpodv1.Container{v.spec.GetInitContainers(), v.spec.GetContainers()} {
		for _, c := range list {
			if triggersRestartAll(c, v.newest(c.GetName())) {
				return true
			}
		}
	}
	return false
}

// resetActions is: every instance of every init and regular
// container, in any sandbox, is listed for removal, the ones that have not
// exited to be stopped first. The regular containers' come first, then the
// init containers', then the instances whose exit asked for the restart
// (regular before init), each list in spec order and, within a container,
// newest first.
func (v *view) resetActions(a *syncpodv1.PodActions) {
	regSrc, regTgt := v.resetsOf(v.spec.GetContainers(), kindContainer)
	initSrc, initTgt := v.resetsOf(v.spec.GetInitContainers(), kindInit)
	for _, l := range [][]*syncpodv1.ContainerReset{regTgt, initTgt, regSrc, initSrc} {
		a.ContainersToReset = append(a.ContainersToReset, l...)
	}
}

func (v *view) resetsOf(list []*syncpodv1.Container, kind string) (sources, targets []*syncpodv1.ContainerReset) {
	for _, c := range list {
		kind := kind
		if kind == kindInit {
			kind = kindOfInit(c)
		}
		for _, st := range v.containers {
			if st.GetName() != c.GetName() {
				continue
			}
			r := &syncpodv1.ContainerReset{ContainerId: st.GetId(), Name: st.GetName()}
			switch {
			case st.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED:
				r.Kill = true
				r.Message = fmt.Sprintf("%s %s is stopped and removed: every container of the pod restarts", kind, c.GetName())
				targets = append(targets, r)
			case triggersRestartAll(c, st):
				r.Source = true
				_, i := matchingRule(c, st.GetExitCode())
				r.Message = fmt.Sprintf("%s %s exited with %d; restart rule %d (%s) matched: every container of the pod restarts",
					kind, c.GetName(), st.GetExitCode(), i, describeRule(c.GetRestartPolicyRules()[i]))
				sources = append(sources, r)
			default:
				r.Message = fmt.Sprintf("%s %s is removed: every container of the pod restarts", kind, c.GetName())
				targets = append(targets, r)
			}
		}
	}
	return sources, targets
}
