package runner

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func sleepHook(s int64) *syncpodv1.LifecycleHandler {
	return &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_Sleep{Sleep: &syncpodv1.SleepAction{Seconds: s}}}
}

// TestPreStopTakesItsTimeFromTheGracePeriod: the preStop hook runs
// before the stop and its duration in whole seconds is taken from the
// grace period StopContainer gets; a hook longer than the grace period is
// abandoned when it runs out and the stop gets the 2 s floor; a failing
// hook is reported as FailedPreStopHook and the stop goes ahead.
func TestPreStopTakesItsTimeFromTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hook      *syncpodv1.LifecycleHandler
		wantGrace int64
		wantStep  string
	}{
		{"R-9.5 a 3 s sleep leaves 7 of 10 s", sleepHook(3), 7, "SUCCEEDED "},
		{"R-9.5 a hook past the grace period is cut off; the floor is 2 s", sleepHook(60), 2, "FAILED FailedPreStopHook"},
		{"R-9.5 a failing exec hook: reported, stop with the full grace", &syncpodv1.LifecycleHandler{
			Action: &syncpodv1.LifecycleHandler_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"fail"}}}}, 10, "FAILED FailedPreStopHook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, busybox)
				e.rt.ExecFunc = func(string, []string) (int32, []byte, error) { return 1, []byte("boom"), nil }
				c := ctr("app")
				c.Lifecycle = &syncpodv1.Lifecycle{PreStop: tc.hook}
				pod := testPod(nil, c)
				grace := int64(10)
				pod.Spec.TerminationGracePeriodSeconds = &grace
				resp := e.apply(t, pod, e.observe(t, pod.GetUid()), &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("app")})
				o := e.observe(t, pod.GetUid())
				if len(o.GetContainers()) != 1 {
					t.Fatalf("start: %s", summary(resp))
				}
				resp = e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: resp.GetSandboxId(),
					ContainersToKill: []*syncpodv1.ContainerKill{{ContainerId: o.GetContainers()[0].GetId(), Name: "app"}}})
				stops := e.rt.Stops()
				if len(stops) != 1 || stops[0].Timeout != tc.wantGrace {
					t.Errorf("stops %v, want one with grace %d", stops, tc.wantGrace)
				}
				got := summary(resp)
				if want := "PRE_STOP_HOOK app " + strings.TrimSpace(tc.wantStep) + "\nKILL_CONTAINER app SUCCEEDED\n"; got != want {
					t.Errorf("steps:\n%s\nwant:\n%s", got, want)
				}
			})
		})
	}
}

// TestFailingPostStartKillsTheContainer: the hook's failure is a
// FailedPostStartHook step with the kubelet's message, the container is
// stopped, and the start fails with PostStartHookError.
func TestFailingPostStartKillsTheContainer(t *testing.T) {
	e := newEnv(t, busybox)
	e.rt.ExecFunc = func(string, []string) (int32, []byte, error) { return 2, []byte("no config"), nil }
	c := ctr("app")
	c.Lifecycle = &syncpodv1.Lifecycle{PostStart: &syncpodv1.LifecycleHandler{
		Action: &syncpodv1.LifecycleHandler_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"check", "--config"}}}}}
	pod := testPod(nil, c)
	resp := e.apply(t, pod, e.observe(t, pod.GetUid()), &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("app")})
	if got, want := summary(stepsOnly(resp, executorv1.Step_STEP_POST_START_HOOK, executorv1.Step_STEP_KILL_CONTAINER, executorv1.Step_STEP_START_CONTAINER)),
		"POST_START_HOOK app FAILED FailedPostStartHook\nKILL_CONTAINER app SUCCEEDED\nSTART_CONTAINER app FAILED PostStartHookError\n"; got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	last := resp.GetSteps()[len(resp.GetSteps())-1]
	want := `Exec lifecycle hook ([check --config]) for Container "app" in Pod "demo_ns(uid-1)" failed - error: command 'check --config' exited with 2: , message: "no config"`
	if last.GetMessage() != want {
		t.Errorf("message\n%s\nwant\n%s", last.GetMessage(), want)
	}
	if len(e.rt.Stops()) != 1 {
		t.Errorf("stops %v, want the started container stopped", e.rt.Stops())
	}
}

