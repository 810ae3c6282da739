package plan

import (
	"fmt"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// SidecarsToKeepRunning lists the sidecars a kill of the whole terminating
// pod keeps running until their turn to stop: each sidecar of the
// spec whose newest instance is in the pod's newest sandbox, that sandbox
// still ready, and that instance running or exited. A sidecar never
// started, or whose instance is created or in an unknown state, is not
// listed: the kill starts nothing that was not already running. Spec
// order, each with the spec hash its restarts are created (and backed
// off) with. The kubelet restarts none; the caller decides whether
// the list is used.
func SidecarsToKeepRunning(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod) []*syncpodv1.ContainerStart {
	v := newView(pod, observed, nil)
	if len(v.sandboxes) == 0 || v.sandboxes[0].GetState() != syncpodv1.SandboxState_SANDBOX_STATE_READY {
		return nil
	}
	var out []*syncpodv1.ContainerStart
	for _, c := range v.spec.GetInitContainers() {
		if !isSidecar(c) {
			continue
		}
		st := v.newestActive(c.GetName())
		switch st.GetState() {
		case syncpodv1.ContainerState_CONTAINER_STATE_RUNNING, syncpodv1.ContainerState_CONTAINER_STATE_EXITED:
			out = append(out, start(c, syncpodv1.StartReason_START_REASON_EXITED,
				fmt.Sprintf("sidecar %s is restarted if it exits before its turn to stop", c.GetName())))
		}
	}
	return out
}
