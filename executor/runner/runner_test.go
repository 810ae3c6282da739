package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/internal/clocktest"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

type env struct {
	r      *Runner
	rt     *critest.Runtime
	img    *critest.Images
	store  *backoff.Store
	clock  *clocktest.Clock
	reg    *prometheus.Registry
	logDir string
}

const busybox = "busybox:1.36"

func newEnv(t *testing.T, images ...string) *env {
	t.Helper()
	e := &env{rt: critest.NewRuntime(), img: critest.NewImages(images...), clock: clocktest.New(clocktest.Start), reg: prometheus.NewRegistry()}
	var err error
	e.store, err = backoff.Open(filepath.Join(t.TempDir(), "b.db"), backoff.Config{Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.store.Close() })
	cm, err := runtimeclient.NewMetrics(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	e.logDir = t.TempDir()
	e.r, err = New(Config{
		Runtime: runtimeclient.NewRuntime(e.rt, cm, runtimeclient.Timeouts{}), Images: runtimeclient.NewImages(e.img, cm, runtimeclient.Timeouts{}),
		Backoff: e.store, Clock: e.clock, Metrics: m, LogDir: e.logDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) observe(t *testing.T, uid string) *syncpodv1.ObservedPod {
	t.Helper()
	o, err := observe.Read(context.Background(), e.rt, uid, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (e *env) apply(t *testing.T, pod *syncpodv1.Pod, o *syncpodv1.ObservedPod, a *syncpodv1.PodActions) *executorv1.ApplyActionsResponse {
	t.Helper()
	resp, err := e.r.ApplyActions(context.Background(), pod, o, a)
	if err != nil {
		t.Fatalf("ApplyActions: %v", err)
	}
	return resp
}

func ctr(name string) *syncpodv1.Container {
	return &syncpodv1.Container{Name: name, Image: busybox, Command: []string{"sleep", "3600"}}
}

func sidecar(name string) *syncpodv1.Container {
	c := ctr(name)
	c.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	return c
}

func testPod(inits []*syncpodv1.Container, ctrs ...*syncpodv1.Container) *syncpodv1.Pod {
	return &syncpodv1.Pod{Uid: "uid-1", Name: "demo", Namespace: "ns", Labels: map[string]string{"app": "demo"},
		Spec: &syncpodv1.PodSpec{InitContainers: inits, Containers: ctrs, HostNetwork: true}}
}

func starts(names ...string) []*syncpodv1.ContainerStart {
	var out []*syncpodv1.ContainerStart
	for _, n := range names {
		out = append(out, &syncpodv1.ContainerStart{Name: n, SpecHash: "hash-" + n})
	}
	return out
}

// summary renders steps as "STEP target OUTCOME reason" lines.
func summary(resp *executorv1.ApplyActionsResponse) string {
	var b strings.Builder
	for _, s := range resp.GetSteps() {
		b.WriteString(strings.TrimPrefix(s.GetStep().String(), "STEP_"))
		b.WriteString(" " + s.GetTarget() + " " + strings.TrimPrefix(s.GetOutcome().String(), "OUTCOME_"))
		if s.GetReason() != "" {
			b.WriteString(" " + s.GetReason())
		}
		b.WriteString("\n")
	}
	return b.String()
}

func stepsOnly(resp *executorv1.ApplyActionsResponse, kinds ...executorv1.Step) *executorv1.ApplyActionsResponse {
	out := &executorv1.ApplyActionsResponse{}
	for _, s := range resp.GetSteps() {
		if slices.Contains(kinds, s.GetStep()) {
			out.Steps = append(out.Steps, s)
		}
	}
	return out
}

func TestNewPodStepOrderAndConfigs(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod([]*syncpodv1.Container{ctr("init")}, ctr("web"))
	pod.Spec.Containers[0].Env = []*syncpodv1.EnvVar{{Name: "A", Value: "1"}}
	pod.Spec.Containers[0].Resources = &syncpodv1.ResourceRequirements{
		Requests: &syncpodv1.ResourceList{Cpu: "250m"}, Limits: &syncpodv1.ResourceList{Cpu: "500m", Memory: "64Mi"}}
	// a brand-new pod has kill_pod and create_sandbox; R-2.4c: only init 0.
	resp := e.apply(t, pod, nil, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, InitContainersToStart: starts("init")})
	sbID := resp.GetSandboxId()
	want := "KILL_POD demo SUCCEEDED\nCREATE_SANDBOX " + sbID + " SUCCEEDED\nPULL_IMAGE init SUCCEEDED\nSTART_INIT_CONTAINER init SUCCEEDED\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	sb, err := e.rt.PodSandboxStatus(context.Background(), sbID, false)
	if err != nil {
		t.Fatal(err)
	}
	s := sb.GetStatus()
	if s.GetLabels()[crilabels.Managed] != "true" || s.GetLabels()[crilabels.PodUID] != "uid-1" || s.GetLabels()["app"] != "demo" {
		t.Errorf("sandbox labels %v", s.GetLabels())
	}
	if s.GetLinux().GetNamespaces().GetOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		t.Errorf("sandbox network mode %v, want NODE", s.GetLinux().GetNamespaces().GetOptions().GetNetwork())
	}
	// The init container exits 0; the next plan starts web.
	o := e.observe(t, "uid-1")
	e.rt.ExitContainer(o.GetContainers()[0].GetId(), 0, "", e.clock.Now().UnixNano())
	o = e.observe(t, "uid-1")
	resp = e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: sbID, ContainersToStart: starts("web")})
	if got, want := summary(resp), "PULL_IMAGE web SUCCEEDED\nSTART_CONTAINER web SUCCEEDED\n"; got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	cs, err := e.rt.ContainerStatus(context.Background(), resp.GetSteps()[1].GetContainerId(), false)
	if err != nil {
		t.Fatal(err)
	}
	st := cs.GetStatus()
	for k, v := range map[string]string{crilabels.ContainerName: "web", crilabels.SpecHash: "hash-web", crilabels.ContainerType: crilabels.ContainerTypeRegular, crilabels.PodUID: "uid-1"} {
		if st.GetLabels()[k] != v {
			t.Errorf("label %s = %q, want %q", k, st.GetLabels()[k], v)
		}
	}
	if st.GetAnnotations()[crilabels.RestartCount] != "0" || st.GetAnnotations()[crilabels.TerminationGracePeriod] != "30" {
		t.Errorf("annotations %v", st.GetAnnotations())
	}
	res := e.rt.CreatedConfig(st.GetId()).GetLinux().GetResources()
	if res.GetCpuShares() != 256 || res.GetCpuQuota() != 50000 || res.GetMemoryLimitInBytes() != 64<<20 {
		t.Errorf("resources %v", res)
	}
	if got := testutil.ToFloat64(e.r.m.startedCtrs.WithLabelValues(typeInit)); got != 1 {
		t.Errorf("started init containers = %v", got)
	}
	if got := testutil.ToFloat64(e.r.m.startedPods); got != 1 {
		t.Errorf("started pods = %v", got)
	}
}

func TestGracePeriod(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	probeCtr := &syncpodv1.Container{Name: "c",
		LivenessProbe: &syncpodv1.Probe{TerminationGracePeriodSeconds: i64(7)},
		StartupProbe:  &syncpodv1.Probe{TerminationGracePeriodSeconds: i64(9)}}
	for _, tc := range []struct {
		name   string
		pod    *syncpodv1.Pod
		reason syncpodv1.KillReason
		want   int64
	}{
		{"R-9.4 default when nothing set", &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{}}, 0, 30},
		{"R-9.4 pod grace", &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{TerminationGracePeriodSeconds: i64(12)}}, 0, 12},
		{"R-9.4 deletion grace wins over everything", &syncpodv1.Pod{DeletionGracePeriodSeconds: i64(4), Spec: &syncpodv1.PodSpec{TerminationGracePeriodSeconds: i64(12)}}, syncpodv1.KillReason_KILL_REASON_LIVENESS_PROBE, 4},
		{"R-9.4 liveness probe grace for a liveness kill", &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{TerminationGracePeriodSeconds: i64(12)}}, syncpodv1.KillReason_KILL_REASON_LIVENESS_PROBE, 7},
		{"R-9.4 startup probe grace for a startup kill", &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{TerminationGracePeriodSeconds: i64(12)}}, syncpodv1.KillReason_KILL_REASON_STARTUP_PROBE, 9},
		{"R-9.4 probe grace not used for a spec change", &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{TerminationGracePeriodSeconds: i64(12)}}, syncpodv1.KillReason_KILL_REASON_SPEC_CHANGED, 12},
		{"R-9.5 2 s floor", &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{TerminationGracePeriodSeconds: i64(0)}}, 0, 2},
		{"R-9.5 2 s floor on deletion grace", &syncpodv1.Pod{DeletionGracePeriodSeconds: i64(1), Spec: &syncpodv1.PodSpec{}}, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GracePeriod(tc.pod, probeCtr, tc.reason); got != tc.want {
				t.Fatalf("GracePeriod = %d, want %d", got, tc.want)
			}
		})
	}
}