// TestNetworkPostStartHooks: httpGet and tcpSocket hooks of a
// host-network pod go to 127.0.0.1 (internal/handler does the request):
// a redirect is the hook's answer, not followed (3xx succeeds), a 5xx
// fails the start with the kubelet's message, and so does a refused
// connect.
func TestNetworkPostStartHooks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/broken", http.StatusFound)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	port := int32(srv.Listener.Addr().(*net.TCPAddr).Port)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := int32(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	httpHook := func(path string) *syncpodv1.LifecycleHandler {
		return &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_HttpGet{HttpGet: &syncpodv1.HTTPGetAction{Path: path, Port: port}}}
	}
	for _, tc := range []struct {
		name, want, msg string
		hook            *syncpodv1.LifecycleHandler
	}{
		{"a redirect answers the hook", "POST_START_HOOK app SUCCEEDED\nSTART_CONTAINER app SUCCEEDED\n", "", httpHook("/moved")},
		{"a 5xx fails the start", "POST_START_HOOK app FAILED FailedPostStartHook\nKILL_CONTAINER app SUCCEEDED\nSTART_CONTAINER app FAILED PostStartHookError\n",
			`HTTP lifecycle hook (/broken) for Container "app" in Pod "demo_ns(uid-1)" failed - error: HTTP lifecycle hook returned status 500`, httpHook("/broken")},
		{"a refused connect fails the start", "POST_START_HOOK app FAILED FailedPostStartHook\nKILL_CONTAINER app SUCCEEDED\nSTART_CONTAINER app FAILED PostStartHookError\n",
			fmt.Sprintf(`TCP lifecycle hook (%d) for Container "app" in Pod "demo_ns(uid-1)" failed - error: `, closedPort),
			&syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_TcpSocket{TcpSocket: &syncpodv1.TCPSocketAction{Port: closedPort}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, busybox)
			c := ctr("app")
			c.Lifecycle = &syncpodv1.Lifecycle{PostStart: tc.hook}
			pod := testPod(nil, c)
			pod.Spec.HostNetwork = true
			resp := e.apply(t, pod, e.observe(t, pod.GetUid()), &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("app")})
			if got := summary(stepsOnly(resp, executorv1.Step_STEP_POST_START_HOOK, executorv1.Step_STEP_KILL_CONTAINER, executorv1.Step_STEP_START_CONTAINER)); got != tc.want {
				t.Fatalf("steps:\n%s\nwant:\n%s", got, tc.want)
			}
			if last := resp.GetSteps()[len(resp.GetSteps())-1]; !strings.HasPrefix(last.GetMessage(), tc.msg) {
				t.Errorf("message\n%s\nwant it to start with\n%s", last.GetMessage(), tc.msg)
			}
		})
	}
}

