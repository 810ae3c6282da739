package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/cgroups"
	"github.com/syncpod/syncpod/proto/linuxres"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ReasonResizeError is the reason of a failed in-place update.
const ReasonResizeError = "ResizeError"

// Resource stages of an in-place resize, in the kubelet's order.
var resizeStages = []string{cgroups.StageMemory, cgroups.StageCPU}

// PodResizer is the pod cgroup's part of an in-place resize: the seam
// where the pod-level cgroup (and the pod-level spec.resources) is
// resized around its containers' updates, in the kubelet's order
// (doPodResizeAction): for each resource stage, "memory" then "cpu",
// GrowPod before the stage's container updates, ShrinkPod after them.
// Each is given the pod as allocated (its spec's resources are the ones
// to reach) and raises (GrowPod) or lowers (ShrinkPod) only the pod
// cgroup values of that resource that go that way, so that the pod's
// limit is never below the sum of its containers' while they change. An
// error fails the resize, as a failed container update does. It is
// called on every pass that resizes a container in place or restarts
// one for a resize. With Config.PodResizer nil the runner resizes its pod
// cgroups (cgroups.Manager.ResizeStage) when it makes them, and the
// containers alone when it makes none.
type PodResizer interface {
	GrowPod(ctx context.Context, pod *syncpodv1.Pod, resource string) error
	ShrinkPod(ctx context.Context, pod *syncpodv1.Pod, resource string) error
}

// resize is: the in-place updates of the change set, stage by
// stage, wrapped in the pod cgroup's grow and shrink (PodResizer). Before
// any memory limit is lowered (or set where there was none) each such
// container's memory usage is read: a limit at or below it fails the
// whole resize with the kubelet's message, and nothing is updated
// . The first failure ends the resize: its step is FAILED with
// reason ResizeError and the message, the updates after it SKIPPED. A
// failed resize does not stop the starts after it, as in the kubelet.
func (p *pass) resize(ctx context.Context) {
	updates := p.actions.GetContainersToUpdate()
	if len(updates) == 0 && !p.restartsForResize() {
		return
	}
	fail := func(done int, u *syncpodv1.ContainerResourceUpdate, began time.Time, msg string) {
		target, id := "", ""
		if u != nil {
			target, id = u.GetName(), u.GetContainerId()
		}
		p.add(executorv1.Step_STEP_UPDATE_CONTAINER_RESOURCES, target, executorv1.Outcome_OUTCOME_FAILED, began,
			withReason(ReasonResizeError, msg), withContainer(id))
		for _, rest := range updates[done:] {
			if rest == u {
				continue
			}
			p.add(executorv1.Step_STEP_UPDATE_CONTAINER_RESOURCES, rest.GetName(), executorv1.Outcome_OUTCOME_SKIPPED, time.Time{},
				withMessage("an earlier part of the resize failed"), withContainer(rest.GetContainerId()))
		}
	}
	began := time.Now()
	if msg := p.checkMemoryDecrease(ctx, updates); msg != "" {
		var first *syncpodv1.ContainerResourceUpdate
		if len(updates) > 0 {
			first = updates[0]
		}
		fail(0, first, began, msg)
		return
	}
	done := 0
	for _, stage := range resizeStages {
		if pr := p.r.podResizer; pr != nil {
			if err := pr.GrowPod(ctx, p.pod, stage); err != nil {
				fail(done, nil, began, fmt.Sprintf("pod %s: %v", stage, err))
				return
			}
		}
		for done < len(updates) && updates[done].GetResource() == stage {
			u := updates[done]
			began := time.Now()
			v, _ := linuxres.FromProto(u.GetResources())
			l := LinuxResources(v)
			// The CRI's "no limit" is -1 where a limit is removed; 0
			// would leave the old one.
			l.CpuQuota, l.MemoryLimitInBytes = u.GetResources().GetCpuQuota(), u.GetResources().GetMemoryLimitBytes()
			err := p.rt.UpdateContainerResources(ctx, u.GetContainerId(), &runtimeapi.ContainerResources{Linux: l})
			if p.fatal(err) {
				return
			}
			if err != nil {
				fail(done, u, began, fmt.Sprintf("updating the %s of container %q: %v", stage, u.GetName(), err))
				return
			}
			p.add(executorv1.Step_STEP_UPDATE_CONTAINER_RESOURCES, u.GetName(), executorv1.Outcome_OUTCOME_SUCCEEDED, began,
				withMessage(u.GetMessage()), withContainer(u.GetContainerId()))
			p.r.log.Debug("container resized in place", "pod", podDesc(p.pod), "container", u.GetName(), "resource", stage)
			done++
		}
		if pr := p.r.podResizer; pr != nil {
			if err := pr.ShrinkPod(ctx, p.pod, stage); err != nil {
				fail(done, nil, began, fmt.Sprintf("pod %s: %v", stage, err))
				return
			}
		}
	}
}

// restartsForResize reports whether a container is restarted for a
// resize: the pod cgroup is resized then too.
func (p *pass) restartsForResize() bool {
	for _, cs := range slices.Concat(p.actions.GetInitContainersToStart(), p.actions.GetContainersToStart()) {
		if cs.GetReason() == syncpodv1.StartReason_START_REASON_RESIZE {
			return true
		}
	}
	return false
}

// checkMemoryDecrease is the kubelet's validateMemoryResizeAction for the
// containers: "" when every lowered memory limit is above the
// container's current memory usage, else the message of the failure.
func (p *pass) checkMemoryDecrease(ctx context.Context, updates []*syncpodv1.ContainerResourceUpdate) string {
	var errs []string
	for _, u := range updates {
		if u.GetResource() != "memory" || !u.GetDecrease() {
			continue
		}
		limit := u.GetResources().GetMemoryLimitBytes()
		st, err := p.rt.ContainerStats(ctx, u.GetContainerId())
		usage := st.GetMemory().GetUsageBytes()
		switch {
		case err != nil || usage == nil:
			errs = append(errs, fmt.Sprintf("missing container %q memory usage", u.GetName()))
		case usage.GetValue() >= uint64(limit):
			errs = append(errs, fmt.Sprintf("attempting to set container %q memory limit (%d) below current usage (%d)",
				u.GetName(), limit, usage.GetValue()))
		}
	}
	switch len(errs) {
	case 0:
		return ""
	case 1:
		return "cannot decrease memory limits: " + errs[0]
	default:
		return "cannot decrease memory limits: [" + strings.Join(errs, ", ") + "]"
	}
}
