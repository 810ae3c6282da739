package plan_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Short names for the enums the tables use a lot.
const (
	running  = syncpodv1.ContainerState_CONTAINER_STATE_RUNNING
	exited   = syncpodv1.ContainerState_CONTAINER_STATE_EXITED
	created  = syncpodv1.ContainerState_CONTAINER_STATE_CREATED
	unknown  = syncpodv1.ContainerState_CONTAINER_STATE_UNKNOWN
	ready    = syncpodv1.SandboxState_SANDBOX_STATE_READY
	notReady = syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY

	always    = syncpodv1.RestartPolicy_RESTART_POLICY_ALWAYS
	onFailure = syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE
	never     = syncpodv1.RestartPolicy_RESTART_POLICY_NEVER

	cAlways    = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	cOnFailure = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ON_FAILURE
	cNever     = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_NEVER

	pass = syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
	fail = syncpodv1.ProbeResult_PROBE_RESULT_FAILURE
)

func ctr(name string, mods ...func(*syncpodv1.Container)) *syncpodv1.Container {
	c := &syncpodv1.Container{Name: name, Image: "busybox:1.36", Command: []string{"sleep", "3600"}}
	for _, m := range mods {
		m(c)
	}
	return c
}

func sidecar(c *syncpodv1.Container) { c.RestartPolicy = cAlways }

func withPolicy(p syncpodv1.ContainerRestartPolicy) func(*syncpodv1.Container) {
	return func(c *syncpodv1.Container) { c.RestartPolicy = p }
}

func withRule(op syncpodv1.ExitCodeOperator, codes ...int32) func(*syncpodv1.Container) {
	return func(c *syncpodv1.Container) {
		c.RestartPolicyRules = append(c.RestartPolicyRules, &syncpodv1.ContainerRestartRule{
			Action:    syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART,
			ExitCodes: &syncpodv1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes},
		})
	}
}

// withRestartAllRule adds a RestartAllContainers rule matching codes.
func withRestartAllRule(codes ...int32) func(*syncpodv1.Container) {
	return func(c *syncpodv1.Container) {
		c.RestartPolicyRules = append(c.RestartPolicyRules, &syncpodv1.ContainerRestartRule{
			Action:    syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS,
			ExitCodes: &syncpodv1.ContainerRestartRuleOnExitCodes{Operator: syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, Values: codes},
		})
	}
}

func execProbe() *syncpodv1.Probe {
	return &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"true"}}}}
}

func withLiveness(c *syncpodv1.Container) { c.LivenessProbe = execProbe() }
func withStartup(c *syncpodv1.Container)  { c.StartupProbe = execProbe() }

func mkPod(policy syncpodv1.RestartPolicy, inits []*syncpodv1.Container, cs ...*syncpodv1.Container) *syncpodv1.Pod {
	return &syncpodv1.Pod{
		Uid: "6f1e2d3c-0000-4000-8000-000000000001", Name: "demo", Namespace: "default",
		Spec: &syncpodv1.PodSpec{RestartPolicy: policy, InitContainers: inits, Containers: cs},
	}
}

func ts(sec int64) *timestamppb.Timestamp { return &timestamppb.Timestamp{Seconds: sec} }

// sb is a pod-network sandbox.
func sb(id string, t int64, state syncpodv1.SandboxState, attempt uint32) *syncpodv1.ObservedSandbox {
	return &syncpodv1.ObservedSandbox{Id: id, State: state, Attempt: attempt, CreatedAt: ts(t), Ip: "10.0.0.1"}
}

// inst is a container instance whose spec_hash matches spec container c.
func inst(id string, c *syncpodv1.Container, t int64, state syncpodv1.ContainerState, exit int32, sandbox string) *syncpodv1.ObservedContainer {
	return &syncpodv1.ObservedContainer{
		Id: id, Name: c.GetName(), State: state, ExitCode: exit, SpecHash: plan.SpecHash(c),
		CreatedAt: ts(t), SandboxId: sandbox, Image: c.GetImage(),
	}
}