// TestPreStopOfAContainerWithoutItsSpec: an instance killed when its
// spec is gone still gets the preStop hook it was created with, from its
// annotation: a container removed from the pod (killed with the pod's grace
// period) and an orphan's container (killed with the grace period it was
// created with, the stand-in pod having none).
func TestPreStopOfAContainerWithoutItsSpec(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kill      func(e *env, pod *syncpodv1.Pod, o *syncpodv1.ObservedPod, id string) *executorv1.ApplyActionsResponse
		wantGrace int64
	}{
		{"R-9.6 removed from the spec: ContainersToKill", func(e *env, pod *syncpodv1.Pod, o *syncpodv1.ObservedPod, id string) *executorv1.ApplyActionsResponse {
			now := testPod(nil, ctr("app"))
			now.Spec.TerminationGracePeriodSeconds = pod.Spec.TerminationGracePeriodSeconds
			return e.apply(t, now, o, &syncpodv1.PodActions{SandboxId: o.GetSandboxes()[0].GetId(),
				ContainersToKill: []*syncpodv1.ContainerKill{{ContainerId: id, Name: "gone", Reason: syncpodv1.KillReason_KILL_REASON_REMOVED_FROM_SPEC}}})
		}, 10},
		{"R-9.6 orphan: the pod kill of a stand-in pod", func(e *env, pod *syncpodv1.Pod, o *syncpodv1.ObservedPod, _ string) *executorv1.ApplyActionsResponse {
			standIn := &syncpodv1.Pod{Uid: pod.GetUid(), Name: pod.GetName(), Namespace: pod.GetNamespace(), Spec: &syncpodv1.PodSpec{}}
			return e.apply(t, standIn, o, &syncpodv1.PodActions{KillPod: true})
		}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, busybox)
			var mu sync.Mutex
			var ran []string
			e.rt.ExecFunc = func(id string, cmd []string) (int32, []byte, error) {
				mu.Lock()
				defer mu.Unlock()
				ran = append(ran, id+": "+strings.Join(cmd, " "))
				return 0, nil, nil
			}
			gone := ctr("gone")
			gone.Lifecycle = &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{
				Action: &syncpodv1.LifecycleHandler_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"sh", "-c", "echo bye > /tmp/x"}}}}}
			pod := testPod(nil, gone)
			grace := int64(10)
			pod.Spec.TerminationGracePeriodSeconds = &grace
			resp := e.apply(t, pod, e.observe(t, pod.GetUid()), &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("gone")})
			o := e.observe(t, pod.GetUid())
			if len(o.GetContainers()) != 1 {
				t.Fatalf("start: %s", summary(resp))
			}
			id := o.GetContainers()[0].GetId()
			resp = tc.kill(e, pod, o, id)
			if got := summary(stepsOnly(resp, executorv1.Step_STEP_PRE_STOP_HOOK, executorv1.Step_STEP_KILL_CONTAINER)); got != "PRE_STOP_HOOK gone SUCCEEDED\nKILL_CONTAINER gone SUCCEEDED\n" {
				t.Errorf("steps:\n%s", got)
			}
			if want := []string{id + ": sh -c echo bye > /tmp/x"}; !slices.Equal(ran, want) {
				t.Errorf("hooks run %q, want %q", ran, want)
			}
			if stops := e.rt.Stops(); len(stops) != 1 || stops[0].Timeout != tc.wantGrace {
				t.Errorf("stops %v, want one with grace %d", stops, tc.wantGrace)
			}
		})
	}
}

