package status

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

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func at(s int) *timestamppb.Timestamp { return timestamppb.New(t0.Add(time.Duration(s) * time.Second)) }

const (
	running = syncpodv1.ContainerState_CONTAINER_STATE_RUNNING
	exited  = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
	created = syncpodv1.ContainerState_CONTAINER_STATE_CREATED
	unknown = syncpodv1.ContainerState_CONTAINER_STATE_UNKNOWN
)

// inst is an observed container instance created at second s.
func inst(name string, s int, state syncpodv1.ContainerState, exit int32, restarts int32) *syncpodv1.ObservedContainer {
	c := &syncpodv1.ObservedContainer{
		Id: fmt.Sprintf("%s-%d", name, s), Name: name, State: state, ExitCode: exit,
		RestartCount: restarts, CreatedAt: at(s), SandboxId: "sb",
	}
	if state == running || state == exited {
		c.StartedAt = at(s + 1)
	}
	if state == exited {
		c.FinishedAt = at(s + 2)
	}
	return c
}

func ctr(name string) *syncpodv1.Container {
	return &syncpodv1.Container{Name: name, Image: name + ":1"}
}

func sidecar(name string) *syncpodv1.Container {
	c := ctr(name)
	c.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	return c
}

type podOpt func(*syncpodv1.Pod)

