package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/node/kubeconv"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// lockedBuffer is a bytes.Buffer safe to read while a command writes;
// changed is signalled after every write.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{changed: make(chan struct{}, 1)} }

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs syncpodctl in the background; wait returns its exit code.
func (h *harness) start(ctx context.Context, args ...string) (out *lockedBuffer, wait func() int) {
	out = newLockedBuffer()
	env := h.env
	env.Stdout, env.Stderr = out, out
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"--server=planner", "--executor=executor"}, args...), env)
	}()
	return out, func() int { return <-done }
}

func TestGlobalFlagsAnywhere(t *testing.T) {
	h := newHarness(t)
	otherWeb := record("web", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING)
	otherWeb.Pod.Namespace = "other"
	h.planner.PutPod(otherWeb)
	for _, args := range [][]string{
		{"--server", "planner", "get", "pods", "-n", "other"},
		{"get", "pods", "--server", "planner", "--namespace=other"},
		{"get", "--server=planner", "pods", "web", "-n", "other"},
		{"-n", "other", "get", "pods", "--server", "planner"},
	} {
		h.out.Reset()
		h.err.Reset()
		if code := Run(context.Background(), args, h.env); code != 0 || !strings.Contains(h.out.String(), "web") {
			t.Errorf("%v: exit %d out %q err %q", args, code, h.out, h.err)
		}
	}
	// The environment fills in what the command line leaves out.
	h.env.Getenv = func(k string) string {
		return map[string]string{"SYNCPOD_SERVER": "planner", "SYNCPOD_NAMESPACE": "other"}[k]
	}
	h.out.Reset()
	if code := Run(context.Background(), []string{"get", "pods"}, h.env); code != 0 || !strings.Contains(h.out.String(), "web") {
		t.Fatalf("from the environment: exit %d out %q err %q", code, h.out, h.err)
	}
	h.env.Getenv = func(k string) string { return map[string]string{"SYNCPOD_REQUEST_TIMEOUT": "soon"}[k] }
	h.err.Reset()
	if code := Run(context.Background(), []string{"get", "pods"}, h.env); code != 2 || !strings.Contains(h.err.String(), "SYNCPOD_REQUEST_TIMEOUT") {
		t.Fatalf("bad environment value: exit %d err %q", code, h.err)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{
		{"get"},
		{"get", "nodes"},
		{"get", "pods", "--frobnicate"},
		{"describe", "pod"},
		{"describe", "web"},
		{"delete"},
		{"wait", "pod/web"},
		{"wait", "--for=ready", "pod/web"},
		{"plan"},
		{"plan", "-f", "x.yaml", "--empty", "--observed", "o.yaml"},
		{"backoffs"},
		{"backoffs", "frob"},
		{"events", "a", "b"},
		{"logs"},
		{"--request-timeout", "soon", "get", "pods"}, {"--timeout", "1s", "get", "pods"},
		{"get", "pods", "-o", "jsonpath={.items[}"},
	} {
		if code := h.run(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2; out %q err %q", args, code, h.out, h.err)
		}
	}
}

func TestGetOutputFormats(t *testing.T) {
	h := newHarness(t)
	web := record("web", nil, []*syncpodv1.ContainerStatus{running("a", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING)
	web.Status.PodIp = "10.1.2.3"
	h.planner.PutPod(web)
	h.planner.PutPod(record("db", nil, nil, syncpodv1.PodPhase_POD_PHASE_PENDING))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods", "-o", "name"}, "pod/db\npod/web\n"},
		{[]string{"get", "pod/web", "-o", "name"}, "pod/web\n"},
		{[]string{"get", "pods", "web", "-o", "jsonpath={.status.podIP}"}, "10.1.2.3"},
		{[]string{"get", "pods", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}"}, "db=Pending web=Running "},
	}
	for _, tc := range tests {
		if code := h.run(t, tc.args...); code != 0 || h.out.String() != tc.want {
			t.Errorf("%v: exit %d out %q, want %q (err %q)", tc.args, code, h.out, tc.want, h.err)
		}
	}
	if code := h.run(t, "get", "pods", "web", "nosuch"); code != 3 || !strings.Contains(h.out.String(), "web") || !strings.Contains(h.err.String(), `"nosuch" not found`) {
		t.Fatalf("one missing of two: exit %d out %q err %q", code, h.out, h.err)
	}
}

// TestGetYAMLRoundTrips: `get pod X -o yaml` is a v1 Pod that `apply -f`
// takes back unchanged, through the planner's own manifest conversion.
func TestGetYAMLRoundTrips(t *testing.T) {
	h := newHarness(t)
	h.env.ConvertKubernetes = kubeconv.ConvertManifest
	grace := int64(7)
	probeGrace := int64(3)
	pod := &syncpodv1.Pod{
		Name: "web", Namespace: "default", Uid: "0d6f9c1e-0000-4000-8000-000000000001",
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"},
		CreationTime: timestamppb.New(now.Add(-time.Hour)), Generation: 2,
		Spec: &syncpodv1.PodSpec{
			RestartPolicy: syncpodv1.RestartPolicy_RESTART_POLICY_ON_FAILURE, TerminationGracePeriodSeconds: &grace,
			HostNetwork: true, Hostname: "h",
			InitContainers: []*syncpodv1.Container{{Name: "side", Image: "busybox", RestartPolicy: syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS,
				Command: []string{"sleep", "inf"}, Stdin: true, StdinOnce: true, Tty: true}},
			Containers: []*syncpodv1.Container{{
				Name: "app", Image: "busybox:1.36", Command: []string{"sh", "-c"}, Args: []string{"httpd -f"}, WorkingDir: "/tmp",
				Env:             []*syncpodv1.EnvVar{{Name: "A", Value: "1"}},
				ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER,
				RestartPolicy:   syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ON_FAILURE,
				RestartPolicyRules: []*syncpodv1.ContainerRestartRule{{Action: syncpodv1.ContainerRestartRuleAction_CONTAINER_RESTART_RULE_ACTION_RESTART,
					ExitCodes: &syncpodv1.ContainerRestartRuleOnExitCodes{Operator: syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, Values: []int32{42}}}},
				Ports:     []*syncpodv1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 8080, Protocol: syncpodv1.Protocol_PROTOCOL_TCP, HostIp: "127.0.0.1"}},
				Resources: &syncpodv1.ResourceRequirements{Requests: &syncpodv1.ResourceList{Cpu: "100m", Memory: "64Mi"}, Limits: &syncpodv1.ResourceList{Memory: "128Mi"}},
				LivenessProbe: &syncpodv1.Probe{Handler: &syncpodv1.Probe_HttpGet{HttpGet: &syncpodv1.HTTPGetAction{Path: "/", Port: 8080, Host: "127.0.0.1", Scheme: "HTTP",
					HttpHeaders: []*syncpodv1.HTTPHeader{{Name: "X", Value: "y"}}}}, PeriodSeconds: 5, FailureThreshold: 2, TerminationGracePeriodSeconds: &probeGrace},
				ReadinessProbe: &syncpodv1.Probe{Handler: &syncpodv1.Probe_TcpSocket{TcpSocket: &syncpodv1.TCPSocketAction{Port: 8080}}, InitialDelaySeconds: 1, TimeoutSeconds: 2, SuccessThreshold: 1},
				StartupProbe:   &syncpodv1.Probe{Handler: &syncpodv1.Probe_Exec{Exec: &syncpodv1.ExecAction{Command: []string{"true"}}}},
			}},
		},
	}
	r := record("web", nil, []*syncpodv1.ContainerStatus{running("app", true, 0)}, syncpodv1.PodPhase_POD_PHASE_RUNNING)
	r.Pod = pod
	r.Status.Conditions = []*syncpodv1.PodCondition{{Type: "Ready", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE}}
	h.planner.PutPod(r)
	if code := h.run(t, "get", "pod", "web", "-o", "yaml"); code != 0 {
		t.Fatalf("get -o yaml: exit %d %s", code, h.err)
	}
	y := h.out.String()
	for _, want := range []string{"apiVersion: v1\n", "kind: Pod\n", "  name: web\n", "restartPolicy: OnFailure", "phase: Running", "type: Ready"} {
		if !strings.Contains(y, want) {
			t.Errorf("yaml lacks %q:\n%s", want, y)
		}
	}
	f := writeFile(t, t.TempDir(), "web.yaml", y)
	if code := h.run(t, "apply", "-f", f); code != 0 || h.out.String() != "pod/web unchanged\n" {
		t.Fatalf("apply of get -o yaml: exit %d out %q err %q", code, h.out, h.err)
	}
	// The converted pod equals the stored one field for field (the fake's
	// "unchanged" compares only the spec).
	back, _, err := kubeconv.ConvertManifest(mustYAMLToJSON(t, y))
	if err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(pod).(*syncpodv1.Pod)
	want.CreationTime, want.Generation = nil, 0
	if !proto.Equal(back, want) {
		t.Fatalf("round trip changed the pod:\n got %v\nwant %v", back, want)
	}
}

// TestGetYAMLRoundTripsEveryField: a pod that sets every field a
// manifest can set (the fixture of the conversion's own test), applied,
// printed by `get -o yaml` and applied again, is unchanged: the same pod
// reaches the planner both times.
func TestGetYAMLRoundTripsEveryField(t *testing.T) {
	h := newHarness(t)
	h.env.ConvertKubernetes = kubeconv.ConvertManifest
	if code := h.run(t, "apply", "-f", filepath.Join("..", "..", "node", "kubeconv", "testdata", "full-spec.yaml")); code != 0 {
		t.Fatalf("apply: exit %d %s", code, h.err)
	}
	if code := h.run(t, "get", "pod", "full", "-n", "apps", "-o", "yaml"); code != 0 {
		t.Fatalf("get -o yaml: exit %d %s", code, h.err)
	}
	f := writeFile(t, t.TempDir(), "full.yaml", h.out.String())
	if code := h.run(t, "apply", "-f", f); code != 0 || h.out.String() != "pod/full unchanged\n" {
		t.Fatalf("apply of get -o yaml: exit %d out %q err %q", code, h.out, h.err)
	}
	applied := h.planner.Applied()
	if len(applied) != 2 || !proto.Equal(applied[0].GetPod(), applied[1].GetPod()) {
		t.Fatalf("applied %v", applied)
	}
}

func TestGetWatchPrintsChanges(t *testing.T) {
	h := newHarness(t)
	watching := h.planner.NextWatch()
	h.planner.PutPod(record("web", nil, []*syncpodv1.ContainerStatus{waiting("a", "ContainerCreating", 0)}, syncpodv1.PodPhase_POD_PHASE_PENDING))
	ctx, cancel := context.WithCancel(context.Background())
	out, wait := h.start(ctx, "get", "pods", "-w")
	<-watching
	h.planner.UpdatePod("default/web", func(r *plannerv1.PodRecord) {
		r.Status.ContainerStatuses = []*syncpodv1.ContainerStatus{running("a", true, 0)}
		r.Status.Phase = syncpodv1.PodPhase_POD_PHASE_RUNNING
	})
	h.planner.RemovePod("default/web")
	waitForOutput(t, out, "Deleted")
	cancel()
	if code := wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[1], "ContainerCreating") ||
		!strings.Contains(lines[2], "Running") || !strings.Contains(lines[3], "Deleted") {
		t.Fatalf("watch output:\n%s", out)
	}
}