// runningPod creates the pod's sandbox and containers through the runner
// and returns the observed state.
func runningPod(t *testing.T, e *env, pod *syncpodv1.Pod) *syncpodv1.ObservedPod {
	t.Helper()
	var inits []string
	for _, c := range pod.GetSpec().GetInitContainers() {
		inits = append(inits, c.GetName())
	}
	var ctrs []string
	for _, c := range pod.GetSpec().GetContainers() {
		ctrs = append(ctrs, c.GetName())
	}
	resp := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, InitContainersToStart: starts(inits...), ContainersToStart: starts(ctrs...)})
	for _, s := range resp.GetSteps() {
		if s.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
			t.Fatalf("setup step failed: %v", s)
		}
	}
	return e.observe(t, pod.GetUid())
}

func TestKillPodSidecarOrder(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod([]*syncpodv1.Container{sidecar("s1"), sidecar("s2")}, ctr("a"), ctr("b"))
	o := runningPod(t, e, pod)
	idName := map[string]string{}
	for _, c := range o.GetContainers() {
		idName[c.GetId()] = c.GetName()
	}
	resp := e.apply(t, pod, o, &syncpodv1.PodActions{KillPod: true})
	var order []string
	for _, s := range e.rt.Stops() {
		order = append(order, idName[s.ID])
		if s.Timeout != 30 {
			t.Errorf("stop %s grace %d, want 30", idName[s.ID], s.Timeout)
		}
	}
	// regular containers (any order) first, then sidecars in reverse spec order.
	if len(order) != 4 || !slices.Contains(order[:2], "a") || !slices.Contains(order[:2], "b") || order[2] != "s2" || order[3] != "s1" {
		t.Fatalf("stop order %v, want [a b]/[b a] then s2, s1", order)
	}
	if got := e.rt.SandboxStops(); len(got) != 1 || got[0] != o.GetSandboxes()[0].GetId() {
		t.Fatalf("sandbox stops %v", got)
	}
	want := "KILL_CONTAINER a SUCCEEDED\nKILL_CONTAINER b SUCCEEDED\nKILL_CONTAINER s2 SUCCEEDED\nKILL_CONTAINER s1 SUCCEEDED\nSTOP_SANDBOX " +
		o.GetSandboxes()[0].GetId() + " SUCCEEDED\nKILL_POD demo SUCCEEDED\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
}

