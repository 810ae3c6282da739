package events

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var demo = &syncpodv1.Pod{
	Uid: "u1", Name: "demo", Namespace: "default",
	Spec: &syncpodv1.PodSpec{
		InitContainers: []*syncpodv1.Container{{Name: "init", Image: "busybox"}},
		Containers:     []*syncpodv1.Container{{Name: "web", Image: "nginx:1"}},
	},
}

// short renders events as "Type Reason container: message xN".
func short(evs []*syncpodv1.Event) []string {
	var out []string
	for _, e := range evs {
		typ := strings.TrimPrefix(e.GetType().String(), "EVENT_TYPE_")
		s := fmt.Sprintf("%s %s %s: %s", typ, e.GetReason(), e.GetInvolvedContainer(), e.GetMessage())
		if e.GetCount() != 1 {
			s += fmt.Sprintf(" x%d", e.GetCount())
		}
		out = append(out, s)
	}
	return out
}

func TestMerge(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(reason, container string, s int) *syncpodv1.Event {
		return New(demo, normal, reason, container, reason, at(s))
	}
	cases := []struct {
		name string
		list []*syncpodv1.Event
		add  []*syncpodv1.Event
		max  int
		want []string
	}{
		{
			name: "distinct events append",
			add:  []*syncpodv1.Event{ev("Pulled", "web", 0), ev("Created", "web", 1)},
			want: []string{"NORMAL Pulled web: Pulled", "NORMAL Created web: Created"},
		},
		{
			name: "repeat aggregates and moves to the end",
			list: []*syncpodv1.Event{ev("BackOff", "web", 0), ev("Started", "web", 1)},
			add:  []*syncpodv1.Event{ev("BackOff", "web", 5)},
			want: []string{"NORMAL Started web: Started", "NORMAL BackOff web: BackOff x2"},
		},
		{
			name: "another container is another event",
			list: []*syncpodv1.Event{ev("BackOff", "web", 0)},
			add:  []*syncpodv1.Event{ev("BackOff", "init", 1)},
			want: []string{"NORMAL BackOff web: BackOff", "NORMAL BackOff init: BackOff"},
		},
		{
			name: "bounded: oldest dropped",
			list: []*syncpodv1.Event{ev("A", "", 0), ev("B", "", 1)},
			add:  []*syncpodv1.Event{ev("C", "", 2)},
			max:  2,
			want: []string{"NORMAL B : B", "NORMAL C : C"},
		},
		{
			name: "bounded: a repeat keeps its entry alive",
			list: []*syncpodv1.Event{ev("A", "", 0), ev("B", "", 1)},
			add:  []*syncpodv1.Event{ev("A", "", 2), ev("C", "", 3)},
			max:  2,
			want: []string{"NORMAL A : A x2", "NORMAL C : C"},
		},
		{
			name: "pre-aggregated counts add up",
			list: []*syncpodv1.Event{func() *syncpodv1.Event { e := ev("A", "", 0); e.Count = 3; return e }()},
			add:  []*syncpodv1.Event{func() *syncpodv1.Event { e := ev("A", "", 1); e.Count = 2; return e }()},
			want: []string{"NORMAL A : A x5"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			listCopy := make([]*syncpodv1.Event, len(tc.list))
			for i, e := range tc.list {
				listCopy[i] = proto.Clone(e).(*syncpodv1.Event)
			}
			got := Merge(tc.list, tc.add, tc.max)
			if fmt.Sprint(short(got)) != fmt.Sprint(tc.want) {
				t.Errorf("Merge =\n %q\nwant\n %q", short(got), tc.want)
			}
			for i := range tc.list {
				if !proto.Equal(tc.list[i], listCopy[i]) {
					t.Errorf("Merge modified its input %d", i)
				}
			}
		})
	}
}

func TestMergeKeepsFirstAndLastTimes(t *testing.T) {
	a := New(demo, warning, "BackOff", "web", "m", t0)
	b := New(demo, warning, "BackOff", "web", "m", t0.Add(time.Minute))
	got := Merge([]*syncpodv1.Event{a}, []*syncpodv1.Event{b}, 0)
	if len(got) != 1 || !got[0].GetFirstTime().AsTime().Equal(t0) || !got[0].GetLastTime().AsTime().Equal(t0.Add(time.Minute)) || got[0].GetCount() != 2 {
		t.Errorf("Merge = %v", got)
	}
	// An event without times or count still gets count 1 and a consistent window.
	bare := &syncpodv1.Event{Reason: "X", LastTime: timestamppb.New(t0)}
	got = Merge(nil, []*syncpodv1.Event{bare}, 0)
	if got[0].GetCount() != 1 || got[0].GetFirstTime() == nil {
		t.Errorf("bare event = %v", got[0])
	}
}

