package runner

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// TestResetRestartsEveryContainerInPlace: the plan's
// containers_to_reset are carried out one after the other in its order,
// each running one stopped first with no preStop hook and the 2-second
// floor, then removed; the sandbox is kept. The next pass starts the pod
// again in the same sandbox, each container's restart count going on
// from the log files its removed instances left.
func TestResetRestartsEveryContainerInPlace(t *testing.T) {
	e := newEnv(t, busybox)
	web := ctr("web")
	web.Lifecycle = &syncpodv1.Lifecycle{PreStop: sleepHook(5)}
	grace := int64(30)
	pod := testPod([]*syncpodv1.Container{sidecar("proxy")}, web, ctr("job"))
	pod.Spec.TerminationGracePeriodSeconds = &grace
	o := runningPod(t, e, pod)
	ids := map[string]string{}
	for _, c := range o.GetContainers() {
		ids[c.GetName()] = c.GetId()
	}
	e.rt.ExitContainer(ids["job"], 42, "Error", 0)
	o = e.observe(t, pod.GetUid())
	sbID := o.GetSandboxes()[0].GetId()
	// The runtime wrote each instance's log as 0.log.
	for name := range ids {
		dir := filepath.Join(PodLogDir(e.logDir, pod), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "0.log"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	resp := e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: sbID, ContainersToReset: []*syncpodv1.ContainerReset{
		{ContainerId: ids["web"], Name: "web", Kill: true},
		{ContainerId: ids["proxy"], Name: "proxy", Kill: true},
		{ContainerId: ids["job"], Name: "job", Source: true},
	}})
	want := "KILL_CONTAINER web SUCCEEDED RestartAllContainers\nREMOVE_CONTAINER web SUCCEEDED\n" +
		"KILL_CONTAINER proxy SUCCEEDED RestartAllContainers\nREMOVE_CONTAINER proxy SUCCEEDED\n" +
		"REMOVE_CONTAINER job SUCCEEDED\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	for _, s := range e.rt.Stops() {
		if s.Timeout != MinGracePeriod {
			t.Errorf("stop of %s with grace %d, want %d", s.ID, s.Timeout, MinGracePeriod)
		}
	}
	if n := len(e.rt.Stops()); n != 2 {
		t.Errorf("%d stops, want 2 (the exited instance is only removed)", n)
	}
	if len(e.rt.SandboxStops()) != 0 {
		t.Errorf("sandbox stopped: %v", e.rt.SandboxStops())
	}
	o = e.observe(t, pod.GetUid())
	if len(o.GetContainers()) != 0 || len(o.GetSandboxes()) != 1 || o.GetSandboxes()[0].GetState() != syncpodv1.SandboxState_SANDBOX_STATE_READY {
		t.Fatalf("after the reset: %v", o)
	}
	if _, err := os.Stat(filepath.Join(PodLogDir(e.logDir, pod), "job", "0.log")); err != nil {
		t.Errorf("log of a removed instance not kept: %v", err)
	}

	resp = e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: sbID, InitContainersToStart: starts("proxy")})
	if got := summary(stepsOnly(resp, executorv1.Step_STEP_START_INIT_CONTAINER)); got != "START_INIT_CONTAINER proxy SUCCEEDED\n" {
		t.Fatalf("restart: %s", summary(resp))
	}
	o = e.observe(t, pod.GetUid())
	if len(o.GetContainers()) != 1 || o.GetContainers()[0].GetRestartCount() != 1 || o.GetContainers()[0].GetSandboxId() != sbID {
		t.Fatalf("restarted instance %v, want restart count 1 in sandbox %s", o.GetContainers(), sbID)
	}
}

// TestResetStopsAtTheFirstFailure: a failed removal ends the pass,
// as the kubelet's SyncPod returns on it; what follows is not attempted.
func TestResetStopsAtTheFirstFailure(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod(nil, ctr("a"), ctr("b"))
	o := runningPod(t, e, pod)
	e.rt.InjectError("RemoveContainer", status.Error(codes.Internal, "busy"))
	var resets []*syncpodv1.ContainerReset
	for _, c := range o.GetContainers() {
		resets = append(resets, &syncpodv1.ContainerReset{ContainerId: c.GetId(), Name: c.GetName(), Kill: true})
	}
	resp := e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: o.GetSandboxes()[0].GetId(), ContainersToReset: resets})
	first := resets[0].GetName()
	want := "KILL_CONTAINER " + first + " SUCCEEDED RestartAllContainers\nREMOVE_CONTAINER " + first + " FAILED RemoveContainerError\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
}

// the restart count a container's log directory implies.
func TestRestartCountFromLogDir(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"0.log", "3.log.20261127-101010", "1.log", "x.log", "7.logs"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "9.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := RestartCountFromLogDir(dir); got != 4 {
		t.Errorf("RestartCountFromLogDir = %d, want 4", got)
	}
	if got := RestartCountFromLogDir(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("missing dir: %d", got)
	}
}