func mkPod(inits, ctrs []*syncpodv1.Container, opts ...podOpt) *syncpodv1.Pod {
	p := &syncpodv1.Pod{Uid: "u1", Name: "demo", Namespace: "default", Generation: 1,
		Spec: &syncpodv1.PodSpec{InitContainers: inits, Containers: ctrs}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func policy(r syncpodv1.RestartPolicy) podOpt {
	return func(p *syncpodv1.Pod) { p.Spec.RestartPolicy = r }
}

func observed(cs ...*syncpodv1.ObservedContainer) *syncpodv1.ObservedPod {
	return &syncpodv1.ObservedPod{Uid: "u1", Containers: cs, Sandboxes: []*syncpodv1.ObservedSandbox{
		{Id: "sb", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, CreatedAt: at(0), Ip: "10.0.0.5"}}}
}

// summary renders a container status as "name=state[:reason][/exit] (last ...) rN ready".
func summary(cs *syncpodv1.ContainerStatus) string {
	state := func(d *syncpodv1.ContainerStateDetail) string {
		switch {
		case d.GetRunning() != nil:
			return "running"
		case d.GetTerminated() != nil:
			return fmt.Sprintf("terminated:%s/%d", d.GetTerminated().GetReason(), d.GetTerminated().GetExitCode())
		case d.GetWaiting() != nil:
			return "waiting:" + d.GetWaiting().GetReason()
		}
		return "none"
	}
	s := cs.GetName() + "=" + state(cs.GetState())
	if cs.GetLastTerminationState() != nil {
		s += " last=" + state(cs.GetLastTerminationState())
	}
	if cs.GetRestartCount() > 0 {
		s += fmt.Sprintf(" r%d", cs.GetRestartCount())
	}
	if cs.GetReady() {
		s += " ready"
	}
	return s
}

// conds renders the conditions the tables check, PodReadyToStartContainers
// aside: it follows the sandbox alone, and TestReadyToStartFollowsTheSandbox
// checks it.
func conds(st *syncpodv1.PodStatus) string {
	var out []string
	for _, c := range st.GetConditions() {
		if c.GetType() == ConditionReadyToStart {
			continue
		}
		v := "F"
		if c.GetStatus() == syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE {
			v = "T"
		}
		s := c.GetType() + "=" + v
		if c.GetReason() != "" {
			s += ":" + c.GetReason()
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestCompute(t *testing.T) {
	backoff := func(name string, untilS int) *executorv1.StepResult {
		return &executorv1.StepResult{Step: executorv1.Step_STEP_START_CONTAINER, Target: name,
			Outcome: executorv1.Outcome_OUTCOME_SKIPPED, Reason: "CrashLoopBackOff",
			Message: "back-off 40s restarting failed container=" + name + " pod=demo", BackoffUntil: at(untilS)}
	}
	readinessProbe := &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"true"}}}}
	withReadiness := ctr("web")
	withReadiness.ReadinessProbe = readinessProbe
	withStartup := ctr("web")
	withStartup.StartupProbe = readinessProbe
	neverCtr := ctr("web")
	neverCtr.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
	ruleCtr := ctr("web")
	ruleCtr.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER
	ruleCtr.RestartPolicyRules = []*syncpodv1.ContainerRestartRule{{
		Action:    syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART,
		ExitCodes: &syncpodv1.ContainerRestartRuleOnExitCodes{Operator: syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, Values: []int32{42}},
	}}
	oom := inst("web", 10, exited, 137, 0)
	oom.Reason = "OOMKilled"

	cases := []struct {
		name       string
		pod        *syncpodv1.Pod
		obs        *syncpodv1.ObservedPod
		steps      []*executorv1.StepResult
		probes     []*syncpodv1.ContainerProbeResults
		now        int
		wantPhase  syncpodv1.PodPhase
		wantInit   []string
		wantCtrs   []string
		wantConds  string
		wantMsgHas string
	}{
		{
			name:      "new pod: ContainerCreating, Pending",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantCtrs:  []string{"web=waiting:ContainerCreating"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "init containers pending: PodInitializing everywhere (R-5.4)",
			pod:       mkPod([]*syncpodv1.Container{ctr("init")}, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("init", 1, running, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantInit:  []string{"init=running"},
			wantCtrs:  []string{"web=waiting:PodInitializing"},
			wantConds: "Initialized=F:ContainersNotInitialized ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "init done, container running: Running and Ready",
			pod:       mkPod([]*syncpodv1.Container{ctr("init")}, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("init", 1, exited, 0, 0), inst("web", 5, running, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantInit:  []string{"init=terminated:Completed/0 ready"},
			wantCtrs:  []string{"web=running ready"},
			wantConds: "Initialized=T ContainersReady=T Ready=T",
		},
		{
			name:      "init failed, pod Never: Failed (R-3.1)",
			pod:       mkPod([]*syncpodv1.Container{ctr("init")}, []*syncpodv1.Container{ctr("web")}, policy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER)),
			obs:       observed(inst("init", 1, exited, 1, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_FAILED,
			wantInit:  []string{"init=terminated:Error/1"},
			wantCtrs:  []string{"web=waiting:PodInitializing"},
			wantConds: "Initialized=F:ContainersNotInitialized ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "init failed, pod Always: retried, Pending (R-5.3)",
			pod:       mkPod([]*syncpodv1.Container{ctr("init")}, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("init", 1, exited, 1, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantInit:  []string{"init=terminated:Error/1"},
			wantCtrs:  []string{"web=waiting:PodInitializing"},
			wantConds: "Initialized=F:ContainersNotInitialized ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:       "crash loop: waiting CrashLoopBackOff with time left, last state Error (R-11.3)",
			pod:        mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:        observed(inst("web", 10, exited, 1, 3), inst("web", 1, exited, 1, 2)),
			steps:      []*executorv1.StepResult{backoff("web", 52)},
			now:        27,
			wantPhase:  syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:   []string{"web=waiting:CrashLoopBackOff last=terminated:Error/1 r3"},
			wantConds:  "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
			wantMsgHas: "back-off 40s restarting failed container=web pod=demo (25s remaining)",
		},
		{
			name:       "crash loop whose back-off has expired says so",
			pod:        mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:        observed(inst("web", 10, exited, 1, 3)),
			steps:      []*executorv1.StepResult{backoff("web", 20)},
			now:        30,
			wantPhase:  syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:   []string{"web=waiting:CrashLoopBackOff last=terminated:Error/1 r3"},
			wantConds:  "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
			wantMsgHas: "(back-off expired, restart pending)",
		},
		{
			name:      "stale back-off step: container re-created after it, shown as it is",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("web", 60, exited, 1, 4), inst("web", 10, exited, 1, 3)),
			steps:     []*executorv1.StepResult{backoff("web", 52)},
			now:       70,
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=terminated:Error/1 last=terminated:Error/1 r4"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "restarted container running shows last termination",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("web", 20, running, 0, 1), inst("web", 1, exited, 1, 0)),
			steps:     []*executorv1.StepResult{backoff("web", 15)},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=running last=terminated:Error/1 r1 ready"},
			wantConds: "Initialized=T ContainersReady=T Ready=T",
		},
		{
			name:      "all exited 0, pod Never: Succeeded, PodCompleted",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web"), ctr("job")}, policy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER)),
			obs:       observed(inst("web", 1, exited, 0, 0), inst("job", 1, exited, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_SUCCEEDED,
			wantCtrs:  []string{"web=terminated:Completed/0", "job=terminated:Completed/0"},
			wantConds: "Initialized=T ContainersReady=F:PodCompleted Ready=F:PodCompleted",
		},
		{
			name:      "one exited 1, pod Never: Failed",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web"), ctr("job")}, policy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER)),
			obs:       observed(inst("web", 1, exited, 0, 0), inst("job", 1, exited, 1, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_FAILED,
			wantCtrs:  []string{"web=terminated:Completed/0", "job=terminated:Error/1"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "OnFailure with a failure to restart: Running",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web"), ctr("job")}, policy(syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE)),
			obs:       observed(inst("web", 1, exited, 0, 0), inst("job", 1, exited, 1, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=terminated:Completed/0", "job=terminated:Error/1"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "Always with everything exited 0: Running (will restart)",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("web", 1, exited, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=terminated:Completed/0"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "OOMKilled reason from the runtime, pod Never: Failed",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web")}, policy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER)),
			obs:       observed(oom),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_FAILED,
			wantCtrs:  []string{"web=terminated:OOMKilled/137"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "container restart policy Never overrides pod Always (R-12.1)",
			pod:       mkPod(nil, []*syncpodv1.Container{neverCtr}),
			obs:       observed(inst("web", 1, exited, 1, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_FAILED,
			wantCtrs:  []string{"web=terminated:Error/1"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "restart rule matching the exit code restarts (R-12.1)",
			pod:       mkPod(nil, []*syncpodv1.Container{ruleCtr}, policy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER)),
			obs:       observed(inst("web", 1, exited, 42, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=terminated:Error/42"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "deleted pod restarts nothing (R-4.2)",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web")}, func(p *syncpodv1.Pod) { p.DeletionTime = at(0) }),
			obs:       observed(inst("web", 1, exited, 1, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_FAILED,
			wantCtrs:  []string{"web=terminated:Error/1"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name: "image pull failure: ErrImagePull, Pending",
			pod:  mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:  observed(),
			steps: []*executorv1.StepResult{{Step: executorv1.Step_STEP_PULL_IMAGE, Target: "web",
				Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: "ErrImagePull", Message: "not found"}},
			wantPhase:  syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantCtrs:   []string{"web=waiting:ErrImagePull"},
			wantConds:  "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
			wantMsgHas: "not found",
		},
		{
			name: "missing ConfigMap: CreateContainerConfigError, Pending",
			pod:  mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:  observed(),
			steps: []*executorv1.StepResult{{Step: executorv1.Step_STEP_START_CONTAINER, Target: "web",
				Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: "CreateContainerConfigError", Message: `configmap "cfg" not found`}},
			wantPhase:  syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantCtrs:   []string{"web=waiting:CreateContainerConfigError"},
			wantConds:  "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
			wantMsgHas: `configmap "cfg" not found`,
		},
		{
			name: "image pull back-off: ImagePullBackOff",
			pod:  mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			steps: []*executorv1.StepResult{{Step: executorv1.Step_STEP_PULL_IMAGE, Target: "web",
				Outcome: executorv1.Outcome_OUTCOME_SKIPPED, Reason: "ImagePullBackOff", Message: `Back-off pulling image "web:1"`}},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantCtrs:  []string{"web=waiting:ImagePullBackOff"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name: "runAsNonRoot refused: CreateContainerConfigError",
			pod:  mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			steps: []*executorv1.StepResult{{Step: executorv1.Step_STEP_START_CONTAINER, Target: "web",
				Outcome: executorv1.Outcome_OUTCOME_FAILED, Reason: "CreateContainerConfigError", Message: "container has runAsNonRoot and image will run as root"}},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantCtrs:  []string{"web=waiting:CreateContainerConfigError"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "created, not started: ContainerCreating",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("web", 1, created, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantCtrs:  []string{"web=waiting:ContainerCreating"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "unknown state: Pending",
			pod:       mkPod(nil, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("web", 1, unknown, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_PENDING,
			wantCtrs:  []string{"web=waiting:ContainerStatusUnknown"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "readiness probe without result: running, not ready (R-4.4)",
			pod:       mkPod(nil, []*syncpodv1.Container{withReadiness}),
			obs:       observed(inst("web", 1, running, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=running"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "readiness probe success: ready",
			pod:       mkPod(nil, []*syncpodv1.Container{withReadiness}),
			obs:       observed(inst("web", 1, running, 0, 0)),
			probes:    []*syncpodv1.ContainerProbeResults{{Name: "web", Readiness: syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS}},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=running ready"},
			wantConds: "Initialized=T ContainersReady=T Ready=T",
		},
		{
			name:      "probe result for another instance is ignored (R-4.4)",
			pod:       mkPod(nil, []*syncpodv1.Container{withReadiness}),
			obs:       observed(inst("web", 1, running, 0, 0)),
			probes:    []*syncpodv1.ContainerProbeResults{{Name: "web", ContainerId: "old", Readiness: syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS}},
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=running"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "startup probe not passed: not started, not ready",
			pod:       mkPod(nil, []*syncpodv1.Container{withStartup}),
			obs:       observed(inst("web", 1, running, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantCtrs:  []string{"web=running"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
		{
			name:      "sidecar running beside the container: initialised, Running (R-5.3)",
			pod:       mkPod([]*syncpodv1.Container{ctr("init"), sidecar("proxy")}, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("init", 1, exited, 0, 0), inst("proxy", 5, running, 0, 0), inst("web", 8, running, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantInit:  []string{"init=terminated:Completed/0 ready", "proxy=running ready"},
			wantCtrs:  []string{"web=running ready"},
			wantConds: "Initialized=T ContainersReady=T Ready=T",
		},
		{
			name:      "sidecar restarting after the containers started: still initialised",
			pod:       mkPod([]*syncpodv1.Container{sidecar("proxy")}, []*syncpodv1.Container{ctr("web")}),
			obs:       observed(inst("proxy", 5, exited, 1, 0), inst("web", 8, running, 0, 0)),
			wantPhase: syncpodv1.PodPhase_POD_PHASE_RUNNING,
			wantInit:  []string{"proxy=terminated:Error/1"},
			wantCtrs:  []string{"web=running ready"},
			wantConds: "Initialized=T ContainersReady=F:ContainersNotReady Ready=F:ContainersNotReady",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pod: tc.pod, Observed: tc.obs, Steps: tc.steps, Probes: tc.probes, Now: t0.Add(time.Duration(tc.now) * time.Second)}
			got := Compute(in)
			if got.GetPhase() != tc.wantPhase {
				t.Errorf("phase = %v, want %v", got.GetPhase(), tc.wantPhase)
			}
			var init, ctrs []string
			for _, c := range got.GetInitContainerStatuses() {
				init = append(init, summary(c))
			}
			for _, c := range got.GetContainerStatuses() {
				ctrs = append(ctrs, summary(c))
			}
			if fmt.Sprint(init) != fmt.Sprint(tc.wantInit) {
				t.Errorf("init statuses = %q, want %q", init, tc.wantInit)
			}
			if fmt.Sprint(ctrs) != fmt.Sprint(tc.wantCtrs) {
				t.Errorf("container statuses = %q, want %q", ctrs, tc.wantCtrs)
			}
			if c := conds(got); c != tc.wantConds {
				t.Errorf("conditions = %s\nwant         %s", c, tc.wantConds)
			}
			if tc.wantMsgHas != "" {
				msg := got.GetContainerStatuses()[0].GetState().GetWaiting().GetMessage()
				if !strings.Contains(msg, tc.wantMsgHas) {
					t.Errorf("waiting message = %q, want it to contain %q", msg, tc.wantMsgHas)
				}
			}
			// Determinism: same input, same output.
			if again := Compute(in); !proto.Equal(got, again) {
				t.Error("Compute is not deterministic")
			}
		})
	}
}

func TestPodIPAndStartTime(t *testing.T) {
	pod := mkPod(nil, []*syncpodv1.Container{ctr("web")})
	sb := func(id string, s int, ready, host bool, ip string) *syncpodv1.ObservedSandbox {
		st := syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
		if ready {
			st = syncpodv1.SandboxState_SANDBOX_STATE_READY
		}
		return &syncpodv1.ObservedSandbox{Id: id, State: st, CreatedAt: at(s), HostNetwork: host, Ip: ip}
	}
	cases := []struct {
		name string
		sbs  []*syncpodv1.ObservedSandbox
		want string
	}{
		{"ready pod-network sandbox", []*syncpodv1.ObservedSandbox{sb("a", 1, true, false, "10.0.0.7")}, "10.0.0.7"},
		{"newest wins, whatever the order", []*syncpodv1.ObservedSandbox{sb("old", 1, false, false, "10.0.0.1"), sb("new", 5, true, false, "10.0.0.2")}, "10.0.0.2"},
		{"newest not ready: no IP (R-2.2.2)", []*syncpodv1.ObservedSandbox{sb("new", 5, false, false, "10.0.0.2"), sb("old", 1, true, false, "10.0.0.1")}, ""},
		{"host network: no IP", []*syncpodv1.ObservedSandbox{sb("a", 1, true, true, "192.168.1.1")}, ""},
		{"no sandbox", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Compute(Input{Pod: pod, Observed: &syncpodv1.ObservedPod{Sandboxes: tc.sbs}, Now: t0})
			if got.GetPodIp() != tc.want {
				t.Errorf("pod IP = %q, want %q", got.GetPodIp(), tc.want)
			}
		})
	}

	first := Compute(Input{Pod: pod, Now: t0})
	later := Compute(Input{Pod: pod, Previous: first, Now: t0.Add(time.Hour)})
	if !later.GetStartTime().AsTime().Equal(t0) || !later.GetUpdatedAt().AsTime().Equal(t0.Add(time.Hour)) {
		t.Errorf("start %v updated %v; want start carried from the first status", later.GetStartTime().AsTime(), later.GetUpdatedAt().AsTime())
	}
	if later.GetObservedGeneration() != 1 {
		t.Errorf("observed generation = %d", later.GetObservedGeneration())
	}
}

func TestConditionTransitionTimesCarryOver(t *testing.T) {
	pod := mkPod(nil, []*syncpodv1.Container{ctr("web")})
	runningObs := observed(inst("web", 1, running, 0, 0))
	s1 := Compute(Input{Pod: pod, Observed: runningObs, Now: t0})
	s2 := Compute(Input{Pod: pod, Observed: runningObs, Previous: s1, Now: t0.Add(time.Minute)})
	for _, c := range s2.GetConditions() {
		if !c.GetLastTransitionTime().AsTime().Equal(t0) {
			t.Errorf("%s transition moved to %v without a change", c.GetType(), c.GetLastTransitionTime().AsTime())
		}
	}
	crashed := observed(inst("web", 1, exited, 1, 0))
	s3 := Compute(Input{Pod: pod, Observed: crashed, Previous: s2, Now: t0.Add(2 * time.Minute)})
	for _, c := range s3.GetConditions() {
		want := t0
		if c.GetType() != ConditionInitialized && c.GetType() != ConditionReadyToStart {
			want = t0.Add(2 * time.Minute) // Ready and ContainersReady turned False
		}
		if !c.GetLastTransitionTime().AsTime().Equal(want) {
			t.Errorf("%s transition = %v, want %v", c.GetType(), c.GetLastTransitionTime().AsTime(), want)
		}
	}
}

func TestTerminalPhaseSticksForTheSameGeneration(t *testing.T) {
	pod := mkPod(nil, []*syncpodv1.Container{ctr("web")}, policy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER))
	done := Compute(Input{Pod: pod, Observed: observed(inst("web", 1, exited, 0, 0)), Now: t0})
	if done.GetPhase() != syncpodv1.PodPhase_POD_PHASE_SUCCEEDED {
		t.Fatalf("phase = %v", done.GetPhase())
	}
	// The containers were garbage-collected: the phase must not go back to Pending.
	gone := Compute(Input{Pod: pod, Observed: observed(), Previous: done, Now: t0.Add(time.Minute)})
	if gone.GetPhase() != syncpodv1.PodPhase_POD_PHASE_SUCCEEDED {
		t.Errorf("phase = %v after GC, want Succeeded", gone.GetPhase())
	}
	// A new generation (the pod was changed) starts over.
	pod2 := proto.Clone(pod).(*syncpodv1.Pod)
	pod2.Generation = 2
	if got := Compute(Input{Pod: pod2, Observed: observed(), Previous: done, Now: t0}).GetPhase(); got != syncpodv1.PodPhase_POD_PHASE_PENDING {
		t.Errorf("new generation phase = %v, want Pending", got)
	}
}

func TestComputeDoesNotModifyItsInput(t *testing.T) {
	pod := mkPod([]*syncpodv1.Container{ctr("init")}, []*syncpodv1.Container{ctr("web")})
	obs := observed(inst("web", 5, exited, 1, 1), inst("init", 1, exited, 0, 0), inst("web", 2, exited, 1, 0))
	prev := Compute(Input{Pod: pod, Now: t0})
	in := Input{Pod: pod, Observed: obs, Previous: prev, Now: t0}
	podC, obsC, prevC := proto.Clone(pod), proto.Clone(obs), proto.Clone(prev)
	out := Compute(in)
	if !proto.Equal(pod, podC) || !proto.Equal(obs, obsC) || !proto.Equal(prev, prevC) {
		t.Fatal("Compute modified its input")
	}
	// The output shares no timestamps with the input.
	out.GetContainerStatuses()[0].GetState().GetTerminated().GetFinishedAt().Seconds = 0
	if !proto.Equal(obs, obsC) {
		t.Error("output aliases the observed pod")
	}
}

// TestEphemeralContainerStatuses: every ephemeral container has a
// status in spec order, built as a regular container's (its failed start
// included); none is ever ready, and they leave the phase and the
// conditions to the regular containers.
func TestEphemeralContainerStatuses(t *testing.T) {
	pod := mkPod(nil, []*syncpodv1.Container{ctr("web")}, policy(syncpodv1.RestartPolicy_RESTART_POLICY_NEVER))
	pod.Spec.EphemeralContainers = []*syncpodv1.Container{ctr("debugger"), ctr("done"), ctr("pending"), ctr("broken")}
	for _, tc := range []struct {
		name  string
		obs   *syncpodv1.ObservedPod
		phase syncpodv1.PodPhase
		conds string
		want  string
	}{
		{"running pod", observed(inst("web", 1, running, 0, 0), inst("debugger", 5, running, 0, 0), inst("done", 6, exited, 1, 0)),
			syncpodv1.PodPhase_POD_PHASE_RUNNING, "Initialized=T ContainersReady=T Ready=T",
			"debugger=running done=terminated:Error/1 pending=waiting:ContainerCreating broken=waiting:CreateContainerConfigError"},
		{"a running ephemeral container does not keep the pod running",
			observed(inst("web", 1, exited, 0, 0), inst("debugger", 5, running, 0, 0)),
			syncpodv1.PodPhase_POD_PHASE_SUCCEEDED, "Initialized=T ContainersReady=F:PodCompleted Ready=F:PodCompleted",
			"debugger=running done=waiting:ContainerCreating pending=waiting:ContainerCreating broken=waiting:CreateContainerConfigError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(Input{Pod: pod, Observed: tc.obs, Now: t0.Add(time.Minute), Steps: []*executorv1.StepResult{{
				Step: executorv1.Step_STEP_START_EPHEMERAL_CONTAINER, Target: "broken", Outcome: executorv1.Outcome_OUTCOME_FAILED,
				Reason: ReasonCreateContainerConfigError, Message: "unable to find target container gone"}}})
			var got []string
			for _, cs := range st.GetEphemeralContainerStatuses() {
				got = append(got, summary(cs))
				if cs.GetReady() || cs.GetStarted() {
					t.Errorf("%s ready or started", cs.GetName())
				}
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("ephemeral statuses:\n got %s\nwant %s", s, tc.want)
			}
			if len(st.GetContainerStatuses()) != 1 {
				t.Errorf("container statuses %v", st.GetContainerStatuses())
			}
			if st.GetPhase() != tc.phase || conds(st) != tc.conds {
				t.Errorf("phase %v conditions %s, want %v %s", st.GetPhase(), conds(st), tc.phase, tc.conds)
			}
		})
	}
}

// TestReadyToStartFollowsTheSandbox: PodReadyToStartContainers is
// true while the newest sandbox serves, whatever the containers do, and
// false with the kubelet's reason and message when R-2 asks for a new
// sandbox. It comes first, as the kubelet lists it.
func TestReadyToStartFollowsTheSandbox(t *testing.T) {
	pod := mkPod(nil, []*syncpodv1.Container{ctr("web")})
	sandbox := func(state syncpodv1.SandboxState, ip string) *syncpodv1.ObservedPod {
		o := observed(inst("web", 1, exited, 1, 0))
		o.Sandboxes[0].State, o.Sandboxes[0].Ip = state, ip
		return o
	}
	twoReady := observed()
	twoReady.Sandboxes = append(twoReady.Sandboxes, &syncpodv1.ObservedSandbox{Id: "sb0", State: syncpodv1.SandboxState_SANDBOX_STATE_READY, CreatedAt: at(-1), Ip: "10.0.0.4"})
	for _, tc := range []struct {
		name     string
		observed *syncpodv1.ObservedPod
		ok       bool
		message  string
	}{
		{"no sandbox yet", nil, false, "no pod sandbox exists"},
		{"sandbox ready, container crashed", sandbox(syncpodv1.SandboxState_SANDBOX_STATE_READY, "10.0.0.5"), true, ""},
		{"sandbox not ready", sandbox(syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY, "10.0.0.5"), false, "pod sandbox is not ready"},
		{"sandbox without an IP", sandbox(syncpodv1.SandboxState_SANDBOX_STATE_READY, ""), false, "pod sandbox has no IP address"},
		{"two sandboxes ready", twoReady, false, "multiple pod sandboxes are ready and need to be reconciled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(Input{Pod: pod, Observed: tc.observed, Now: t0})
			c := st.GetConditions()[0]
			if c.GetType() != ConditionReadyToStart {
				t.Fatalf("first condition %s, want %s", c.GetType(), ConditionReadyToStart)
			}
			ok := c.GetStatus() == syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE
			wantReason := ReasonPodSandboxNotReady
			if tc.ok {
				wantReason = ""
			}
			if ok != tc.ok || c.GetReason() != wantReason || c.GetMessage() != tc.message {
				t.Errorf("%s = %v %q %q, want %v %q %q", c.GetType(), ok, c.GetReason(), c.GetMessage(), tc.ok, wantReason, tc.message)
			}
		})
	}
}

// TestReadyToStartTurnsFalseWhenTheSandboxIsLost: a pod whose sandbox
// served (PodReadyToStartContainers true) and is then lost, removed
// behind the node's back or dead with its containers still listed, turns
// the condition false at the next status, with the kubelet's message and
// a new transition time.
func TestReadyToStartTurnsFalseWhenTheSandboxIsLost(t *testing.T) {
	pod := mkPod(nil, []*syncpodv1.Container{ctr("web")})
	before := Compute(Input{Pod: pod, Observed: observed(inst("web", 1, running, 0, 0)), Now: t0})
	if c := before.GetConditions()[0]; c.GetType() != ConditionReadyToStart || c.GetStatus() != syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE {
		t.Fatalf("with its sandbox serving: %v", c)
	}
	gone := observed(inst("web", 1, exited, 137, 0))
	gone.Sandboxes = nil
	dead := observed(inst("web", 1, running, 0, 0))
	dead.Sandboxes[0].State = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY
	later := t0.Add(time.Minute)
	for _, tc := range []struct {
		name     string
		observed *syncpodv1.ObservedPod
		message  string
	}{
		{"sandbox removed", gone, "no pod sandbox exists"},
		{"sandbox dead, container still listed", dead, "pod sandbox is not ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Compute(Input{Pod: pod, Observed: tc.observed, Previous: before, Now: later}).GetConditions()[0]
			if c.GetType() != ConditionReadyToStart || c.GetStatus() != syncpodv1.ConditionStatus_CONDITION_STATUS_FALSE ||
				c.GetReason() != ReasonPodSandboxNotReady || c.GetMessage() != tc.message {
				t.Errorf("%s = %v %q %q, want False %q %q", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage(), ReasonPodSandboxNotReady, tc.message)
			}
			if !c.GetLastTransitionTime().AsTime().Equal(later) {
				t.Errorf("transition time %v, want %v (it changed)", c.GetLastTransitionTime().AsTime(), later)
			}
		})
	}
}