func TestKillPodStopsSandboxesEvenWhenAContainerStopFails(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod(nil, ctr("a"))
	o := runningPod(t, e, pod)
	e.rt.InjectError("StopContainer", status.Error(codes.Internal, "stuck"))
	resp := e.apply(t, pod, o, &syncpodv1.PodActions{KillPod: true})
	// the sandbox is stopped whatever became of the containers; the
	// pass still fails.
	if got := e.rt.SandboxStops(); len(got) != 1 {
		t.Fatalf("sandbox stops %v, want the pod's sandbox", got)
	}
	want := "KILL_CONTAINER a FAILED KillContainerError\nSTOP_SANDBOX " + o.GetSandboxes()[0].GetId() + " SUCCEEDED\nKILL_POD demo FAILED KillPodError\n"
	if got := summary(resp); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
}

func TestKillContainers(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name      string
		inject    error
		wantSteps string
		wantGrace int64
	}{
		{"R-9.4 liveness kill uses the probe grace, then starts", nil,
			"KILL_CONTAINER web SUCCEEDED\nPULL_IMAGE web SUCCEEDED\nSTART_CONTAINER web SUCCEEDED\n", 5},
		{"R-8.2 a failed kill stops the pass", status.Error(codes.Internal, "boom"),
			"KILL_CONTAINER web FAILED KillContainerError\nSTART_CONTAINER web SKIPPED\n", 5},
		{"R-9.1 NotFound is ignored", status.Error(codes.NotFound, "gone"),
			"KILL_CONTAINER web SUCCEEDED\nPULL_IMAGE web SUCCEEDED\nSTART_CONTAINER web SUCCEEDED\n", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, busybox)
			pod := testPod(nil, ctr("web"))
			pod.Spec.TerminationGracePeriodSeconds = i64(20)
			pod.Spec.Containers[0].LivenessProbe = &syncpodv1.Probe{TerminationGracePeriodSeconds: i64(5)}
			o := runningPod(t, e, pod)
			if tc.inject != nil {
				e.rt.InjectError("StopContainer", tc.inject)
			}
			id := o.GetContainers()[0].GetId()
			resp := e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: o.GetSandboxes()[0].GetId(),
				ContainersToKill:  []*syncpodv1.ContainerKill{{ContainerId: id, Name: "web", Reason: syncpodv1.KillReason_KILL_REASON_LIVENESS_PROBE}},
				ContainersToStart: starts("web")})
			if got := summary(resp); got != tc.wantSteps {
				t.Fatalf("steps:\n%s\nwant:\n%s", got, tc.wantSteps)
			}
			if stops := e.rt.Stops(); len(stops) != 1 || stops[0].Timeout != tc.wantGrace {
				t.Fatalf("stops %v, want one with grace %d", stops, tc.wantGrace)
			}
		})
	}
}

func TestInitPassStopping(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inits []*syncpodv1.Container
		want  string
	}{
		{"R-5.8 a regular init container failing stops the pass", []*syncpodv1.Container{ctr("i1"), sidecar("s2")},
			"PULL_IMAGE i1 SUCCEEDED\nSTART_INIT_CONTAINER i1 FAILED CreateContainerError\nSTART_INIT_CONTAINER s2 SKIPPED\nSTART_CONTAINER web SKIPPED\n"},
		{"R-5.8 a failing sidecar is skipped and the pass goes on", []*syncpodv1.Container{sidecar("s1"), ctr("i2")},
			"PULL_IMAGE s1 SUCCEEDED\nSTART_INIT_CONTAINER s1 FAILED CreateContainerError\nPULL_IMAGE i2 SUCCEEDED\nSTART_INIT_CONTAINER i2 SUCCEEDED\nPULL_IMAGE web SUCCEEDED\nSTART_CONTAINER web SUCCEEDED\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, busybox)
			pod := testPod(tc.inits, ctr("web"))
			resp := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true})
			e.rt.InjectError("CreateContainer", status.Error(codes.Internal, "no"))
			resp = e.apply(t, pod, nil, &syncpodv1.PodActions{SandboxId: resp.GetSandboxId(),
				InitContainersToStart: starts(tc.inits[0].GetName(), tc.inits[1].GetName()), ContainersToStart: starts("web")})
			if got := summary(resp); got != tc.want {
				t.Fatalf("steps:\n%s\nwant:\n%s", got, tc.want)
			}
			if got := testutil.ToFloat64(e.r.m.startedCtrsErrors.WithLabelValues(typeInit, "CreateContainerError")); got != 1 {
				t.Errorf("started_containers_errors_total{init_container,CreateContainerError} = %v", got)
			}
		})
	}
}