// waitForOutput blocks until out holds want; the test's deadline bounds it.
func waitForOutput(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	for !strings.Contains(out.String(), want) {
		<-out.changed
	}
}

// A pod removed after syncpodctl read it but before the planner subscribed
// its watch was in neither, and `delete` (or `wait --for=delete`) waited
// until its timeout although the pod was gone (seen in the end-to-end
// suite under load). The client now reads only once the planner's header
// says the watch is subscribed. The fake holds the subscription while the
// pod goes away, after giving an early read every chance to happen.
func TestWaitForDeleteMissesNoRemovalBeforeTheWatchSubscribes(t *testing.T) {
	h := newHarness(t)
	h.planner.PutPod(record("web", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	gate := make(chan struct{})
	called := h.planner.HoldWatches(gate)
	out, wait := h.start(context.Background(), "wait", "--for=delete", "pod/web", "--timeout=10s")
	<-called
	// A client that reads before the subscription does so now.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if h.planner.GetPodCalls() > 0 {
			break
		}
	}
	h.planner.RemovePod("default/web")
	close(gate)
	if code := wait(); code != 0 || !strings.Contains(out.String(), "pod/web deleted") {
		t.Fatalf("wait --for=delete of a pod removed before the watch subscribed: exit %d %q, want 0 and pod/web deleted", code, out)
	}
}

