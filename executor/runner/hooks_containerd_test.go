package runner_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/syncpod/syncpod/executor/backoff"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Lifecycle hooks against a real containerd. HTTP and TCP hooks reach a
// test server on loopback from host-network pods.

func execHook(cmd ...string) *syncpodv1.LifecycleHandler {
	return &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_Exec{Exec: &syncpodv1.ExecAction{Command: cmd}}}
}

func stepsOf(resp *executorv1.ApplyActionsResponse) []string {
	var out []string
	for _, s := range resp.GetSteps() {
		out = append(out, strings.TrimPrefix(s.GetStep().String(), "STEP_")+" "+s.GetTarget()+" "+
			strings.TrimPrefix(s.GetOutcome().String(), "OUTCOME_")+" "+s.GetReason())
	}
	return out
}

func loopbackPort(t *testing.T, srv *httptest.Server) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return int32(n)
}

// TestContainerdPostStartHookRuns: the exec hook runs in the container
// right after it starts (the container sees the file it wrote).
func TestContainerdPostStartHookRuns(t *testing.T) {
	x := newReal(t, backoff.Config{})
	c := sh("app", x.cd.Busybox, `while [ ! -e /tmp/hooked ]; do sleep 0.05; done; cat /tmp/hooked`)
	c.Lifecycle = &syncpodv1.Lifecycle{PostStart: execHook("sh", "-c", "echo hook ran > /tmp/hooked")}
	pod := realPod(t, x, nil, c)
	resp := x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: start("app")})
	mustSucceed(t, resp)
	if got := strings.Join(stepsOf(resp), ","); !strings.Contains(got, "POST_START_HOOK app SUCCEEDED") {
		t.Errorf("steps %s", got)
	}
	o := x.waitFor(t, pod.GetUid(), "app to exit", inState("app", syncpodv1.ContainerState_CONTAINER_STATE_EXITED))
	if log := containerLog(t, x, newest(o, "app").GetId()); !hasLine(log, "hook ran") {
		t.Errorf("container output %v", log)
	}
}

// TestContainerdFailingPostStartKillsContainer: a failing postStart hook
// is reported, the container is killed, and its start fails with
// PostStartHookError carrying the kubelet's message.
func TestContainerdFailingPostStartKillsContainer(t *testing.T) {
	x := newReal(t, backoff.Config{})
	c := sh("app", x.cd.Busybox, `trap "exit 0" TERM; while true; do sleep 0.1; done`)
	c.Lifecycle = &syncpodv1.Lifecycle{PostStart: execHook("sh", "-c", "echo nope >&2; exit 3")}
	pod := realPod(t, x, nil, c)
	pod.Spec.TerminationGracePeriodSeconds = new(int64)
	resp := x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: start("app")})
	want := "PULL_IMAGE app SUCCEEDED ,POST_START_HOOK app FAILED FailedPostStartHook,KILL_CONTAINER app SUCCEEDED ,START_CONTAINER app FAILED PostStartHookError"
	if got := strings.Join(stepsOf(resp)[2:], ","); got != want {
		t.Fatalf("steps\n%s\nwant\n%s", got, want)
	}
	last := resp.GetSteps()[len(resp.GetSteps())-1]
	if !strings.HasPrefix(last.GetMessage(), "Exec lifecycle hook ([sh -c echo nope >&2; exit 3]) for Container \"app\" in Pod \"itest_syncpod-test(") ||
		!strings.Contains(last.GetMessage(), "exited with 3") {
		t.Errorf("message %q", last.GetMessage())
	}
	o := x.observe(t, pod.GetUid())
	if st := newest(o, "app").GetState(); st != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
		t.Errorf("app is %v after a failed postStart", st)
	}
}