func TestCrashLoopBackOff(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod(nil, ctr("web"))
	o := runningPod(t, e, pod)
	sb := o.GetSandboxes()[0].GetId()
	crash := func() *syncpodv1.ObservedPod {
		o := e.observe(t, "uid-1")
		e.rt.ExitContainer(o.GetContainers()[0].GetId(), 1, "", e.clock.Now().UnixNano())
		return e.observe(t, "uid-1")
	}
	startWeb := &syncpodv1.PodActions{SandboxId: sb, ContainersToStart: starts("web")}
	// the first exit already waits the first delay, 10 s after
	// its finish: the second waits 20 s.
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second} {
		exitAt := e.clock.Now()
		o := crash()
		e.clock.Advance(3 * time.Second)
		resp := e.apply(t, pod, o, startWeb)
		if got := summary(resp); got != "START_CONTAINER web SKIPPED CrashLoopBackOff\n" {
			t.Fatalf("exit %d: %s", i+1, got)
		}
		want := exitAt.Add(delay)
		if !resp.GetRetryAt().AsTime().Equal(want) || !resp.GetSteps()[0].GetBackoffUntil().AsTime().Equal(want) {
			t.Fatalf("exit %d: retry_at %v / backoff_until %v, want %v", i+1, resp.GetRetryAt().AsTime(), resp.GetSteps()[0].GetBackoffUntil().AsTime(), want)
		}
		if msg, want := resp.GetSteps()[0].GetMessage(), fmt.Sprintf("back-off %s restarting failed container=web pod=demo_ns(uid-1)", delay); msg != want {
			t.Fatalf("exit %d: message %q, want %q", i+1, msg, want)
		}
		e.clock.Advance(delay - 3*time.Second)
		resp = e.apply(t, pod, o, startWeb)
		if got := summary(resp); got != "PULL_IMAGE web SUCCEEDED\nSTART_CONTAINER web SUCCEEDED\n" || resp.GetRetryAt() != nil {
			t.Fatalf("exit %d at its instant: %s retry_at=%v", i+1, got, resp.GetRetryAt())
		}
	}
	// Restart count follows the newest instance.
	o = e.observe(t, "uid-1")
	if rc := o.GetContainers()[0].GetRestartCount(); rc != 2 {
		t.Fatalf("restart count %d, want 2", rc)
	}
	// A changed spec hash starts a fresh back-off: the first delay.
	o = crash()
	changed := &syncpodv1.PodActions{SandboxId: sb, ContainersToStart: []*syncpodv1.ContainerStart{{Name: "web", SpecHash: "other"}}}
	if resp := e.apply(t, pod, o, changed); resp.GetSteps()[0].GetMessage() != "back-off 10s restarting failed container=web pod=demo_ns(uid-1)" {
		t.Fatalf("new spec hash: %s %q", summary(resp), resp.GetSteps()[0].GetMessage())
	}
}

// TestImagePolicies: the pull policies of each start (R-8 steps 7-8); the image status read
// to decide is the one the container config takes its user from.
func TestImagePolicies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		image   string
		policy  syncpodv1.ImagePullPolicy
		present bool
		inject  error
		want    string
		pulled  bool
		// statuses is how often the image's status is read: once when
		// it is present (the config reuses it), again after a pull.
		statuses int
	}{
		{"Never with the image present", busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER, true, nil, "PULL_IMAGE c SUCCEEDED\nSTART_CONTAINER c SUCCEEDED\n", false, 1},
		{"Never with the image missing", busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER, false, nil, "PULL_IMAGE c FAILED ErrImageNeverPull\nSTART_CONTAINER c FAILED ErrImageNeverPull\n", false, 1},
		{"IfNotPresent with the image present", busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT, true, nil, "PULL_IMAGE c SUCCEEDED\nSTART_CONTAINER c SUCCEEDED\n", false, 1},
		{"IfNotPresent with the image missing pulls", busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT, false, nil, "PULL_IMAGE c SUCCEEDED\nSTART_CONTAINER c SUCCEEDED\n", true, 2},
		{"Always pulls even when present", busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS, true, nil, "PULL_IMAGE c SUCCEEDED\nSTART_CONTAINER c SUCCEEDED\n", true, 1},
		{"default for :latest is Always", "busybox:latest", 0, true, nil, "PULL_IMAGE c SUCCEEDED\nSTART_CONTAINER c SUCCEEDED\n", true, 1},
		{"pull failure is ErrImagePull", busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS, false, status.Error(codes.Unknown, "no registry"), "PULL_IMAGE c FAILED ErrImagePull\nSTART_CONTAINER c FAILED ErrImagePull\n", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var imgs []string
			if tc.present {
				imgs = []string{tc.image}
			}
			e := newEnv(t, imgs...)
			c := ctr("c")
			c.Image, c.ImagePullPolicy = tc.image, tc.policy
			pod := testPod(nil, c)
			resp := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true})
			if tc.inject != nil {
				e.img.InjectError("PullImage", tc.inject)
			}
			resp = e.apply(t, pod, nil, &syncpodv1.PodActions{SandboxId: resp.GetSandboxId(), ContainersToStart: starts("c")})
			if got := summary(resp); got != tc.want {
				t.Fatalf("steps:\n%s\nwant:\n%s", got, tc.want)
			}
			if pulled := slices.Contains(critest.ImageCalls(e.img), "PullImage"); pulled != tc.pulled {
				t.Fatalf("pulled = %v, want %v (calls %v)", pulled, tc.pulled, critest.ImageCalls(e.img))
			}
			var statuses int
			for _, c := range resp.GetCriCalls() {
				if c.GetOperation() == runtimeclient.OpImageStatus {
					statuses++
				}
			}
			if statuses != tc.statuses {
				t.Fatalf("%d image status calls, want %d (calls %v)", statuses, tc.statuses, resp.GetCriCalls())
			}
		})
	}
}