func obs(sandboxes []*syncpodv1.ObservedSandbox, cs ...*syncpodv1.ObservedContainer) *syncpodv1.ObservedPod {
	return &syncpodv1.ObservedPod{Name: "demo", Namespace: "default", Sandboxes: sandboxes, Containers: cs}
}

func sbs(s ...*syncpodv1.ObservedSandbox) []*syncpodv1.ObservedSandbox { return s }

func inits(c ...*syncpodv1.Container) []*syncpodv1.Container { return c }

func short(name, prefix string) string { return strings.TrimPrefix(name, prefix) }

// render is a compact one-line form of actions without messages, for
// tables: "noop" or e.g. "kill_pod(NOTHING_TO_RUN) sandbox=s1 attempt=0
// start=[web:EXITED] kill=[web/c1:LIVENESS_PROBE]".
func render(a *syncpodv1.PodActions) string {
	if plan.IsEmpty(a) && a.GetSandboxId() == "" && a.GetAttempt() == 0 {
		return "noop"
	}
	var parts []string
	if a.GetKillPod() {
		parts = append(parts, fmt.Sprintf("kill_pod(%s)", short(a.GetKillPodReason().String(), "KILL_POD_REASON_")))
	}
	if a.GetCreateSandbox() {
		parts = append(parts, fmt.Sprintf("create_sandbox(%s)", short(a.GetSandboxReason().String(), "SANDBOX_REASON_")))
	}
	parts = append(parts, fmt.Sprintf("sandbox=%s attempt=%d", a.GetSandboxId(), a.GetAttempt()))
	starts := func(label string, ss []*syncpodv1.ContainerStart) {
		if len(ss) == 0 {
			return
		}
		var xs []string
		for _, s := range ss {
			xs = append(xs, s.GetName()+":"+short(s.GetReason().String(), "START_REASON_"))
		}
		parts = append(parts, label+"=["+strings.Join(xs, " ")+"]")
	}
	starts("ephemeral", a.GetEphemeralContainersToStart())
	starts("init", a.GetInitContainersToStart())
	starts("start", a.GetContainersToStart())
	if len(a.GetContainersToKill()) > 0 {
		var xs []string
		for _, k := range a.GetContainersToKill() {
			xs = append(xs, k.GetName()+"/"+k.GetContainerId()+":"+short(k.GetReason().String(), "KILL_REASON_"))
		}
		parts = append(parts, "kill=["+strings.Join(xs, " ")+"]")
	}
	if len(a.GetContainersToUpdate()) > 0 {
		var xs []string
		for _, u := range a.GetContainersToUpdate() {
			x := u.GetName() + "/" + u.GetContainerId() + ":" + u.GetResource()
			if u.GetDecrease() {
				x += ":decrease"
			}
			xs = append(xs, x)
		}
		parts = append(parts, "update=["+strings.Join(xs, " ")+"]")
	}
	if len(a.GetContainersToReset()) > 0 {
		var xs []string
		for _, r := range a.GetContainersToReset() {
			x := r.GetName() + "/" + r.GetContainerId()
			if r.GetKill() {
				x += ":kill"
			}
			if r.GetSource() {
				x += ":source"
			}
			xs = append(xs, x)
		}
		parts = append(parts, "reset=["+strings.Join(xs, " ")+"]")
	}
	return strings.Join(parts, " ")
}

