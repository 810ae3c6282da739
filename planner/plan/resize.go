package plan

import (
	"fmt"
	"slices"

	"github.com/syncpod/syncpod/proto/linuxres"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Resource names of resize policies and of the update stages.
const (
	ResourceCPU    = "cpu"
	ResourceMemory = "memory"
)

// MessageResizeRestart is the kill message of a container restarted for a
// resize (the kubelet's).
const MessageResizeRestart = "Container %s resize requires restart"

// resizes collects the in-place updates of one Compute, per stage and
// direction, in spec order.
type resizes struct {
	memDown, memUp, cpuDown, cpuUp []*syncpodv1.ContainerResourceUpdate
}

// ordered is the kubelet's order: the memory stage, then the CPU stage;
// within each, decreases first (the latest in spec order first, as the
// kubelet prepends them) then increases in spec order.
func (r *resizes) ordered() []*syncpodv1.ContainerResourceUpdate {
	if r == nil {
		return nil
	}
	var out []*syncpodv1.ContainerResourceUpdate
	memDown := slices.Clone(r.memDown)
	slices.Reverse(memDown)
	cpuDown := slices.Clone(r.cpuDown)
	slices.Reverse(cpuDown)
	out = append(out, memDown...)
	out = append(out, r.memUp...)
	out = append(out, cpuDown...)
	out = append(out, r.cpuUp...)
	return out
}

// ResizePolicy is c's restart policy for resource ("cpu", "memory"):
// NOT_REQUIRED unless it lists RESTART_CONTAINER for it.
func ResizePolicy(c *syncpodv1.Container, resource string) syncpodv1.ResizeRestartPolicy {
	for _, p := range c.GetResizePolicy() {
		if p.GetResourceName() == resource && p.GetRestartPolicy() == syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER {
			return syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER
		}
	}
	return syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_NOT_REQUIRED
}

// ResizeInProgress reports whether running instance st does not yet have
// the resources c allocates it, as the runtime reports them. An
// instance that is not running, or of which the runtime reports no
// resources, is never in progress.
func ResizeInProgress(c *syncpodv1.Container, st *syncpodv1.ObservedContainer) bool {
	if st.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
		return false
	}
	have, ok := linuxres.FromProto(st.GetResources())
	if !ok {
		return false
	}
	want, err := linuxres.Of(c.GetResources())
	if err != nil {
		return false
	}
	return !want.SameCPURequest(have) || !want.SameCPULimit(have) || !want.SameMemoryLimit(have)
}

// resize is for running instance st of container c
// whose definition is unchanged: when the runtime's resources differ from
// the allocated ones, either a resource that changed has the resize
// policy RestartContainer (restart is true, with the kubelet's message),
// or its updates are added to r. A memory request sets nothing in the
// runtime: its change restarts a container whose memory policy is
// RestartContainer, and is otherwise left alone.
func (v *view) resize(r *resizes, c *syncpodv1.Container, st *syncpodv1.ObservedContainer) (restart bool, msg string) {
	if v.deleted || st.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
		return false, ""
	}
	want, err := linuxres.Of(c.GetResources())
	if err != nil {
		return false, ""
	}
	name := c.GetName()
	// a memory request sets nothing in the runtime; its change
	// matters only to a container restarted for memory resizes, seen
	// against the request the instance was created with.
	memReq := st.MemoryRequestBytes != nil && st.GetMemoryRequestBytes() != linuxres.MemoryRequestBytes(c.GetResources())
	have, reported := linuxres.FromProto(st.GetResources())
	cpuReq, cpuLim, memLim := reported && !want.SameCPURequest(have), reported && !want.SameCPULimit(have), reported && !want.SameMemoryLimit(have)
	if ((memLim || memReq) && ResizePolicy(c, ResourceMemory) == syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER) ||
		((cpuReq || cpuLim) && ResizePolicy(c, ResourceCPU) == syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER) {
		return true, fmt.Sprintf(MessageResizeRestart, name)
	}
	if !cpuReq && !cpuLim && !memLim {
		return false, ""
	}
	if memLim {
		target := have
		target.MemoryLimitBytes = want.MemoryLimitBytes
		if want.MemoryLimitBytes == 0 {
			target.MemoryLimitBytes = -1 // the CRI's "no limit": 0 changes nothing
		}
		lower := want.MemoryLimitBytes != 0 && (have.MemoryLimitBytes == 0 || want.MemoryLimitBytes < have.MemoryLimitBytes)
		u := update(st, ResourceMemory, target, lower,
			fmt.Sprintf("container %s: memory limit %s to %s", name, bytesOrNone(have.MemoryLimitBytes), bytesOrNone(want.MemoryLimitBytes)))
		if want.MemoryLimitBytes < have.MemoryLimitBytes {
			r.memDown = append(r.memDown, u)
		} else {
			r.memUp = append(r.memUp, u)
		}
	}
	if cpuReq || cpuLim {
		target := want
		if want.CPUQuota == 0 && have.CPUQuota > 0 {
			target.CPUQuota, target.CPUPeriod = -1, have.CPUPeriod // remove the limit
		}
		if want.MemoryLimitBytes == 0 && have.MemoryLimitBytes > 0 {
			target.MemoryLimitBytes = -1
		}
		down := want.CPUShares < have.CPUShares
		if cpuLim {
			down = want.CPUQuota != 0 && (have.CPUQuota == 0 || want.CPUQuota*periodOf(have) < have.CPUQuota*periodOf(want))
		}
		u := update(st, ResourceCPU, target, down,
			fmt.Sprintf("container %s: cpu shares %d to %d, quota %d to %d", name, have.CPUShares, want.CPUShares, have.CPUQuota, want.CPUQuota))
		if down {
			r.cpuDown = append(r.cpuDown, u)
		} else {
			r.cpuUp = append(r.cpuUp, u)
		}
	}
	return false, ""
}

func update(st *syncpodv1.ObservedContainer, resource string, target linuxres.Values, decrease bool, msg string) *syncpodv1.ContainerResourceUpdate {
	return &syncpodv1.ContainerResourceUpdate{ContainerId: st.GetId(), Name: st.GetName(), Resource: resource,
		Resources: target.Proto(), Decrease: decrease, Message: msg}
}

func periodOf(v linuxres.Values) int64 {
	if v.CPUPeriod <= 0 {
		return linuxres.CPUPeriod
	}
	return v.CPUPeriod
}

func bytesOrNone(b int64) string {
	if b <= 0 {
		return "none"
	}
	return fmt.Sprintf("%d", b)
}
