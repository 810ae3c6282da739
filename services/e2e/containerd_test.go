package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestLifecycleOnContainerd runs the lifecycle once against the real
// containerd of make test: a host-network pod with an init container, a
// sidecar and a container comes up Running; a crashing container is
// restarted and backs off; a spec change restarts only its container;
// deleting the pod stops and removes everything from containerd.
func TestLifecycleOnContainerd(t *testing.T) {
	endpoint := nodeOnContainerd(t) // skips loudly, or fails in CI/as root
	busybox := containerdtest.BusyboxImage()
	n := startNode(t, nodeOptions{criEndpoint: endpoint})

	c := func(name string, cmd ...string) *syncpodv1.Container {
		return &syncpodv1.Container{Name: name, Image: busybox, Command: cmd,
			ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}
	}
	p := pod("lifecycle", c("app", "sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"),
		c("crash", "sh", "-c", "exit 1"))
	p.Spec.HostNetwork = true
	p.Spec.InitContainers = []*syncpodv1.Container{
		c("init", "sh", "-c", "echo init"),
		c("sidecar", "sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"),
	}
	p.Spec.InitContainers[1].RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	stored := n.apply(p)

	// Up: init done, sidecar and app running; crash restarted and backing off.
	rec := n.waitRecord(p.Name, time.Minute, "sidecar and app running, crash restarted and backing off", func(r *plannerv1.PodRecord) bool {
		app, side, crash := cstatus(r, "app"), cstatus(r, "sidecar"), cstatus(r, "crash")
		return app.GetState().GetRunning() != nil && side.GetState().GetRunning() != nil &&
			crash.GetRestartCount() >= 1 && findEvent(r, "BackOff", "crash") != nil
	})
	if term := cstatus(rec, "init").GetState().GetTerminated(); term == nil || term.GetExitCode() != 0 {
		t.Errorf("init = %s, want terminated with 0", stateString(cstatus(rec, "init").GetState()))
	}
	if got := n.readySandboxes(stored.GetUid()); got != 1 {
		t.Errorf("%d READY sandboxes in containerd, want 1", got)
	}
	appID := cstatus(rec, "app").GetContainerId()
	n.checkPLEGMode()

	// A spec change of the sidecar restarts it alone.
	p.Spec.InitContainers[1].Env = []*syncpodv1.EnvVar{{Name: "V", Value: "2"}}
	n.apply(p)
	rec = n.waitRecord(p.Name, time.Minute, "the sidecar restarted for its new spec", func(r *plannerv1.PodRecord) bool {
		return cstatus(r, "sidecar").GetRestartCount() == 1 && cstatus(r, "sidecar").GetState().GetRunning() != nil
	})
	if got := cstatus(rec, "app").GetContainerId(); got != appID {
		t.Errorf("app was restarted by the sidecar's spec change (%s -> %s)", appID, got)
	}

	// Delete: everything stopped and removed from containerd.
	if code, out, errOut := n.ctl("delete", "pod", p.Name, "--grace-period", "3"); code != 0 {
		t.Fatalf("syncpodctl delete: exit %d: %s %s", code, out, errOut)
	}
	eventually(t, time.Minute, "the pod gone from the planner and from containerd", func() (bool, string) {
		_, err := n.get(p.Name)
		sbs, cs := n.runtimeOf(stored.GetUid())
		return err != nil && len(sbs) == 0 && len(cs) == 0,
			fmt.Sprintf("%d sandboxes and %d containers left; planner: %v", len(sbs), len(cs), err)
	})
}

// checkPLEGMode fails the test when the node's PLEG is not in the mode
// the test containerd must give (containerdtest.ExpectedPLEGMode): relist
// on Debian's 1.6, evented on 2.x, where this proves the evented PLEG on a
// real runtime. The mode is read once the pod runs, so an evented stream
// has had its confirmation time.
func (n *node) checkPLEGMode() {
	n.t.Helper()
	mode, ok := expectedPLEGMode(n.t)
	if !ok {
		return
	}
	resp, err := n.plegc.ListPodStatuses(rpcCtx(n.t), &plegv1.ListPodStatusesRequest{})
	if err != nil {
		n.t.Fatalf("ListPodStatuses: %v", err)
	}
	n.t.Logf("PLEG mode on this containerd: %s", resp.GetMode())
	if resp.GetMode() != mode {
		n.t.Errorf("PLEG mode = %s, want %s (%s)", resp.GetMode(), mode, containerdtest.EnvPLEGMode)
	}
}

// waitPLEGMode waits until the PLEG is in the mode the harness expects
// of this containerd (after the runtime came back, say: evented again
// once its event stream is open).
func (n *node) waitPLEGMode(timeout time.Duration) {
	n.t.Helper()
	mode, ok := expectedPLEGMode(n.t)
	if !ok {
		return
	}
	eventually(n.t, timeout, "PLEG mode "+mode.String(), func() (bool, string) {
		resp, err := n.plegc.ListPodStatuses(rpcCtx(n.t), &plegv1.ListPodStatusesRequest{})
		return err == nil && resp.GetMode() == mode, fmt.Sprintf("%v %v", resp.GetMode(), err)
	})
}

// expectedPLEGMode is the PLEG mode the harness expects of its containerd
// (containerdtest.EnvPLEGMode), if it says.
func expectedPLEGMode(t *testing.T) (plegv1.PlegMode, bool) {
	t.Helper()
	w := containerdtest.ExpectedPLEGMode()
	if w == "" {
		return 0, false
	}
	mode, ok := map[string]plegv1.PlegMode{"relist": plegv1.PlegMode_PLEG_MODE_RELIST, "evented": plegv1.PlegMode_PLEG_MODE_EVENTED}[w]
	if !ok {
		t.Fatalf("%s=%q: want relist or evented", containerdtest.EnvPLEGMode, w)
	}
	return mode, true
}