// TestContainerdPreStopHooksRunBeforeStop: preStop httpGet (to loopback,
// host defaulting to the host-network pod's address) and tcpSocket hooks
// run before the stop, a failing one is FailedPreStopHook and the stop
// goes ahead; the exec hook runs in the container before it is stopped.
func TestContainerdPreStopHooksRunBeforeStop(t *testing.T) {
	x := newReal(t, backoff.Config{})
	podDir := withPodDir(t, x, "")
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path+" "+r.Header.Get("X-Hook"))
		mu.Unlock()
		if r.URL.Path == "/fail" {
			http.Error(w, "no", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	port := loopbackPort(t, srv)
	loop := `trap "exit 0" TERM; while true; do sleep 0.1; done`
	httpOK := sh("http-ok", x.cd.Busybox, loop)
	httpOK.Lifecycle = &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_HttpGet{
		HttpGet: &syncpodv1.HTTPGetAction{Path: "/shutdown", Port: port, HttpHeaders: []*syncpodv1.HTTPHeader{{Name: "X-Hook", Value: "1"}}}}}}
	httpFail := sh("http-fail", x.cd.Busybox, loop)
	httpFail.Lifecycle = &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_HttpGet{
		HttpGet: &syncpodv1.HTTPGetAction{Path: "/fail", Port: port, Host: "127.0.0.1"}}}}
	tcp := sh("tcp", x.cd.Busybox, loop)
	tcp.Lifecycle = &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_TcpSocket{
		TcpSocket: &syncpodv1.TCPSocketAction{Port: port}}}}
	execC := sh("exec", x.cd.Busybox, loop)
	execC.Lifecycle = &syncpodv1.Lifecycle{PreStop: execHook("sh", "-c", "echo stopping > /dev/termination-log")}
	pod := realPod(t, x, nil, httpOK, httpFail, tcp, execC)
	mustSucceed(t, x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true,
		ContainersToStart: start("http-ok", "http-fail", "tcp", "exec")}))
	x.waitFor(t, pod.GetUid(), "all running", func(o *syncpodv1.ObservedPod) bool {
		for _, n := range []string{"http-ok", "http-fail", "tcp", "exec"} {
			if !inState(n, syncpodv1.ContainerState_CONTAINER_STATE_RUNNING)(o) {
				return false
			}
		}
		return true
	})
	resp := x.apply(t, pod, &syncpodv1.PodActions{KillPod: true})
	got := map[string]string{}
	for _, s := range resp.GetSteps() {
		if s.GetStep() == executorv1.Step_STEP_PRE_STOP_HOOK {
			got[s.GetTarget()] = strings.TrimPrefix(s.GetOutcome().String(), "OUTCOME_") + " " + s.GetReason()
		}
		if s.GetStep() == executorv1.Step_STEP_KILL_CONTAINER && s.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
			t.Errorf("kill %s: %v", s.GetTarget(), s.GetOutcome())
		}
	}
	want := map[string]string{"http-ok": "SUCCEEDED ", "http-fail": "FAILED FailedPreStopHook", "tcp": "SUCCEEDED ", "exec": "SUCCEEDED "}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("preStop of %s: %q, want %q", k, got[k], v)
		}
	}
	mu.Lock()
	if !strings.Contains(strings.Join(paths, ","), "/shutdown 1") || !strings.Contains(strings.Join(paths, ","), "/fail ") {
		t.Errorf("requests seen: %v", paths)
	}
	mu.Unlock()
	o := x.observe(t, pod.GetUid())
	for _, c := range o.GetContainers() {
		if c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			t.Errorf("%s is %v after the kill", c.GetName(), c.GetState())
		}
	}
	if msg := readTerminationLog(t, podDir, pod.GetUid(), "exec"); msg != "stopping\n" {
		t.Errorf("exec preStop wrote %q", msg)
	}
}

// TestContainerdPreStopOfARemovedContainer: a container no longer
// in the pod spec is killed with the preStop hook it was created with,
// read back from its containerd annotations: the hook runs in it first.
func TestContainerdPreStopOfARemovedContainer(t *testing.T) {
	x := newReal(t, backoff.Config{})
	podDir := withPodDir(t, x, "")
	loop := `trap "exit 0" TERM; while true; do sleep 0.1; done`
	keep, gone := sh("keep", x.cd.Busybox, loop), sh("gone", x.cd.Busybox, loop)
	gone.Lifecycle = &syncpodv1.Lifecycle{PreStop: execHook("sh", "-c", "echo removed > /dev/termination-log")}
	pod := realPod(t, x, nil, keep, gone)
	mustSucceed(t, x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: start("keep", "gone")}))
	o := x.waitFor(t, pod.GetUid(), "both running", func(o *syncpodv1.ObservedPod) bool {
		return inState("keep", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING)(o) && inState("gone", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING)(o)
	})
	pod.Spec.Containers = pod.Spec.Containers[:1]
	resp := x.apply(t, pod, &syncpodv1.PodActions{SandboxId: o.GetSandboxes()[0].GetId(), ContainersToKill: []*syncpodv1.ContainerKill{{
		ContainerId: newest(o, "gone").GetId(), Name: "gone", Reason: syncpodv1.KillReason_KILL_REASON_REMOVED_FROM_SPEC}}})
	if got := strings.Join(stepsOf(resp), ","); got != "PRE_STOP_HOOK gone SUCCEEDED ,KILL_CONTAINER gone SUCCEEDED " {
		t.Errorf("steps %s", got)
	}
	if msg := readTerminationLog(t, podDir, pod.GetUid(), "gone"); msg != "removed\n" {
		t.Errorf("preStop of the removed container wrote %q", msg)
	}
	o = x.observe(t, pod.GetUid())
	if !inState("keep", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING)(o) || !inState("gone", syncpodv1.ContainerState_CONTAINER_STATE_EXITED)(o) {
		t.Errorf("after the kill: %v", o.GetContainers())
	}
}