// TestKillGraceOverrideReplacesThePodsGrace_R9_5: a pod kill with a grace
// period override (an eviction's 1 s) ignores the pod's 30 s: a preStop
// hook gets at most the override (none at 0), and every stop the 2 s
// floor; without an override the pod's grace stands.
func TestKillGraceOverrideReplacesThePodsGrace_R9_5(t *testing.T) {
	ptr := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name      string
		hook      *syncpodv1.LifecycleHandler
		override  *int64
		wantGrace int64
		wantSteps string
	}{
		{"no override: the pod's 30 s", nil, nil, 30, "KILL_CONTAINER app SUCCEEDED\n"},
		{"override 1 s: the stop gets the 2 s floor", nil, ptr(int64(1)), 2, "KILL_CONTAINER app SUCCEEDED\n"},
		{"override 1 s: a 60 s preStop hook is cut off after 1 s", sleepHook(60), ptr(int64(1)), 2,
			"PRE_STOP_HOOK app FAILED FailedPreStopHook\nKILL_CONTAINER app SUCCEEDED\n"},
		{"override 0: no preStop hook at all", sleepHook(60), ptr(int64(0)), 2, "KILL_CONTAINER app SUCCEEDED\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, busybox)
				c := ctr("app")
				if tc.hook != nil {
					c.Lifecycle = &syncpodv1.Lifecycle{PreStop: tc.hook}
				}
				pod := testPod(nil, c)
				grace := int64(30)
				pod.Spec.TerminationGracePeriodSeconds = &grace
				resp := e.apply(t, pod, e.observe(t, pod.GetUid()), &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("app")})
				o := e.observe(t, pod.GetUid())
				if len(o.GetContainers()) != 1 {
					t.Fatalf("start: %s", summary(resp))
				}
				began := time.Now()
				resp = e.apply(t, pod, o, &syncpodv1.PodActions{KillPod: true,
					KillPodReason: syncpodv1.KillPodReason_KILL_POD_REASON_NOTHING_TO_RUN, KillGracePeriodOverrideSeconds: tc.override})
				took := time.Since(began)
				stops := e.rt.Stops()
				if len(stops) != 1 || stops[0].Timeout != tc.wantGrace {
					t.Errorf("stops %v, want one with grace %d", stops, tc.wantGrace)
				}
				if got := summary(stepsOnly(resp, executorv1.Step_STEP_PRE_STOP_HOOK, executorv1.Step_STEP_KILL_CONTAINER)); got != tc.wantSteps {
					t.Errorf("steps:\n%s\nwant:\n%s", got, tc.wantSteps)
				}
				// Fake time: the hook ran for exactly its budget.
				if tc.hook != nil && tc.override != nil && took > time.Duration(*tc.override)*time.Second {
					t.Errorf("the kill took %v, more than the override %ds", took, *tc.override)
				}
			})
		})
	}
}

// TestPreStopHTTPGetWithoutHostReachesThePodIPOnAPodKill: the
// kill of a deleted, finished or orphaned pod names no sandbox, yet an
// httpGet preStop hook without a host goes to the pod's IP, read from its
// newest sandbox while that is ready; a pod whose newest sandbox is no
// longer ready has no IP and the hook fails with that reason, the stop
// going ahead.
func TestPreStopHTTPGetWithoutHostReachesThePodIPOnAPodKill(t *testing.T) {
	for _, tc := range []struct {
		name     string
		notReady bool
		want     string
		hits     int
	}{
		{"R-18.4 a ready sandbox: the hook reaches the pod IP", false, "PRE_STOP_HOOK app SUCCEEDED\nKILL_CONTAINER app SUCCEEDED\n", 1},
		{"R-18.4 a sandbox no longer ready: no pod IP", true, "PRE_STOP_HOOK app FAILED FailedPreStopHook\nKILL_CONTAINER app SUCCEEDED\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var paths []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				paths = append(paths, r.URL.Path)
			}))
			defer srv.Close()
			port := int32(srv.Listener.Addr().(*net.TCPAddr).Port)
			e := newEnv(t, busybox)
			c := ctr("app")
			c.Lifecycle = &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{
				Action: &syncpodv1.LifecycleHandler_HttpGet{HttpGet: &syncpodv1.HTTPGetAction{Path: "/prestop", Port: port}}}}
			pod := testPod(nil, c)
			pod.Spec.HostNetwork = false
			resp := e.apply(t, pod, e.observe(t, pod.GetUid()), &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("app")})
			o := e.observe(t, pod.GetUid())
			if len(o.GetContainers()) != 1 || len(o.GetSandboxes()) != 1 {
				t.Fatalf("start: %s", summary(resp))
			}
			// The test's server stands for the pod: its sandbox's IP is
			// the loopback address the server listens on.
			o.Sandboxes[0].Ip = "127.0.0.1"
			if tc.notReady {
				o.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
			}
			resp = e.apply(t, pod, o, &syncpodv1.PodActions{KillPod: true})
			if got := summary(stepsOnly(resp, executorv1.Step_STEP_PRE_STOP_HOOK, executorv1.Step_STEP_KILL_CONTAINER)); got != tc.want {
				t.Errorf("steps:\n%s\nwant:\n%s", got, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(paths) != tc.hits {
				t.Errorf("the pod's server got %q, want %d request(s)", paths, tc.hits)
			}
		})
	}
}