func TestImagePullBackOff(t *testing.T) {
	e := newEnv(t)
	pod := testPod(nil, ctr("c"))
	sb := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true}).GetSandboxId()
	a := &syncpodv1.PodActions{SandboxId: sb, ContainersToStart: starts("c")}
	e.img.InjectError("PullImage", status.Error(codes.Unknown, "no registry"))
	if got := summary(e.apply(t, pod, nil, a)); !strings.Contains(got, "ErrImagePull") {
		t.Fatalf("first: %s", got)
	}
	e.clock.Advance(4 * time.Second)
	resp := e.apply(t, pod, nil, a)
	if got := summary(resp); got != "PULL_IMAGE c FAILED ImagePullBackOff\nSTART_CONTAINER c FAILED ImagePullBackOff\n" {
		t.Fatalf("second: %s", got)
	}
	if want := e.clock.Now().Add(6 * time.Second); !resp.GetRetryAt().AsTime().Equal(want) {
		t.Fatalf("retry_at %v, want %v", resp.GetRetryAt().AsTime(), want)
	}
	e.clock.Advance(6 * time.Second)
	if got := summary(e.apply(t, pod, nil, a)); got != "PULL_IMAGE c SUCCEEDED\nSTART_CONTAINER c SUCCEEDED\n" {
		t.Fatalf("after back-off: %s", got)
	}
}

func TestPullPolicyDefault(t *testing.T) {
	for img, want := range map[string]syncpodv1.ImagePullPolicy{
		"busybox":                        syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS,
		"busybox:latest":                 syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS,
		"localhost:5000/busybox":         syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_ALWAYS,
		"busybox:1.36":                   syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT,
		"localhost:5000/busybox:1.36":    syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT,
		"busybox@sha256:0123456789abcde": syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT,
	} {
		if got := PullPolicy(&syncpodv1.Container{Image: img}); got != want {
			t.Errorf("PullPolicy(%q) = %v, want %v", img, got, want)
		}
	}
}

func TestSandboxNameReserved(t *testing.T) {
	for _, tc := range []struct {
		name     string
		state    runtimeapi.PodSandboxState
		wantSame bool
	}{
		{"ready sandbox of an interrupted pass is reused", runtimeapi.PodSandboxState_SANDBOX_READY, true},
		{"not-ready sandbox of an interrupted pass is replaced", runtimeapi.PodSandboxState_SANDBOX_NOTREADY, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, busybox)
			pod := testPod(nil, ctr("web"))
			first := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, Attempt: 1}).GetSandboxId()
			if tc.state != runtimeapi.PodSandboxState_SANDBOX_READY {
				e.rt.SetSandboxState(first, runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
			}
			// The executor crashed before answering; the planner retries.
			resp := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, Attempt: 1, ContainersToStart: starts("web")})
			if got := summary(resp); got != "CREATE_SANDBOX "+resp.GetSandboxId()+" SUCCEEDED\nPULL_IMAGE web SUCCEEDED\nSTART_CONTAINER web SUCCEEDED\n" {
				t.Fatalf("steps:\n%s", got)
			}
			o := e.observe(t, "uid-1")
			ready := 0
			for _, s := range o.GetSandboxes() {
				if s.GetState() == syncpodv1.SandboxState_SANDBOX_STATE_READY {
					ready++
				}
			}
			if ready != 1 || len(o.GetSandboxes()) != 1 {
				t.Fatalf("sandboxes %v: want exactly one, ready", o.GetSandboxes())
			}
			if !tc.wantSame && !slices.Contains(e.rt.GetCalls(), "RemovePodSandbox") {
				t.Fatalf("stale sandbox not removed: calls %v", e.rt.GetCalls())
			}
		})
	}
}