func TestWaitForReadyAndDelete(t *testing.T) {
	h := newHarness(t)
	watching := h.planner.NextWatch()
	h.planner.PutPod(record("web", nil, nil, syncpodv1.PodPhase_POD_PHASE_PENDING))
	out, wait := h.start(context.Background(), "wait", "--for=condition=Ready", "pod/web", "--timeout=1h")
	<-watching
	h.planner.UpdatePod("default/web", func(r *plannerv1.PodRecord) {
		r.Status.Conditions = []*syncpodv1.PodCondition{{Type: "Ready", Status: syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE}}
	})
	if code := wait(); code != 0 || out.String() != "pod/web condition met\n" {
		t.Fatalf("wait Ready: exit %d %q", code, out)
	}
	// Already met: no watch needed.
	if code := h.run(t, "wait", "--for=condition=Ready", "pod", "web"); code != 0 {
		t.Fatalf("wait on a ready pod: exit %d %q", code, h.err)
	}
	if code := h.run(t, "wait", "--for=condition=Ready", "pod/nosuch"); code != 3 {
		t.Fatalf("wait on a missing pod: exit %d, want 3", code)
	}
	if code := h.run(t, "wait", "--for=condition=Ready=False", "pod/web", "--timeout=0"); code != 1 || !strings.Contains(h.err.String(), "timed out waiting for the condition on pods/web") {
		t.Fatalf("unmet with --timeout=0: exit %d %q", code, h.err)
	}

	// delete waits for the pod to be gone.
	h.planner.KeepDeleted(true)
	watching = h.planner.NextWatch()
	out, wait = h.start(context.Background(), "delete", "pod", "web")
	<-watching
	waitForOutput(t, out, `pod "web" deleted`)
	h.planner.RemovePod("default/web")
	if code := wait(); code != 0 {
		t.Fatalf("delete --wait: exit %d %q", code, out)
	}
	if code := h.run(t, "wait", "--for=delete", "pod/web"); code != 0 || h.out.String() != "pod/web deleted\n" {
		t.Fatalf("wait for delete of a gone pod: exit %d %q", code, h.out)
	}
	// --wait=false returns at once, leaving the pod terminating.
	h.planner.PutPod(record("db", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	if code := h.run(t, "delete", "pod/db", "--wait=false"); code != 0 {
		t.Fatalf("delete --wait=false: exit %d %q", code, h.err)
	}
	if code := h.run(t, "delete", "pod/db", "--timeout=2s"); code != 1 || !strings.Contains(h.err.String(), "timed out") {
		t.Fatalf("delete of a pod that stays: exit %d %q, want 1 (timed out)", code, h.err)
	}
}

// TestDeleteTimeoutAndRequestTimeout: delete's --timeout bounds the wait
// for the pods to be gone (kubectl's), the global --request-timeout each
// request; given together, each does its own job.
func TestDeleteTimeoutAndRequestTimeout(t *testing.T) {
	h := newHarness(t)
	h.planner.KeepDeleted(true)
	h.planner.PutPod(record("db", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	if code := h.run(t, "delete", "pod/db", "--timeout=1s", "--request-timeout=7s"); code != 1 || !strings.Contains(h.err.String(), "timed out") {
		t.Fatalf("delete of a pod that stays, 1 s wait: exit %d %q, want 1 (timed out)", code, h.err)
	}
	// The request itself had the 7 s budget, not the 1 s of the wait.
	deletes := h.planner.PodDeletes()
	budget := deletes[len(deletes)-1].Budget
	if budget <= time.Second || budget > 7*time.Second {
		t.Fatalf("DeletePod deadline %v away, want within (1s, 7s]: --request-timeout, not --timeout", budget)
	}
	// A global flag placed before the command and the environment work too.
	h.env.Getenv = func(k string) string { return map[string]string{"SYNCPOD_REQUEST_TIMEOUT": "3s"}[k] }
	if code := h.run(t, "delete", "pod/db", "--wait=false"); code != 0 {
		t.Fatalf("delete --wait=false: exit %d %q", code, h.err)
	}
	deletes = h.planner.PodDeletes()
	budget = deletes[len(deletes)-1].Budget
	if budget <= 0 || budget > 3*time.Second {
		t.Fatalf("DeletePod deadline %v away, want within (0, 3s] from SYNCPOD_REQUEST_TIMEOUT", budget)
	}
}

func TestEventsTable(t *testing.T) {
	h := newHarness(t)
	r := record("crash", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING)
	r.Events = []*syncpodv1.Event{
		{Type: syncpodv1.EventType_EVENT_TYPE_WARNING, Reason: "BackOff", Message: "Back-off restarting failed container app", InvolvedContainer: "app",
			Count: 5, FirstTime: timestamppb.New(now.Add(-3 * time.Minute)), LastTime: timestamppb.New(now.Add(-10 * time.Second))},
		{Type: syncpodv1.EventType_EVENT_TYPE_NORMAL, Reason: "Scheduled", Message: "accepted",
			Count: 1, FirstTime: timestamppb.New(now.Add(-4 * time.Minute)), LastTime: timestamppb.New(now.Add(-4 * time.Minute))},
	}
	h.planner.PutPod(r)
	if code := h.run(t, "events", "crash"); code != 0 {
		t.Fatalf("exit %d %s", code, h.err)
	}
	want := "" +
		"LAST SEEN   TYPE      REASON      OBJECT          COUNT   FIRST SEEN   MESSAGE\n" +
		"4m0s        Normal    Scheduled   pod/crash       1       4m0s         accepted\n" +
		"10s         Warning   BackOff     pod/crash/app   5       3m0s         Back-off restarting failed container app\n"
	if h.out.String() != want {
		t.Fatalf("events:\n%s\nwant:\n%s", h.out, want)
	}
	if code := h.run(t, "events", "nosuch"); code != 3 {
		t.Fatalf("events of an unknown pod: exit %d, want 3", code)
	}
}

func TestCompletionScriptsLoadInBash(t *testing.T) {
	h := newHarness(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if code := h.run(t, "completion", shell); code != 0 || !strings.Contains(h.out.String(), "syncpodctl") {
			t.Fatalf("completion %s: exit %d err %q", shell, code, h.err)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("LOUD SKIP: no bash on this machine to load the completion script into")
	}
	if code := h.run(t, "completion", "bash"); code != 0 {
		t.Fatal(code)
	}
	script := writeFile(t, t.TempDir(), "syncpodctl.bash", h.out.String())
	out, err := exec.Command(bash, "-c", "source "+script+" && complete -p syncpodctl").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "__start_syncpodctl") {
		t.Fatalf("bash could not load the script: %v\n%s", err, out)
	}
	// The shell asks the binary for candidates through __complete.
	h.planner.PutPod(record("web", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	if code := h.run(t, "__complete", "describe", "pod", ""); code != 0 || !strings.Contains(h.out.String(), "web\n") {
		t.Fatalf("pod names are not completed: exit %d %q", code, h.out)
	}
}

// TestVersion: the client's version, then the planner's and, asked by
// the planner, its executor's (with the runtime) and PLEG's; a server
// that cannot be asked is named with the reason, and the exit is 1.
func TestVersion(t *testing.T) {
	h := newHarness(t)
	if code := h.run(t, "version", "--client"); code != 0 || !strings.HasPrefix(h.out.String(), "Client Version: ") || strings.Contains(h.out.String(), "Planner") {
		t.Fatalf("version --client: exit %d %q", code, h.out)
	}
	// The fake PLEG serves no version: said, and exit 1.
	code := h.run(t, "version")
	out := h.out.String()
	for _, want := range []string{
		"Client Version: ",
		"Planner Version: v9.9.9 (go",
		" at planner\n",
		"Executor Version: v9.9.8 (go",
		" at executor; runtime fakeruntime 1.2.3 (CRI v1)\n",
		"PLEG Version: unknown: cannot ask it at pleg: ",
		"Unimplemented",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("version with the PLEG unanswering: exit %d, want 1", code)
	}
	// -o json: the planner's answer as on the wire.
	code = h.run(t, "version", "-o", "json")
	var decoded struct {
		ClientVersion  map[string]any `json:"clientVersion"`
		ServerVersions struct {
			Server map[string]any   `json:"server"`
			Peers  []map[string]any `json:"peers"`
		} `json:"serverVersions"`
	}
	if err := json.Unmarshal(h.out.Bytes(), &decoded); err != nil || code != 1 {
		t.Fatalf("version -o json: exit %d %v\n%s", code, err, h.out)
	}
	if decoded.ClientVersion["component"] != "syncpodctl" || decoded.ServerVersions.Server["version"] != "v9.9.9" || len(decoded.ServerVersions.Peers) != 2 ||
		decoded.ServerVersions.Peers[0]["runtime"].(map[string]any)["name"] != "fakeruntime" || decoded.ServerVersions.Peers[1]["error"] == nil {
		t.Errorf("version -o json: %s", h.out)
	}
	// No planner at all: exit 1, and the reason.
	if code := h.run(t, "--server=nowhere", "version"); code != 1 || !strings.Contains(h.out.String(), "Planner Version: unknown: cannot ask it at nowhere") {
		t.Fatalf("version without a planner: exit %d %q", code, h.out)
	}
	if code := h.run(t, "version", "-o", "wide"); code != 2 {
		t.Fatalf("version -o wide: exit %d, want 2", code)
	}
}

func TestPlanAgainstLivePod(t *testing.T) {
	h := newHarness(t)
	f := writeFile(t, t.TempDir(), "web.yaml", "name: web\nspec:\n  containers:\n  - {name: a, image: busybox}\n")
	// No such pod: an empty node, said on stderr.
	if code := h.run(t, "plan", "-f", f); code != 0 || !strings.Contains(h.err.String(), "planning against an empty node") {
		t.Fatalf("plan of a new pod: exit %d %q", code, h.err)
	}
	if h.planner.planReq.GetObserved() != nil {
		t.Fatal("a new pod was planned against an observed state")
	}
	// A live pod: its observed state comes from the PLEG.
	h.planner.PutPod(record("web", nil, nil, syncpodv1.PodPhase_POD_PHASE_RUNNING))
	h.pleg.observed = &syncpodv1.ObservedPod{Uid: "uid-web", Sandboxes: []*syncpodv1.ObservedSandbox{{Id: "sb-1", State: syncpodv1.SandboxState_SANDBOX_STATE_READY}}}
	if code := h.run(t, "plan", "-f", f, "--pleg", "pleg"); code != 0 {
		t.Fatalf("plan of a live pod: exit %d %q", code, h.err)
	}
	if got := h.planner.planReq; got.GetObserved().GetSandboxes()[0].GetId() != "sb-1" || got.GetPod().GetUid() != "uid-web" || h.pleg.asked != "uid-web" {
		t.Fatalf("plan request %v, pleg asked for %q", got, h.pleg.asked)
	}
	// --empty plans as if nothing existed.
	if code := h.run(t, "plan", "-f", f, "--empty"); code != 0 || h.planner.planReq.GetObserved() != nil {
		t.Fatalf("plan --empty: exit %d, observed %v", code, h.planner.planReq.GetObserved())
	}
	// Without a PLEG, the error says how to do without.
	if code := h.run(t, "plan", "-f", f, "--pleg", "nowhere"); code != 1 || !strings.Contains(h.err.String(), "--empty") {
		t.Fatalf("plan without a PLEG: exit %d %q", code, h.err)
	}
}

func mustYAMLToJSON(t *testing.T, y string) []byte {
	t.Helper()
	docs, err := DecodePods([]byte(y), func(js []byte) (*syncpodv1.Pod, []string, error) {
		return &syncpodv1.Pod{Name: string(js)}, nil, nil
	}, func(string) {})
	if err != nil || len(docs) != 1 {
		t.Fatalf("decode: %v", err)
	}
	return []byte(docs[0].GetName())
}