// renderFull is the multi-line form with messages, for golden files.
func renderFull(a *syncpodv1.PodActions) string {
	if plan.IsEmpty(a) {
		return "noop"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", render(a))
	if a.GetMessage() != "" {
		fmt.Fprintf(&b, "  pod: %s\n", a.GetMessage())
	}
	for _, s := range a.GetEphemeralContainersToStart() {
		fmt.Fprintf(&b, "  ephemeral %s hash=%s: %s\n", s.GetName(), s.GetSpecHash(), s.GetMessage())
	}
	for _, s := range a.GetInitContainersToStart() {
		fmt.Fprintf(&b, "  init %s hash=%s: %s\n", s.GetName(), s.GetSpecHash(), s.GetMessage())
	}
	for _, s := range a.GetContainersToStart() {
		fmt.Fprintf(&b, "  start %s hash=%s: %s\n", s.GetName(), s.GetSpecHash(), s.GetMessage())
	}
	for _, k := range a.GetContainersToKill() {
		fmt.Fprintf(&b, "  kill %s/%s: %s\n", k.GetName(), k.GetContainerId(), k.GetMessage())
	}
	for _, r := range a.GetContainersToReset() {
		fmt.Fprintf(&b, "  reset %s/%s: %s\n", r.GetName(), r.GetContainerId(), r.GetMessage())
	}
	for _, u := range a.GetContainersToUpdate() {
		r := u.GetResources()
		fmt.Fprintf(&b, "  update %s/%s %s shares=%d quota=%d period=%d memory=%d: %s\n", u.GetName(), u.GetContainerId(), u.GetResource(),
			r.GetCpuShares(), r.GetCpuQuota(), r.GetCpuPeriod(), r.GetMemoryLimitBytes(), u.GetMessage())
	}
	return strings.TrimRight(b.String(), "\n")
}

// checkWellFormed asserts the output invariants every plan must satisfy.
func checkWellFormed(t testing.TB, pod *syncpodv1.Pod, a *syncpodv1.PodActions) {
	t.Helper()
	specNames := func(cs []*syncpodv1.Container) map[string]int {
		m := map[string]int{}
		for i, c := range cs {
			if _, ok := m[c.GetName()]; !ok {
				m[c.GetName()] = i
			}
		}
		return m
	}
	checkStarts := func(label string, ss []*syncpodv1.ContainerStart, names map[string]int) {
		prev := -1
		for _, s := range ss {
			idx, ok := names[s.GetName()]
			if !ok {
				t.Errorf("%s start of %q which is not in the spec", label, s.GetName())
			}
			if idx < prev {
				t.Errorf("%s starts not in spec order: %s", label, render(a))
			}
			prev = idx
			if s.GetReason() == syncpodv1.StartReason_START_REASON_UNSPECIFIED || s.GetMessage() == "" || len(s.GetSpecHash()) != 16 {
				t.Errorf("%s start %q lacks reason, message or hash: %v", label, s.GetName(), s)
			}
		}
	}
	checkStarts("init", a.GetInitContainersToStart(), specNames(pod.GetSpec().GetInitContainers()))
	checkStarts("regular", a.GetContainersToStart(), specNames(pod.GetSpec().GetContainers()))
	checkStarts("ephemeral", a.GetEphemeralContainersToStart(), specNames(pod.GetSpec().GetEphemeralContainers()))
	ks := a.GetContainersToKill()
	for i, k := range ks {
		if k.GetReason() == syncpodv1.KillReason_KILL_REASON_UNSPECIFIED || k.GetMessage() == "" {
			t.Errorf("kill %v lacks reason or message", k)
		}
		if i > 0 && (ks[i-1].GetName() > k.GetName() || ks[i-1].GetName() == k.GetName() && ks[i-1].GetContainerId() >= k.GetContainerId()) {
			t.Errorf("kills not sorted by name then id: %s", render(a))
		}
	}
	for _, r := range a.GetContainersToReset() {
		if r.GetContainerId() == "" || r.GetName() == "" || r.GetMessage() == "" {
			t.Errorf("reset %v lacks id, name or message", r)
		}
	}
	if len(a.GetContainersToReset()) > 0 && (a.GetKillPod() || len(a.GetContainersToStart())+len(a.GetInitContainersToStart())+len(a.GetContainersToKill()) > 0) {
		t.Errorf("a reset comes alone (R-7.3): %s", render(a))
	}
	if a.GetKillPod() && a.GetKillPodReason() == syncpodv1.KillPodReason_KILL_POD_REASON_UNSPECIFIED {
		t.Errorf("kill_pod without reason: %s", render(a))
	}
	if a.GetCreateSandbox() && a.GetSandboxReason() == syncpodv1.SandboxReason_SANDBOX_REASON_UNSPECIFIED {
		t.Errorf("create_sandbox without reason: %s", render(a))
	}
}
