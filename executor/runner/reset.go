package runner

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ReasonRestartAllContainers is the kill reason of a container stopped
// because every container of its pod restarts in place (the kubelet's
// reasonRestartAllContainers).
const ReasonRestartAllContainers = "RestartAllContainers"

// resetContainers carries out PodActions.containers_to_reset, one
// instance after the other in the plan's order, as the kubelet's SyncPod:
// an instance that has not exited is stopped with no preStop hook and the
// shortest grace period (the kubelet's override of 0, raised to the
// 2-second floor), then removed from the runtime, its log file kept (a
// later instance takes its restart count from the log directory, R-7.4).
// The first failure ends the pass. It reports success.
func (p *pass) resetContainers(ctx context.Context) bool {
	for _, r := range p.actions.GetContainersToReset() {
		id, name := r.GetContainerId(), r.GetName()
		if r.GetKill() {
			t0 := time.Now()
			if err := runtimeclient.IgnoreNotFound(p.rt.StopContainer(ctx, id, MinGracePeriod)); err != nil {
				p.fatal(err)
				p.add(executorv1.Step_STEP_KILL_CONTAINER, name, executorv1.Outcome_OUTCOME_FAILED, t0,
					withReason("KillContainerError", err.Error()), withContainer(id))
				return false
			}
			p.add(executorv1.Step_STEP_KILL_CONTAINER, name, executorv1.Outcome_OUTCOME_SUCCEEDED, t0,
				withReason(ReasonRestartAllContainers, fmt.Sprintf("Stopping container %s: every container of the pod restarts (grace %ds)", name, MinGracePeriod)),
				withContainer(id))
		}
		t0 := time.Now()
		if err := runtimeclient.IgnoreNotFound(p.rt.RemoveContainer(ctx, id)); err != nil {
			p.fatal(err)
			p.add(executorv1.Step_STEP_REMOVE_CONTAINER, name, executorv1.Outcome_OUTCOME_FAILED, t0,
				withReason("RemoveContainerError", err.Error()), withContainer(id))
			return false
		}
		p.add(executorv1.Step_STEP_REMOVE_CONTAINER, name, executorv1.Outcome_OUTCOME_SUCCEEDED, t0,
			withMessage("removed, its log kept: every container of the pod restarts"), withContainer(id))
	}
	return true
}

// resetIDs are the instances the plan's reset removes.
func resetIDs(a *syncpodv1.PodActions) map[string]bool {
	if len(a.GetContainersToReset()) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, r := range a.GetContainersToReset() {
		out[r.GetContainerId()] = true
	}
	return out
}

// logFileName is a container log file's name, <restart count>.log, with
// the suffix a rotation adds.
var logFileName = regexp.MustCompile(`^(\d+)\.log(\..*)?$`)

// RestartCountFromLogDir is one more than the highest restart count whose
// log file is in dir (a container's log directory), or 0 when there is
// none or dir cannot be read.
func RestartCountFromLogDir(dir string) int32 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int32
	for _, e := range entries {
		m := logFileName.FindStringSubmatch(e.Name())
		if e.IsDir() || m == nil {
			continue
		}
		c, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil || c >= 1<<31-1 {
			continue
		}
		n = max(n, int32(c)+1)
	}
	return n
}
