package runner

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func debugger(name, target string) *syncpodv1.Container {
	return &syncpodv1.Container{Name: name, Image: busybox, Command: []string{"sh"}, Stdin: true, Tty: true, TargetContainerName: target}
}

// an ephemeral container starts in the running pod's sandbox,
// before the init and regular starts of the same pass, labelled as
// ephemeral, in its target's PID namespace; the running containers are
// left alone.
func TestEphemeralContainerStartsBeforeInitsInTargetNamespace(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod(nil, ctr("web"), ctr("worker"))
	o := runningPod(t, e, pod)
	var webID, workerID string
	for _, c := range o.GetContainers() {
		switch c.GetName() {
		case "web":
			webID = c.GetId()
		case "worker":
			workerID = c.GetId()
		}
	}
	pod.Spec.EphemeralContainers = []*syncpodv1.Container{debugger("debugger", "web"), debugger("plain", "")}
	// A regular start in the same pass comes after the ephemeral ones.
	e.rt.ExitContainer(workerID, 1, "", e.clock.Now().Add(-time.Minute).UnixNano()) // its back-off has passed
	o = e.observe(t, pod.GetUid())
	resp := e.apply(t, pod, o, &syncpodv1.PodActions{
		SandboxId:                  o.GetSandboxes()[0].GetId(),
		EphemeralContainersToStart: starts("debugger", "plain"),
		ContainersToStart:          starts("worker"),
	})
	want := "PULL_IMAGE debugger SUCCEEDED\nSTART_EPHEMERAL_CONTAINER debugger SUCCEEDED\n" +
		"PULL_IMAGE plain SUCCEEDED\nSTART_EPHEMERAL_CONTAINER plain SUCCEEDED\n" +
		"PULL_IMAGE worker SUCCEEDED\nSTART_CONTAINER worker SUCCEEDED\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	dbg := e.rt.CreatedConfig(resp.GetSteps()[1].GetContainerId())
	if got := dbg.GetLabels()[crilabels.ContainerType]; got != crilabels.ContainerTypeEphemeral {
		t.Errorf("container type label %q", got)
	}
	ns := dbg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != webID {
		t.Errorf("debugger PID namespace %v target %q, want TARGET %q", ns.GetPid(), ns.GetTargetId(), webID)
	}
	if !dbg.GetStdin() || !dbg.GetTty() {
		t.Errorf("stdin/tty lost: %v", dbg)
	}
	plain := e.rt.CreatedConfig(resp.GetSteps()[3].GetContainerId()).GetLinux().GetSecurityContext().GetNamespaceOptions()
	if plain.GetPid() != runtimeapi.NamespaceMode_CONTAINER || plain.GetTargetId() != "" {
		t.Errorf("untargeted PID namespace %v target %q", plain.GetPid(), plain.GetTargetId())
	}
	after := e.observe(t, pod.GetUid())
	for _, c := range after.GetContainers() {
		if c.GetName() == "web" && (c.GetId() != webID || c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING) {
			t.Errorf("web was touched: %v", c)
		}
	}
}

// with one shared process namespace there is no target to join; a
// target that has no instance fails the start as the kubelet's
// CreateContainerConfigError, and a failed ephemeral start does not stop
// the pass.
func TestEphemeralContainerTargetRules(t *testing.T) {
	e := newEnv(t, busybox)
	share := true
	pod := testPod(nil, ctr("web"), ctr("later"))
	pod.Spec.ShareProcessNamespace = &share
	pod.Spec.EphemeralContainers = []*syncpodv1.Container{debugger("shared", "web"), debugger("lost", "later")}
	resp := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("web")})
	sbID := resp.GetSandboxId()
	o := e.observe(t, pod.GetUid())
	resp = e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: sbID, EphemeralContainersToStart: starts("lost", "shared"), ContainersToStart: starts("later")})
	got := summary(stepsOnly(resp, executorv1.Step_STEP_START_EPHEMERAL_CONTAINER, executorv1.Step_STEP_START_CONTAINER))
	want := "START_EPHEMERAL_CONTAINER lost FAILED CreateContainerConfigError\nSTART_EPHEMERAL_CONTAINER shared SUCCEEDED\nSTART_CONTAINER later SUCCEEDED\n"
	if got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	if msg := resp.GetSteps()[1].GetMessage(); msg != "unable to find target container later" {
		t.Errorf("message %q", msg)
	}
	var sharedID string
	for _, s := range resp.GetSteps() {
		if s.GetTarget() == "shared" && s.GetStep() == executorv1.Step_STEP_START_EPHEMERAL_CONTAINER {
			sharedID = s.GetContainerId()
		}
	}
	ns := e.rt.CreatedConfig(sharedID).GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_POD || ns.GetTargetId() != "" {
		t.Errorf("shared-namespace pod: PID %v target %q, want POD and no target", ns.GetPid(), ns.GetTargetId())
	}
	// A start named as ephemeral must be one.
	resp = e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: sbID, EphemeralContainersToStart: starts("web")})
	if got := summary(resp); got != "START_EPHEMERAL_CONTAINER web FAILED CreateContainerConfigError\n" {
		t.Errorf("regular container started as ephemeral: %s", got)
	}
}