func TestPruneInitContainers(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod([]*syncpodv1.Container{ctr("init")}, ctr("web"))
	sb := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true}).GetSandboxId()
	// Three failed instances of the init container.
	for i := range 3 {
		o := e.observe(t, "uid-1")
		resp := e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: sb, InitContainersToStart: starts("init")})
		e.clock.Advance(time.Hour) // past any back-off
		id := resp.GetSteps()[len(resp.GetSteps())-1].GetContainerId()
		e.rt.SetCreatedAt(id, time.Unix(int64(1000+i), 0))
		e.rt.ExitContainer(id, 1, "", time.Unix(int64(1000+i), 5).UnixNano())
	}
	o := e.observe(t, "uid-1")
	newest := o.GetContainers()[0].GetId()
	resp := e.apply(t, pod, o, &syncpodv1.PodActions{SandboxId: sb})
	// only the newest exited instance is kept (the third pass
	// already pruned the oldest; this one prunes the second).
	if got := summary(resp); got != "PRUNE_INIT_CONTAINER init SUCCEEDED\n" {
		t.Fatalf("steps:\n%s", got)
	}
	if ids := e.rt.ContainerIDs(); len(ids) != 1 || ids[0] != newest {
		t.Fatalf("containers left %v, want only %s", ids, newest)
	}
}

func TestRuntimeUnavailableAborts(t *testing.T) {
	e := newEnv(t, busybox)
	e.rt.InjectError("RunPodSandbox", status.Error(codes.Unavailable, "connection refused"))
	_, err := e.r.ApplyActions(context.Background(), testPod(nil, ctr("web")), nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("web")})
	if !errors.Is(err, runtimeclient.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if got := testutil.ToFloat64(e.r.m.startedPodsErrors); got != 1 {
		t.Fatalf("started_pods_errors_total = %v", got)
	}
}

