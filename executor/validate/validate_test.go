package validate

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

const testUID = "0b6a7c8e-1f2d-4e3a-9b4c-5d6e7f8a9b0c"

func goodPod() *syncpodv1.Pod {
	return &syncpodv1.Pod{Uid: testUID, Name: "demo", Spec: &syncpodv1.PodSpec{HostNetwork: true,
		InitContainers: []*syncpodv1.Container{{Name: "init", Image: "busybox:1.36"}},
		Containers:     []*syncpodv1.Container{{Name: "web", Image: "busybox:1.36"}}}}
}

// checkProblems checks what ApplyActions finds wrong with req, a line
// per field ("path: message"), against want ("" for nothing).
func checkProblems(t *testing.T, req *executorv1.ApplyActionsRequest, want string) {
	t.Helper()
	var lines []string
	for _, fe := range fielderr.As(ApplyActions(req)) {
		lines = append(lines, fe.Error())
	}
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}

// FuzzApplyActions: whatever the bytes of a request, validation
// neither panics nor accepts a request whose pod the shared rules refuse,
// and its error is a bounded InvalidArgument status.
func FuzzApplyActions(f *testing.F) {
	good := &executorv1.ApplyActionsRequest{Pod: goodPod(), Observed: &syncpodv1.ObservedPod{Uid: testUID,
		Containers: []*syncpodv1.ObservedContainer{{Id: "c1", Name: "web", State: syncpodv1.ContainerState_CONTAINER_STATE_RUNNING}}},
		Actions: &syncpodv1.PodActions{SandboxId: "s1", ContainersToStart: []*syncpodv1.ContainerStart{{Name: "web", SpecHash: "h"}},
			ContainersToKill: []*syncpodv1.ContainerKill{{ContainerId: "c1", Name: "web"}}}}
	b, _ := proto.Marshal(good)
	f.Add(b)
	bad := proto.Clone(good).(*executorv1.ApplyActionsRequest)
	bad.Pod.Uid, bad.Pod.Name = "garbage-uid", "Bad Name!"
	b, _ = proto.Marshal(bad)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &executorv1.ApplyActionsRequest{}
		if proto.Unmarshal(data, req) != nil {
			return
		}
		err := ApplyActions(req)
		if err == nil {
			if req.GetPod().GetUid() == "" || req.GetActions() == nil {
				t.Fatalf("accepted a request without uid or actions: %v", req)
			}
			if n := len(req.GetPod().GetSpec().GetContainers()) + len(req.GetPod().GetSpec().GetInitContainers()); n > 64 {
				t.Fatalf("accepted %d containers", n)
			}
			return
		}
		st := fielderr.Status("", fielderr.As(err))
		if st.Code() != codes.InvalidArgument || len(st.Message()) > 8<<10 {
			t.Fatalf("code %v, %d-byte message", st.Code(), len(st.Message()))
		}
	})
}

// TestKillOfARemovedContainer: a kill may name a container that is
// not in the spec only with KILL_REASON_REMOVED_FROM_SPEC, and that reason
// only for such a container.
func TestKillOfARemovedContainer(t *testing.T) {
	removed := syncpodv1.KillReason_KILL_REASON_REMOVED_FROM_SPEC
	for _, tc := range []struct {
		name   string
		kill   *syncpodv1.ContainerKill
		errors string
	}{
		{"R-9.6 removed container with its reason", &syncpodv1.ContainerKill{ContainerId: "c2", Name: "gone", Reason: removed}, ""},
		{"unknown container without the reason", &syncpodv1.ContainerKill{ContainerId: "c2", Name: "gone"},
			`actions.containers_to_kill[0].name: "gone" is not a container of the pod`},
		{"container of the spec with the removed reason", &syncpodv1.ContainerKill{ContainerId: "c1", Name: "web", Reason: removed},
			`actions.containers_to_kill[0].reason: "web" is still a container of the pod`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &executorv1.ApplyActionsRequest{Pod: goodPod(), Actions: &syncpodv1.PodActions{SandboxId: "s1",
				ContainersToKill: []*syncpodv1.ContainerKill{tc.kill}}}
			checkProblems(t, req, tc.errors)
		})
	}
}

