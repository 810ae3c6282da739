package status

import (
	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/proto/linuxres"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The conditions of an in-place resize, as the kubelet names
// them. PodResizePending's reason is the allocation's (Deferred or
// Infeasible); PodResizeInProgress has no reason, or ReasonError with the
// message of the failed update.
const (
	ConditionPodResizePending    = "PodResizePending"
	ConditionPodResizeInProgress = "PodResizeInProgress"
)

// resources sets a container status' allocated_resources (the admitted
// requests) and resources: for a running instance whose runtime
// reports other values than the admitted ones (a resize under way), those
// values as requests and limits; otherwise the admitted ones.
func resources(cs *syncpodv1.ContainerStatus, ctr *syncpodv1.Container, cur *syncpodv1.ObservedContainer) {
	want := ctr.GetResources()
	if req := want.GetRequests(); req.GetCpu() != "" || req.GetMemory() != "" {
		cs.AllocatedResources = proto.Clone(req).(*syncpodv1.ResourceList)
	}
	if cur.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING && plan.ResizeInProgress(ctr, cur) {
		have, _ := linuxres.FromProto(cur.GetResources())
		cs.Resources = have.Requirements(want)
		return
	}
	cs.Resources = &syncpodv1.ResourceRequirements{}
	if l := want.GetRequests(); l.GetCpu() != "" || l.GetMemory() != "" {
		cs.Resources.Requests = proto.Clone(l).(*syncpodv1.ResourceList)
	}
	if l := want.GetLimits(); l.GetCpu() != "" || l.GetMemory() != "" {
		cs.Resources.Limits = proto.Clone(l).(*syncpodv1.ResourceList)
	}
}

// resizeConditions are PodResizePending while the allocation says a
// resize waits, and PodResizeInProgress while a running container's
// runtime resources are not yet the admitted ones (reason Error with the
// message when the last attempt failed), as the kubelet reports them.
func (c *computer) resizeConditions() []*syncpodv1.PodCondition {
	var out []*syncpodv1.PodCondition
	if a := c.in.Allocation; a.GetPendingReason() != "" && a.GetPendingGeneration() == c.in.Pod.GetGeneration() {
		out = append(out, cond(ConditionPodResizePending, true, a.GetPendingReason(), a.GetPendingMessage()))
	}
	if c.resizing() {
		reason, msg := "", ""
		for _, s := range c.in.Steps {
			if s.GetStep() == executorv1.Step_STEP_UPDATE_CONTAINER_RESOURCES && s.GetOutcome() == executorv1.Outcome_OUTCOME_FAILED {
				reason, msg = ReasonError, s.GetMessage()
				break
			}
		}
		if reason == "" && len(c.in.Steps) == 0 {
			// Between attempts the last failure stands.
			for _, prev := range c.in.Previous.GetConditions() {
				if prev.GetType() == ConditionPodResizeInProgress {
					reason, msg = prev.GetReason(), prev.GetMessage()
				}
			}
		}
		out = append(out, cond(ConditionPodResizeInProgress, true, reason, msg))
	}
	return out
}

// resizing reports whether the newest instance of an init or regular
// container runs with other resources than it was admitted with.
func (c *computer) resizing() bool {
	spec := c.in.Pod.GetSpec()
	for _, cs := range [][]*syncpodv1.Container{spec.GetInitContainers(), spec.GetContainers()} {
		for _, ctr := range cs {
			if insts := c.byName[ctr.GetName()]; len(insts) > 0 && plan.ResizeInProgress(ctr, insts[0]) {
				return true
			}
		}
	}
	return false
}