func TestPodLockSerializesAndSlotsBound(t *testing.T) {
	e := newEnv(t)
	e.r.sem = make(chan struct{}, 1)
	release, err := e.r.lockPod(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.r.lockPod(canceled, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("second lock of the same pod: %v, want to block until ctx ends", err)
	}
	// Another pod's lock is free: the lock alone bounds nothing.
	rb, err := e.r.lockPod(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	slot, err := e.r.acquireSlot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.acquireSlot(canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("slot over the bound: %v, want to block until ctx ends", err)
	}
	slot()
	slot, err = e.r.acquireSlot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slot()
	release()
	rb()
	if len(e.r.podLock) != 0 {
		t.Fatalf("pod locks leak: %v", e.r.podLock)
	}
}

func TestRemoveResources(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod(nil, ctr("run"), ctr("done"))
	o := runningPod(t, e, pod)
	var runID, doneID string
	for _, c := range o.GetContainers() {
		if c.GetName() == "run" {
			runID = c.GetId()
		} else {
			doneID = c.GetId()
		}
	}
	e.rt.ExitContainer(doneID, 0, "", e.clock.Now().UnixNano())
	sb := o.GetSandboxes()[0].GetId()
	resp, err := e.r.RemoveResources(context.Background(), []string{doneID, runID, "missing"}, []string{sb}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range resp.GetResults() {
		got = append(got, strings.TrimPrefix(r.GetOutcome().String(), "OUTCOME_"))
	}
	if strings.Join(got, " ") != "SUCCEEDED FAILED SUCCEEDED FAILED" {
		t.Fatalf("outcomes %v (%v)", got, resp.GetResults())
	}
	e.rt.SetSandboxState(sb, runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
	resp, err = e.r.RemoveResources(context.Background(), nil, []string{sb}, nil)
	if err != nil || resp.GetResults()[0].GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
		t.Fatalf("stopped sandbox removal: %v %v", resp, err)
	}
}

// TestRemoveResourcesForgetsDeletedPod: removing a deleted pod's last
// resources also removes its log directory (as the kubelet's container GC
// removes the log directories of deleted pods) and its crash-loop
// back-off entries, but only once every removal succeeded; another pod's
// directory and entries stay.
func TestRemoveResourcesForgetsDeletedPod(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod(nil, ctr("done"))
	o := runningPod(t, e, pod)
	doneID, sb := o.GetContainers()[0].GetId(), o.GetSandboxes()[0].GetId()
	other := &syncpodv1.Pod{Uid: "uid-2", Name: "other", Namespace: "ns"}
	for _, p := range []*syncpodv1.Pod{pod, other} {
		if _, err := e.store.Next(backoff.Key{PodUID: p.GetUid(), ContainerName: "done", SpecHash: "h"}, backoff.PodRef{Name: p.GetName(), Namespace: p.GetNamespace()}, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	podDir, otherDir := PodLogDir(e.logDir, pod), PodLogDir(e.logDir, other)
	if err := os.MkdirAll(filepath.Join(otherDir, "done"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(podDir, "done")); err != nil {
		t.Fatalf("the pod's log directory was not made at start: %v", err)
	}
	forget := &executorv1.ForgetPodRef{Uid: pod.GetUid(), Namespace: pod.GetNamespace(), Name: pod.GetName()}

	// The container still runs: its removal fails, nothing is forgotten.
	resp, err := e.r.RemoveResources(context.Background(), []string{doneID}, nil, forget)
	if err != nil || resp.GetResults()[0].GetOutcome() != executorv1.Outcome_OUTCOME_FAILED || resp.GetLogDirRemoved() || resp.GetBackoffsRemoved() != 0 {
		t.Fatalf("removal of a running container: %v %v", resp, err)
	}
	if _, err := os.Stat(podDir); err != nil {
		t.Fatalf("log directory removed although a removal failed: %v", err)
	}

	e.rt.ExitContainer(doneID, 0, "Completed", e.clock.Now().UnixNano())
	e.rt.SetSandboxState(sb, runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
	resp, err = e.r.RemoveResources(context.Background(), []string{doneID}, []string{sb}, forget)
	if err != nil || !resp.GetLogDirRemoved() || resp.GetBackoffsRemoved() != 1 {
		t.Fatalf("forget: %v %v, want the log dir and 1 back-off removed", resp, err)
	}
	if _, err := os.Stat(podDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("log directory %s still there: %v", podDir, err)
	}
	if left, err := e.store.List(pod.GetUid()); err != nil || len(left) != 0 {
		t.Fatalf("back-offs of the deleted pod left: %v %v", left, err)
	}
	if left, err := e.store.List(other.GetUid()); err != nil || len(left) != 1 {
		t.Fatalf("another pod's back-offs: %v %v, want 1", left, err)
	}
	if _, err := os.Stat(filepath.Join(otherDir, "done")); err != nil {
		t.Fatalf("another pod's log directory went: %v", err)
	}
	// Again, with nothing left: still succeeds, nothing more to remove.
	resp, err = e.r.RemoveResources(context.Background(), nil, nil, forget)
	if err != nil || resp.GetLogDirRemoved() || resp.GetBackoffsRemoved() != 0 {
		t.Fatalf("second forget: %v %v", resp, err)
	}
}

func TestMetricsLint(t *testing.T) {
	e := newEnv(t, busybox)
	runningPod(t, e, testPod(nil, ctr("web")))
	if _, err := backoff.NewMetrics(e.reg, e.store); err != nil {
		t.Fatal(err)
	}
	probs, err := testutil.GatherAndLint(e.reg)
	if err != nil || len(probs) > 0 {
		t.Fatalf("lint: %v %v", probs, err)
	}
	if n := testutil.ToFloat64(e.r.m.startedCtrs.WithLabelValues(typeContainer)); n != 1 {
		t.Fatalf("started containers %v", n)
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"syncpod_executor_runtime_operations_total", "syncpod_executor_runtime_operations_duration_seconds",
		"syncpod_executor_started_pods_total", "syncpod_executor_started_containers_total", "syncpod_executor_backoff_entries", "syncpod_executor_containers_in_backoff"} {
		if !slices.Contains(names, want) {
			t.Errorf("metric %s missing from %v", want, names)
		}
	}
}

// A container's stdin, stdinOnce and tty reach the runtime's config, so its
// runtime keeps an input for attach; a container without them gets none.
func TestContainerConfigCarriesStdinAndTTY(t *testing.T) {
	pod := testPod(nil, &syncpodv1.Container{Name: "shell", Image: busybox, Stdin: true, StdinOnce: true, Tty: true}, ctr("plain"))
	cfg, err := ContainerConfig(pod, pod.GetSpec().GetContainers()[0], false, "h", 0, ContainerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.GetStdin() || !cfg.GetStdinOnce() || !cfg.GetTty() {
		t.Errorf("CRI config stdin %v stdinOnce %v tty %v, want all true", cfg.GetStdin(), cfg.GetStdinOnce(), cfg.GetTty())
	}
	cfg, err = ContainerConfig(pod, pod.GetSpec().GetContainers()[1], false, "h", 0, ContainerOptions{})
	if err != nil || cfg.GetStdin() || cfg.GetStdinOnce() || cfg.GetTty() {
		t.Errorf("plain container's CRI config: %v %v", cfg, err)
	}
}

// TestCommandAndArgsExpandAgainstTheFinalEnv: $(VAR) in command and args
// is replaced with the container's final environment (a later env entry
// overriding an envFrom one included), $$ escapes and an undefined
// reference stays, as the kubelet expands them before CreateContainer.
func TestCommandAndArgsExpandAgainstTheFinalEnv(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{
		Command: []string{"/bin/$(TOOL)", "--port=$(PORT)"},
		Args:    []string{"$(GREETING), $(NAME)!", "$$(NAME)", "$(UNSET)"},
		Envs: []*runtimeapi.KeyValue{{Key: "TOOL", Value: []byte("server")}, {Key: "PORT", Value: []byte("8080")},
			{Key: "GREETING", Value: []byte("hello")}, {Key: "NAME", Value: []byte("world")}},
	}
	cmd := cfg.Command
	expandCommand(cfg)
	if want := []string{"/bin/server", "--port=8080"}; !slices.Equal(cfg.GetCommand(), want) {
		t.Errorf("command %q, want %q", cfg.GetCommand(), want)
	}
	if want := []string{"hello, world!", "$(NAME)", "$(UNSET)"}; !slices.Equal(cfg.GetArgs(), want) {
		t.Errorf("args %q, want %q", cfg.GetArgs(), want)
	}
	if cmd[0] != "/bin/$(TOOL)" {
		t.Error("the spec's command slice was modified")
	}
}

// TestContainerGetsTheServiceEnvironment: the container the
// executor creates has the pod's Service variables below its own env, and
// $(VAR) in its env values, command and args can refer to them.
func TestContainerGetsTheServiceEnvironment(t *testing.T) {
	e := newEnv(t, busybox)
	app := ctr("app")
	app.Command = []string{"wget", "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"}
	app.Args = []string{"$(API)"}
	app.Env = []*syncpodv1.EnvVar{
		{Name: "KUBERNETES_SERVICE_PORT", Value: "8443"},
		{Name: "API", Value: "$(KUBERNETES_SERVICE_HOST)"},
	}
	pod := testPod(nil, app)
	pod.ServiceEnvironment = map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	resp := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: starts("app")})
	var id string
	for _, st := range resp.GetSteps() {
		if st.GetContainerId() != "" {
			id = st.GetContainerId()
		}
	}
	cfg := e.rt.CreatedConfig(id)
	if cfg == nil {
		t.Fatalf("no container created: %s", summary(resp))
	}
	var env []string
	for _, kv := range cfg.GetEnvs() {
		env = append(env, kv.GetKey()+"="+string(kv.GetValue()))
	}
	if want := []string{"KUBERNETES_SERVICE_PORT=8443", "API=10.0.0.1", "KUBERNETES_SERVICE_HOST=10.0.0.1"}; !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
	if want := []string{"wget", "https://10.0.0.1:8443"}; !slices.Equal(cfg.GetCommand(), want) {
		t.Errorf("command %q, want %q", cfg.GetCommand(), want)
	}
	if want := []string{"10.0.0.1"}; !slices.Equal(cfg.GetArgs(), want) {
		t.Errorf("args %q, want %q", cfg.GetArgs(), want)
	}
}

// TestSandboxRecordsItsConfigHash: the planner's sandbox config
// hash is put on the sandbox as a label and read back into the observed
// sandbox, so the next plan can tell a changed pod-level setting.
func TestSandboxRecordsItsConfigHash(t *testing.T) {
	e := newEnv(t, busybox)
	pod := testPod(nil, ctr("app"))
	resp := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true, SandboxConfigHash: "0123456789abcdef", ContainersToStart: starts("app")})
	o := e.observe(t, pod.GetUid())
	if len(o.GetSandboxes()) != 1 || o.GetSandboxes()[0].GetConfigHash() != "0123456789abcdef" {
		t.Fatalf("observed sandboxes %v after %s", o.GetSandboxes(), summary(resp))
	}
}

// TestPullFailureMessage: a failed pull's message is the runtime's error,
// or what the two errors the CRI names mean, without the "Failed to pull
// image" of the event, which adds it (R-32.1).
func TestPullFailureMessage(t *testing.T) {
	e := newEnv(t)
	pod := testPod(nil, ctr("c"))
	sb := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true}).GetSandboxId()
	injected := status.Error(codes.Unknown, "no registry")
	e.img.InjectError("PullImage", injected)
	resp := e.apply(t, pod, nil, &syncpodv1.PodActions{SandboxId: sb, ContainersToStart: starts("c")})
	var pulls, starts int
	for _, st := range resp.GetSteps() {
		switch st.GetStep() {
		case executorv1.Step_STEP_PULL_IMAGE:
			pulls++
		case executorv1.Step_STEP_START_CONTAINER:
			starts++
		default:
			continue
		}
		if st.GetMessage() != injected.Error() {
			t.Errorf("%v message %q, want the runtime's error %q", st.GetStep(), st.GetMessage(), injected.Error())
		}
	}
	if pulls != 1 || starts != 1 {
		t.Fatalf("%d pull and %d start steps, want one each: %v", pulls, starts, resp.GetSteps())
	}
	for _, tc := range []struct{ err, want string }{
		{"RegistryUnavailable: dial tcp: connection refused", "image pull failed for busybox:1 because the registry is unavailable: dial tcp: connection refused"},
		{"SignatureValidationFailed", "image pull failed for busybox:1 because the signature validation failed"},
		{"rpc error: code = NotFound desc = RegistryUnavailable", "rpc error: code = NotFound desc = RegistryUnavailable"},
	} {
		if got := pullFailureMessage("busybox:1", errors.New(tc.err)); got != tc.want {
			t.Errorf("pullFailureMessage(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestRefusedContainerSaysTheRuntimesWords: a container the runtime will
// not create or start is reported with the runtime's own message, as the
// kubelet reports its status's message.
func TestRefusedContainerSaysTheRuntimesWords(t *testing.T) {
	for _, tc := range []struct{ call, reason string }{
		{"CreateContainer", "CreateContainerError"},
		{"StartContainer", "RunContainerError"},
	} {
		t.Run(tc.call, func(t *testing.T) {
			e := newEnv(t, busybox)
			pod := testPod(nil, ctr("web"))
			sb := e.apply(t, pod, nil, &syncpodv1.PodActions{CreateSandbox: true}).GetSandboxId()
			e.rt.InjectError(tc.call, status.Error(codes.Unknown, "failed to create shim task: exec: \"nope\": not in $PATH"))
			resp := e.apply(t, pod, nil, &syncpodv1.PodActions{SandboxId: sb, ContainersToStart: starts("web")})
			for _, st := range resp.GetSteps() {
				if st.GetStep() != executorv1.Step_STEP_START_CONTAINER {
					continue
				}
				if st.GetReason() != tc.reason || st.GetMessage() != "failed to create shim task: exec: \"nope\": not in $PATH" {
					t.Fatalf("start step %v, want %s with the runtime's message alone", st, tc.reason)
				}
				return
			}
			t.Fatalf("no start step: %v", resp.GetSteps())
		})
	}
}