// TestEphemeralStartsNameEphemeralContainers: an ephemeral start
// names an ephemeral container of the spec and needs a sandbox; a kill may
// name one.
func TestEphemeralStartsNameEphemeralContainers(t *testing.T) {
	pod := goodPod()
	pod.Spec.EphemeralContainers = []*syncpodv1.Container{{Name: "debugger", Image: "busybox:1.36"}}
	for _, tc := range []struct {
		name    string
		actions *syncpodv1.PodActions
		errors  string
	}{
		{"ephemeral start", &syncpodv1.PodActions{SandboxId: "s1",
			EphemeralContainersToStart: []*syncpodv1.ContainerStart{{Name: "debugger", SpecHash: "h"}}}, ""},
		{"kill of an ephemeral container", &syncpodv1.PodActions{SandboxId: "s1",
			ContainersToKill: []*syncpodv1.ContainerKill{{ContainerId: "c9", Name: "debugger"}}}, ""},
		{"a regular container as ephemeral", &syncpodv1.PodActions{SandboxId: "s1",
			EphemeralContainersToStart: []*syncpodv1.ContainerStart{{Name: "web", SpecHash: "h"}}},
			`actions.ephemeral_containers_to_start[0].name: "web" is not an ephemeral container of the pod`},
		{"no sandbox", &syncpodv1.PodActions{
			EphemeralContainersToStart: []*syncpodv1.ContainerStart{{Name: "debugger", SpecHash: "h"}}},
			`actions.sandbox_id: required to start containers without create_sandbox`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, &executorv1.ApplyActionsRequest{Pod: pod, Actions: tc.actions}, tc.errors)
		})
	}
}

// TestResetNamesInstancesOfThePodsContainers: each entry of
// containers_to_reset names an instance of an init or regular container,
// once, and a reset never comes with a pod kill.
func TestResetNamesInstancesOfThePodsContainers(t *testing.T) {
	pod := goodPod()
	pod.Spec.EphemeralContainers = []*syncpodv1.Container{{Name: "debugger", Image: "busybox:1.36"}}
	reset := func(rs ...*syncpodv1.ContainerReset) *syncpodv1.PodActions {
		return &syncpodv1.PodActions{SandboxId: "s1", ContainersToReset: rs}
	}
	killed := reset(&syncpodv1.ContainerReset{ContainerId: "c1", Name: "web"})
	killed.KillPod = true
	for _, tc := range []struct {
		name    string
		actions *syncpodv1.PodActions
		errors  string
	}{
		{"R-7.3 init and regular instances", reset(&syncpodv1.ContainerReset{ContainerId: "c1", Name: "web", Kill: true},
			&syncpodv1.ContainerReset{ContainerId: "c2", Name: "init", Source: true}), ""},
		{"no id", reset(&syncpodv1.ContainerReset{Name: "web"}), `actions.containers_to_reset[0].container_id: required`},
		{"twice", reset(&syncpodv1.ContainerReset{ContainerId: "c1", Name: "web"}, &syncpodv1.ContainerReset{ContainerId: "c1", Name: "web"}),
			`actions.containers_to_reset[1].container_id: "c1" is reset twice (also containers_to_reset[0])`},
		{"an ephemeral container is not reset", reset(&syncpodv1.ContainerReset{ContainerId: "c9", Name: "debugger"}),
			`actions.containers_to_reset[0].name: "debugger" is not an init or regular container of the pod`},
		{"with a pod kill", killed, `actions.containers_to_reset: not allowed with kill_pod: the reset keeps the sandbox`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, &executorv1.ApplyActionsRequest{Pod: pod, Actions: tc.actions}, tc.errors)
		})
	}
}

// TestSidecarsToKeepRunning: only a pod kill keeps sidecars running,
// and only sidecars, each once.
func TestSidecarsToKeepRunning(t *testing.T) {
	pod := goodPod()
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, &syncpodv1.Container{Name: "proxy", Image: "busybox:1.36",
		RestartPolicy: syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS})
	keep := func(names ...string) []*syncpodv1.ContainerStart {
		var out []*syncpodv1.ContainerStart
		for _, n := range names {
			out = append(out, &syncpodv1.ContainerStart{Name: n, SpecHash: "h"})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		actions *syncpodv1.PodActions
		errors  string
	}{
		{"a sidecar with a pod kill", &syncpodv1.PodActions{KillPod: true, SidecarsToKeepRunning: keep("proxy")}, ""},
		{"without a pod kill", &syncpodv1.PodActions{SidecarsToKeepRunning: keep("proxy")},
			`actions.sidecars_to_keep_running: allowed only with kill_pod`},
		{"a regular init container", &syncpodv1.PodActions{KillPod: true, SidecarsToKeepRunning: keep("init")},
			`actions.sidecars_to_keep_running[0].name: "init" is not a sidecar (an init container with restart policy Always) of the pod`},
		{"twice", &syncpodv1.PodActions{KillPod: true, SidecarsToKeepRunning: keep("proxy", "proxy")},
			`actions.sidecars_to_keep_running[1].name: "proxy" is started twice (also sidecars_to_keep_running[0])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := ApplyActions(&executorv1.ApplyActionsRequest{Pod: pod, Actions: tc.actions}); err != nil {
				var lines []string
				for _, fe := range fielderr.As(err) {
					lines = append(lines, fe.Error())
				}
				got = strings.Join(lines, "\n")
			}
			if got != tc.errors {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.errors)
			}
		})
	}
}