func TestFromApplyResult(t *testing.T) {
	step := func(s executorv1.Step, target string, o executorv1.Outcome, reason, msg string) *executorv1.StepResult {
		return &executorv1.StepResult{Step: s, Target: target, Outcome: o, Reason: reason, Message: msg}
	}
	const (
		ok      = executorv1.Outcome_OUTCOME_SUCCEEDED
		failed  = executorv1.Outcome_OUTCOME_FAILED
		skipped = executorv1.Outcome_OUTCOME_SKIPPED
	)
	cases := []struct {
		name    string
		actions *syncpodv1.PodActions
		steps   []*executorv1.StepResult
		want    []string
	}{
		{
			name:    "first start: pull, create, start (R-8)",
			actions: &syncpodv1.PodActions{CreateSandbox: true},
			steps: []*executorv1.StepResult{
				step(executorv1.Step_STEP_CREATE_SANDBOX, "sb1", ok, "", ""),
				step(executorv1.Step_STEP_PULL_IMAGE, "web", ok, "", `Successfully pulled image "nginx:1" in 1s`),
				step(executorv1.Step_STEP_START_CONTAINER, "web", ok, "", ""),
			},
			want: []string{
				`NORMAL Pulled web: Successfully pulled image "nginx:1" in 1s`,
				"NORMAL Created web: Created container: web",
				"NORMAL Started web: Started container web",
			},
		},
		{
			name:    "sandbox replaced gives SandboxChanged (R-2.2)",
			actions: &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, SandboxId: "old"},
			steps: []*executorv1.StepResult{
				step(executorv1.Step_STEP_KILL_POD, "", ok, "", ""),
				step(executorv1.Step_STEP_CREATE_SANDBOX, "sb2", ok, "", ""),
			},
			want: []string{"NORMAL SandboxChanged : Pod sandbox changed, it will be killed and re-created."},
		},
		{
			name:    "network-mode change (empty sandbox id) gives no SandboxChanged (R-2.2.3)",
			actions: &syncpodv1.PodActions{KillPod: true, CreateSandbox: true},
			steps:   []*executorv1.StepResult{step(executorv1.Step_STEP_CREATE_SANDBOX, "sb2", ok, "", "")},
		},
		{
			name:    "sandbox creation failure",
			actions: &syncpodv1.PodActions{CreateSandbox: true},
			steps: []*executorv1.StepResult{
				step(executorv1.Step_STEP_CREATE_SANDBOX, "", failed, "CreatePodSandboxError", "no network"),
				step(executorv1.Step_STEP_START_CONTAINER, "web", skipped, "", ""),
			},
			want: []string{"WARNING FailedCreatePodSandBox : Failed to create pod sandbox: no network"},
		},
		{
			name:    "sandbox creation failure, the executor's message prefixed as the kubelet's sync result (R-27.3)",
			actions: &syncpodv1.PodActions{CreateSandbox: true},
			steps: []*executorv1.StepResult{
				step(executorv1.Step_STEP_CREATE_SANDBOX, "", failed, "CreatePodSandboxError",
					"Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"),
			},
			want: []string{"WARNING FailedCreatePodSandBox : Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		},
		{
			name: "kill with a probe message (R-4.3)",
			actions: &syncpodv1.PodActions{ContainersToKill: []*syncpodv1.ContainerKill{
				{ContainerId: "c1", Name: "web", Message: "Container web failed liveness probe, will be restarted"},
				{ContainerId: "c2", Name: "side"},
			}},
			steps: []*executorv1.StepResult{
				{Step: executorv1.Step_STEP_KILL_CONTAINER, Target: "web", ContainerId: "c1", Outcome: ok},
				{Step: executorv1.Step_STEP_KILL_CONTAINER, Target: "side", ContainerId: "c2", Outcome: ok},
			},
			want: []string{
				"NORMAL Killing web: Container web failed liveness probe, will be restarted",
				"NORMAL Killing side: Stopping container side",
			},
		},
		{
			name: "R-7.6 a reset: Killing with the kubelet's text for each stopped instance, nothing for removals",
			actions: &syncpodv1.PodActions{ContainersToReset: []*syncpodv1.ContainerReset{
				{ContainerId: "c1", Name: "web", Kill: true, Message: "container web is stopped and removed"},
				{ContainerId: "c2", Name: "job", Source: true},
			}},
			steps: []*executorv1.StepResult{
				{Step: executorv1.Step_STEP_KILL_CONTAINER, Target: "web", ContainerId: "c1", Outcome: ok, Reason: "RestartAllContainers"},
				{Step: executorv1.Step_STEP_REMOVE_CONTAINER, Target: "web", ContainerId: "c1", Outcome: ok},
				{Step: executorv1.Step_STEP_REMOVE_CONTAINER, Target: "job", ContainerId: "c2", Outcome: ok},
			},
			want: []string{"NORMAL Killing web: killing"},
		},
		{
			name:    "missing volume source: FailedMount and Failed",
			actions: &syncpodv1.PodActions{},
			steps: []*executorv1.StepResult{
				step(executorv1.Step_STEP_START_CONTAINER, "web", failed, "CreateContainerConfigError", `MountVolume.SetUp failed for volume "cfg" : configmap "web" not found`),
				step(executorv1.Step_STEP_START_CONTAINER, "side", failed, "CreateContainerConfigError", `secret "creds" not found`),
			},
			want: []string{
				`WARNING FailedMount web: MountVolume.SetUp failed for volume "cfg" : configmap "web" not found`,
				"WARNING Failed web: Error: CreateContainerConfigError",
				`WARNING Failed side: Error: secret "creds" not found`,
			},
		},
		{
			name:    "crash-loop back-off (R-11.3)",
			actions: &syncpodv1.PodActions{},
			steps: []*executorv1.StepResult{
				step(executorv1.Step_STEP_START_CONTAINER, "web", skipped, "CrashLoopBackOff", "back-off 20s restarting failed container=web pod=demo"),
			},
			want: []string{"WARNING BackOff web: Back-off restarting failed container web in pod default/demo"},
		},
		{
			name:    "image pull failure then back-off: the prefix said once (R-32.1)",
			actions: &syncpodv1.PodActions{},
			steps: []*executorv1.StepResult{
				step(executorv1.Step_STEP_PULL_IMAGE, "web", failed, "ErrImagePull", "not found"),
				step(executorv1.Step_STEP_PULL_IMAGE, "init", skipped, "ImagePullBackOff", ""),
				step(executorv1.Step_STEP_PULL_IMAGE, "web", failed, "ErrImageNeverPull", ""),
			},
			want: []string{
				`WARNING Failed web: Failed to pull image "nginx:1": not found`,
				"WARNING Failed web: Error: ErrImagePull",
				`NORMAL BackOff init: Back-off pulling image "busybox"`,
				`WARNING ErrImageNeverPull web: Container image "nginx:1" is not present with pull policy of Never`,
			},
		},
		{
			name:    "image volume pulls are the pod's, a container that mounts a failed one fails (R-29.2)",
			actions: &syncpodv1.PodActions{},
			steps: []*executorv1.StepResult{
				volumeStep(step(executorv1.Step_STEP_PULL_IMAGE, "", ok, "", `Successfully pulled image "tools:1"`), "tools:1"),
				volumeStep(step(executorv1.Step_STEP_PULL_IMAGE, "", failed, "ErrImagePull", "not found"), "data:1"),
				volumeStep(step(executorv1.Step_STEP_START_CONTAINER, "web", failed, "ErrImagePull", "not found"), "data:1"),
				volumeStep(step(executorv1.Step_STEP_PULL_IMAGE, "", skipped, "ImagePullBackOff", `Back-off pulling image "data:1"`), "data:1"),
				volumeStep(step(executorv1.Step_STEP_START_CONTAINER, "web", failed, "ImagePullBackOff", `Back-off pulling image "data:1"`), "data:1"),
			},
			want: []string{
				`NORMAL Pulled : Successfully pulled image "tools:1"`,
				`WARNING Failed : Failed to pull image "data:1": not found`,
				"WARNING Failed : Error: ErrImagePull",
				"WARNING Failed web: Error: ErrImagePull",
				`NORMAL BackOff : Back-off pulling image "data:1"`,
				"WARNING Failed web: Error: ImagePullBackOff",
			},
		},
		{
			name:    "container create error",
			actions: &syncpodv1.PodActions{},
			steps: []*executorv1.StepResult{
				step(executorv1.Step_STEP_START_INIT_CONTAINER, "init", failed, "CreateContainerError", "bad command"),
				step(executorv1.Step_STEP_STOP_SANDBOX, "sb1", failed, "KillPodSandboxError", "timeout"),
			},
			want: []string{
				"WARNING Failed init: Error: bad command",
				"WARNING FailedKillPod : error killing pod: timeout",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FromApplyResult(demo, tc.actions, &executorv1.ApplyActionsResponse{Steps: tc.steps}, t0)
			if fmt.Sprint(short(got)) != fmt.Sprint(tc.want) {
				t.Errorf("events =\n %q\nwant\n %q", short(got), tc.want)
			}
			for _, e := range got {
				if e.GetPodUid() != "u1" || !e.GetLastTime().AsTime().Equal(t0) || e.GetCount() != 1 {
					t.Errorf("event not stamped: %v", e)
				}
			}
		})
	}
}

// TestFromApplyResultHooksAndConfigErrors: hook failures give the
// kubelet's FailedPostStartHook / FailedPreStopHook warnings (without the
// hook's output), a start that failed only in its postStart hook still
// says Created and Started, and CreateContainerConfigError is a Failed
// warning carrying the refusal.
func TestFromApplyResultHooksAndConfigErrors(t *testing.T) {
	failed, ok := executorv1.Outcome_OUTCOME_FAILED, executorv1.Outcome_OUTCOME_SUCCEEDED
	resp := &executorv1.ApplyActionsResponse{Steps: []*executorv1.StepResult{
		{Step: executorv1.Step_STEP_PRE_STOP_HOOK, Target: "web", Outcome: failed, Reason: "FailedPreStopHook", Message: "secret output"},
		{Step: executorv1.Step_STEP_PRE_STOP_HOOK, Target: "init", Outcome: ok},
		{Step: executorv1.Step_STEP_POST_START_HOOK, Target: "web", Outcome: failed, Reason: "FailedPostStartHook", Message: "secret output"},
		{Step: executorv1.Step_STEP_START_CONTAINER, Target: "web", Outcome: failed, Reason: "PostStartHookError", Message: "secret output"},
		{Step: executorv1.Step_STEP_START_INIT_CONTAINER, Target: "init", Outcome: failed, Reason: "CreateContainerConfigError",
			Message: "container has runAsNonRoot and image will run as root"},
	}}
	got := short(FromApplyResult(demo, &syncpodv1.PodActions{}, resp, t0))
	want := []string{
		"WARNING FailedPreStopHook web: PreStopHook failed",
		"WARNING FailedPostStartHook web: PostStartHook failed",
		"NORMAL Created web: Created container: web",
		"NORMAL Started web: Started container web",
		"WARNING Failed init: Error: container has runAsNonRoot and image will run as root",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFromApplyResultEphemeralContainer: an ephemeral container's
// pull and start give the events any container's do.
func TestFromApplyResultEphemeralContainer(t *testing.T) {
	pod := proto.CloneOf(demo)
	pod.Spec.EphemeralContainers = []*syncpodv1.Container{{Name: "debugger", Image: "busybox:1.37"}}
	ok, failed := executorv1.Outcome_OUTCOME_SUCCEEDED, executorv1.Outcome_OUTCOME_FAILED
	resp := &executorv1.ApplyActionsResponse{Steps: []*executorv1.StepResult{
		{Step: executorv1.Step_STEP_PULL_IMAGE, Target: "debugger", Outcome: ok},
		{Step: executorv1.Step_STEP_START_EPHEMERAL_CONTAINER, Target: "debugger", Outcome: ok},
		{Step: executorv1.Step_STEP_START_EPHEMERAL_CONTAINER, Target: "lost", Outcome: failed, Reason: "CreateContainerConfigError",
			Message: "unable to find target container gone"},
	}}
	got := short(FromApplyResult(pod, &syncpodv1.PodActions{}, resp, t0))
	want := []string{
		`NORMAL Pulled debugger: Container image "busybox:1.37" already present on machine`,
		"NORMAL Created debugger: Created container: debugger",
		"NORMAL Started debugger: Started container debugger",
		"WARNING Failed lost: Error: unable to find target container gone",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFromApplyResultKeptSidecarProbeKill: a pod kill that stopped
// a sidecar it kept running, for a failed probe, gives a Killing event
// with the step's message; its other stops keep the usual one.
func TestFromApplyResultKeptSidecarProbeKill(t *testing.T) {
	ok := executorv1.Outcome_OUTCOME_SUCCEEDED
	msg := "Init container proxy failed liveness probe, will be restarted"
	resp := &executorv1.ApplyActionsResponse{Steps: []*executorv1.StepResult{
		{Step: executorv1.Step_STEP_KILL_CONTAINER, Target: "proxy", ContainerId: "c1", Outcome: ok, Reason: "Unhealthy", Message: msg},
		{Step: executorv1.Step_STEP_KILL_CONTAINER, Target: "proxy", ContainerId: "c2", Outcome: ok, Message: "Stopping container proxy (grace 30s)"},
	}}
	got := short(FromApplyResult(demo, &syncpodv1.PodActions{KillPod: true}, resp, t0))
	want := []string{"NORMAL Killing proxy: " + msg, "NORMAL Killing proxy: Stopping container proxy"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func volumeStep(s *executorv1.StepResult, ref string) *executorv1.StepResult {
	s.ImageVolumeReference = ref
	return s
}
