package status

import (
	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The AllContainersRestarting condition and the reasons of a restart of
// every container in place, as the kubelet names them.
const (
	ConditionAllContainersRestarting = "AllContainersRestarting"
	// ReasonRestartAllContainersStarted: a container's exit matched a
	// RestartAllContainers rule and its pod's containers are being reset.
	ReasonRestartAllContainersStarted = "RestartAllContainersStarted"
	// ReasonPodFailed is the condition's reason once the pod has failed.
	ReasonPodFailed = "PodFailed"
	// ReasonRestartingAllContainers is the waiting reason, and the last
	// termination's, of a container removed by such a reset.
	ReasonRestartingAllContainers = "RestartingAllContainers"
)

const removedByResetMessage = "The container is removed because RestartAllContainers in place"

// restartingAll is the kubelet's ShouldAllContainersRestart: the
// previous status says the pod's containers are being reset, or the
// newest instance of an init or regular container, or the previous status
// of one, ended with a code that matches one of its RestartAllContainers
// rules.
func (c *computer) restartingAll() bool {
	pod := c.in.Pod
	if !plan.CouldRestartAll(pod.GetSpec()) {
		return false
	}
	for _, cd := range c.in.Previous.GetConditions() {
		if cd.GetType() == ConditionAllContainersRestarting && cd.GetStatus() == syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE {
			return true
		}
	}
	if plan.RestartingAll(pod, c.in.Observed) {
		return true
	}
	prev := map[string]*syncpodv1.ContainerStatus{}
	for _, cs := range c.in.Previous.GetInitContainerStatuses() {
		prev[cs.GetName()] = cs
	}
	for _, cs := range c.in.Previous.GetContainerStatuses() {
		prev[cs.GetName()] = cs
	}
	for _, ctr := range append(append([]*syncpodv1.Container{}, pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...) {
		if t := prev[ctr.GetName()].GetState().GetTerminated(); t != nil && plan.TriggersRestartAll(ctr, t.GetExitCode()) {
			return true
		}
	}
	return false
}

// cleanedUp reports whether no init or regular container has an instance
// left (the kubelet's AllContainersRestartCleanedUp).
func (c *computer) cleanedUp() bool {
	spec := c.in.Pod.GetSpec()
	for _, list := range [][]*syncpodv1.Container{spec.GetInitContainers(), spec.GetContainers()} {
		for _, ctr := range list {
			if len(c.byName[ctr.GetName()]) > 0 {
				return false
			}
		}
	}
	return true
}

// allRestartingCondition is the AllContainersRestarting condition,
// reported only by a pod with a RestartAllContainers rule: true from the
// matching exit until every instance is removed.
func (c *computer) allRestartingCondition(phase syncpodv1.PodPhase) *syncpodv1.PodCondition {
	switch {
	case phase == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED:
		return cond(ConditionAllContainersRestarting, false, ReasonPodCompleted, "")
	case phase == syncpodv1.PodPhase_POD_PHASE_FAILED:
		return cond(ConditionAllContainersRestarting, false, ReasonPodFailed, "")
	case !c.restarting || c.cleanedUp():
		return cond(ConditionAllContainersRestarting, false, "", "")
	}
	return cond(ConditionAllContainersRestarting, true, ReasonRestartAllContainersStarted, "container exited with restart policy rule")
}

// previousStatus is the container's status in the previous pod status, or
// nil.
func (c *computer) previousStatus(name string, isInit bool) *syncpodv1.ContainerStatus {
	list := c.in.Previous.GetContainerStatuses()
	if isInit {
		list = c.in.Previous.GetInitContainerStatuses()
	}
	for _, cs := range list {
		if cs.GetName() == name {
			return cs
		}
	}
	return nil
}

// carryOver is for a pod that can restart all its containers: a
// reset removes the instances the status is otherwise built from, so what
// they said is carried over from the previous status. A container with no
// instance left while the reset runs waits with reason
// RestartingAllContainers, its last termination saying so, its restart
// count one more; once it has instances again, its restart count never
// goes down, a new running instance after a terminated one counts one
// more, and a last termination it lost is kept.
func (c *computer) carryOver(cs *syncpodv1.ContainerStatus, cur *syncpodv1.ObservedContainer, isInit bool) {
	prev := c.previousStatus(cs.GetName(), isInit)
	if prev == nil {
		return
	}
	if cur == nil {
		cs.RestartCount = prev.GetRestartCount()
		cs.LastTerminationState = prev.GetLastTerminationState()
		if c.restarting && prev.GetState().GetWaiting() == nil {
			cs.State = waiting(ReasonRestartingAllContainers, removedByResetMessage)
			cs.LastTerminationState = &syncpodv1.ContainerStateDetail{State: &syncpodv1.ContainerStateDetail_Terminated{
				Terminated: &syncpodv1.ContainerStateTerminated{Reason: ReasonRestartingAllContainers, Message: removedByResetMessage, ExitCode: 137}}}
			cs.RestartCount = prev.GetRestartCount() + 1
		}
		return
	}
	cs.RestartCount = max(cs.GetRestartCount(), prev.GetRestartCount())
	if cs.GetState().GetRunning() != nil && prev.GetState().GetTerminated() != nil && prev.GetRestartCount() >= cur.GetRestartCount() {
		cs.RestartCount = prev.GetRestartCount() + 1
	}
	if cs.GetLastTerminationState() == nil {
		switch {
		case prev.GetContainerId() != cs.GetContainerId() && prev.GetState().GetTerminated() != nil:
			cs.LastTerminationState = prev.GetState()
		case prev.GetLastTerminationState().GetTerminated() != nil:
			cs.LastTerminationState = prev.GetLastTerminationState()
		}
	}
}

// removedByReset reports whether a container's last termination is a
// reset's (such a container is restarted, whatever its policy says).
func removedByReset(cs *syncpodv1.ContainerStatus) bool {
	return cs.GetLastTerminationState().GetTerminated().GetReason() == ReasonRestartingAllContainers && cs.GetState().GetWaiting() != nil
}
