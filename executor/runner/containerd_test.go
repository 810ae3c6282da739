package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Tests against a real containerd (environment contract in critest). Pods
// use the host network only; nothing is sent to a pod IP.

type real struct {
	cd     *critest.Containerd
	r      *runner.Runner
	store  *backoff.Store
	dbPath string
	logDir string
	cfg    backoff.Config
}

func newReal(t *testing.T, cfg backoff.Config) *real {
	t.Helper()
	x := &real{cd: critest.RequireContainerd(t), dbPath: filepath.Join(t.TempDir(), "executor.db"), logDir: t.TempDir(), cfg: cfg}
	x.open(t)
	t.Cleanup(func() { _ = x.store.Close() })
	return x
}

// open (re)opens the store on the same file and builds a fresh runner:
// an executor restart.
func (x *real) open(t *testing.T) {
	t.Helper()
	var err error
	x.store, err = backoff.Open(x.dbPath, x.cfg)
	if err != nil {
		t.Fatal(err)
	}
	x.r, err = runner.New(runner.Config{
		Runtime: runtimeclient.NewRuntime(x.cd.Runtime, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Images:  runtimeclient.NewImages(x.cd.Images, nil, runtimeclient.Timeouts{Call: 30 * time.Second}),
		Backoff: x.store, LogDir: x.logDir,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (x *real) apply(t *testing.T, pod *syncpodv1.Pod, a *syncpodv1.PodActions) *executorv1.ApplyActionsResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := x.r.ApplyActions(ctx, pod, x.observe(t, pod.GetUid()), a)
	if err != nil {
		t.Fatalf("ApplyActions: %v", err)
	}
	return resp
}

func (x *real) observe(t *testing.T, uid string) *syncpodv1.ObservedPod {
	t.Helper()
	o, err := observe.Read(context.Background(), x.cd.Runtime, uid, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// waitFor polls the observed pod until cond holds (30 s deadline).
func (x *real) waitFor(t *testing.T, uid, what string, cond func(*syncpodv1.ObservedPod) bool) *syncpodv1.ObservedPod {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		o := x.observe(t, uid)
		if cond(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; observed %v", what, o)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLogged polls (30 s deadline) until a log file of container name,
// under the runner's log directory (<pod>/<name>/<attempt>.log), holds
// text.
func (x *real) waitLogged(t *testing.T, name, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(x.logDir, "*", name, "*.log"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q in the log of %s (files %v)", text, name, files)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newest(o *syncpodv1.ObservedPod, name string) *syncpodv1.ObservedContainer {
	for _, c := range o.GetContainers() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

func inState(name string, st syncpodv1.ContainerState) func(*syncpodv1.ObservedPod) bool {
	return func(o *syncpodv1.ObservedPod) bool { return newest(o, name).GetState() == st }
}

func mustSucceed(t *testing.T, resp *executorv1.ApplyActionsResponse) {
	t.Helper()
	for _, s := range resp.GetSteps() {
		if s.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
			t.Fatalf("step %v %s: %v %s %s", s.GetStep(), s.GetTarget(), s.GetOutcome(), s.GetReason(), s.GetMessage())
		}
	}
}

func sh(name, image, script string) *syncpodv1.Container {
	return &syncpodv1.Container{Name: name, Image: image, Command: []string{"sh", "-c", script},
		ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER}
}

func realPod(t *testing.T, x *real, inits []*syncpodv1.Container, ctrs ...*syncpodv1.Container) *syncpodv1.Pod {
	uid := fmt.Sprintf("itest-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), time.Now().UnixNano())
	x.cd.CleanupPod(t, uid)
	return &syncpodv1.Pod{Uid: uid, Name: "itest", Namespace: "syncpod-test",
		Spec: &syncpodv1.PodSpec{HostNetwork: true, InitContainers: inits, Containers: ctrs}}
}

func start(names ...string) []*syncpodv1.ContainerStart {
	var out []*syncpodv1.ContainerStart
	for _, n := range names {
		out = append(out, &syncpodv1.ContainerStart{Name: n, SpecHash: "h-" + n})
	}
	return out
}

func TestContainerdPodWithInitSidecarAndContainers(t *testing.T) {
	x := newReal(t, backoff.Config{})
	bb := x.cd.Busybox
	side := sh("side", bb, `trap "exit 0" TERM; while true; do sleep 0.2; done`)
	side.RestartPolicy = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS
	pod := realPod(t, x, []*syncpodv1.Container{sh("setup", bb, "echo init done"), side},
		sh("a", bb, `trap "exit 0" TERM; while true; do sleep 0.2; done`),
		sh("b", bb, `trap "exit 0" TERM; while true; do sleep 0.2; done`))
	uid := pod.GetUid()

	// The planner's passes for a new pod: sandbox + first init container;
	// then the sidecar; then the containers.
	resp := x.apply(t, pod, &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, InitContainersToStart: start("setup")})
	mustSucceed(t, resp)
	sb := resp.GetSandboxId()
	o := x.waitFor(t, uid, "setup to exit", inState("setup", syncpodv1.ContainerState_CONTAINER_STATE_EXITED))
	if c := newest(o, "setup"); c.GetExitCode() != 0 || c.GetSpecHash() != "h-setup" || c.GetSandboxId() != sb {
		t.Fatalf("setup: %v", c)
	}
	mustSucceed(t, x.apply(t, pod, &syncpodv1.PodActions{SandboxId: sb, InitContainersToStart: start("side")}))
	x.waitFor(t, uid, "sidecar running", inState("side", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING))
	mustSucceed(t, x.apply(t, pod, &syncpodv1.PodActions{SandboxId: sb, ContainersToStart: start("a", "b")}))
	o = x.waitFor(t, uid, "a and b running", func(o *syncpodv1.ObservedPod) bool {
		return inState("a", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING)(o) && inState("b", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING)(o)
	})
	if len(o.GetSandboxes()) != 1 || o.GetSandboxes()[0].GetState() != syncpodv1.SandboxState_SANDBOX_STATE_READY || !o.GetSandboxes()[0].GetHostNetwork() {
		t.Fatalf("sandboxes %v", o.GetSandboxes())
	}

	// Pod kill: everything stops, the sandbox too.
	resp = x.apply(t, pod, &syncpodv1.PodActions{KillPod: true})
	mustSucceed(t, resp)
	o = x.observe(t, uid)
	for _, c := range o.GetContainers() {
		if c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			t.Errorf("after kill %s is %v", c.GetName(), c.GetState())
		}
	}
	if o.GetSandboxes()[0].GetState() != syncpodv1.SandboxState_SANDBOX_STATE_NOTREADY {
		t.Errorf("sandbox after kill: %v", o.GetSandboxes()[0].GetState())
	}

	// Removal: containers then the sandbox; a second removal is NotFound =
	// success.
	var ids []string
	for _, c := range o.GetContainers() {
		ids = append(ids, c.GetId())
	}
	for range 2 {
		rm, err := x.r.RemoveResources(context.Background(), ids, []string{sb}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rm.GetResults() {
			if r.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
				t.Fatalf("remove %s: %v %s", r.GetId(), r.GetOutcome(), r.GetMessage())
			}
		}
	}
	if o := x.observe(t, uid); len(o.GetContainers())+len(o.GetSandboxes()) != 0 {
		t.Fatalf("left after removal: %v", o)
	}
}

// pinClock is the wall clock until pinned to an instant. The back-off
// decides on its clock against exit times that containerd stamps with the
// wall clock, so a check meant to land inside a hold is pinned there: on a
// loaded machine the real seconds between an exit and the check can
// outlast a short delay (CI: 2.8 s for one StartContainer).
type pinClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *pinClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		return time.Now()
	}
	return c.at
}

func (c *pinClock) pin(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = at
}

func TestContainerdCrashLoopBackOffSurvivesRestart_R11_3(t *testing.T) {
	// Initial 2 s so the test is short; the curve is the same (R-11.1 flags).
	clock := &pinClock{}
	x := newReal(t, backoff.Config{Initial: 2 * time.Second, Max: 8 * time.Second, Clock: clock})
	pod := realPod(t, x, nil, sh("crash", x.cd.Busybox, "exit 1"))
	uid := pod.GetUid()
	resp := x.apply(t, pod, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("crash")})
	mustSucceed(t, resp)
	sb := resp.GetSandboxId()
	again := &syncpodv1.PodActions{SandboxId: sb, ContainersToStart: start("crash")}
	o := x.waitFor(t, uid, "first exit", inState("crash", syncpodv1.ContainerState_CONTAINER_STATE_EXITED))
	finished := newest(o, "crash").GetFinishedAt().AsTime()
	if code := newest(o, "crash").GetExitCode(); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}

	// the first exit already waits Initial after its finish:
	// CrashLoopBackOff. The checks until the hold ends are made at an
	// instant inside it.
	clock.pin(finished.Add(time.Second))
	resp = x.apply(t, pod, again)
	if len(resp.GetSteps()) != 1 || resp.GetSteps()[0].GetReason() != "CrashLoopBackOff" || resp.GetSteps()[0].GetOutcome() != executorv1.Outcome_OUTCOME_SKIPPED {
		t.Fatalf("first restart: %v", resp.GetSteps())
	}
	until := resp.GetRetryAt().AsTime()
	if want := finished.Add(2 * time.Second); !until.Equal(want) {
		t.Fatalf("retry_at %v, want finish + 2s = %v", until, want)
	}

	// An executor restart on the same database keeps the back-off.
	if err := x.store.Close(); err != nil {
		t.Fatal(err)
	}
	x.open(t)
	// Survival, whatever the machine's speed: the reopened store holds the
	// entry with its delay...
	if e, ok, err := x.store.Get(backoff.Key{PodUID: uid, ContainerName: "crash", SpecHash: "h-crash"}); err != nil || !ok || e.Delay != 2*time.Second {
		t.Fatalf("after reopening the store: entry %+v ok=%v err=%v, want the 2s delay kept", e, ok, err)
	}
	// ...and, while the instant is still ahead, refuses the start with it.
	resp = x.apply(t, pod, again)
	if got := resp.GetSteps()[0].GetReason(); got != "CrashLoopBackOff" || !resp.GetRetryAt().AsTime().Equal(until) {
		t.Fatalf("after restart: %v retry_at %v, want CrashLoopBackOff until %v", resp.GetSteps(), resp.GetRetryAt().AsTime(), until)
	}

	// At its instant (the wall clock again) the start runs; the next
	// delay is doubled.
	clock.pin(time.Time{})
	deadline := time.Now().Add(30 * time.Second)
	for resp.GetSteps()[len(resp.GetSteps())-1].GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
		if time.Now().After(deadline) {
			t.Fatalf("never restarted: %v", resp.GetSteps())
		}
		time.Sleep(100 * time.Millisecond)
		resp = x.apply(t, pod, again)
	}
	if started := time.Now(); started.Before(until) {
		t.Fatalf("restarted at %v, before its back-off instant %v", started, until)
	}
	e, ok, err := x.store.Get(backoff.Key{PodUID: uid, ContainerName: "crash", SpecHash: "h-crash"})
	if err != nil || !ok || e.Delay != 4*time.Second {
		t.Fatalf("entry %+v ok=%v err=%v, want delay 4s", e, ok, err)
	}
}

func TestContainerdKillHonoursGracePeriod(t *testing.T) {
	x := newReal(t, backoff.Config{})
	// Long enough for the polite shell to run its trap (after its current
	// sleep 0.2) on a loaded machine; the stubborn one waits it out.
	grace := int64(6)
	pod := realPod(t, x, nil,
		sh("polite", x.cd.Busybox, `trap "exit 0" TERM; echo trapped; while true; do sleep 0.2; done`),
		sh("stubborn", x.cd.Busybox, `trap "" TERM; echo trapped; while true; do sleep 0.2; done`))
	pod.Spec.TerminationGracePeriodSeconds = &grace
	mustSucceed(t, x.apply(t, pod, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("polite", "stubborn")}))
	x.waitFor(t, pod.GetUid(), "both running", func(o *syncpodv1.ObservedPod) bool {
		return inState("polite", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING)(o) && inState("stubborn", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING)(o)
	})
	// RUNNING is said once runc start returns, while the container's
	// PID 1 may still be runc's own init for a few milliseconds: a SIGTERM
	// then ends it with exit 2, before the shell ever set its trap (seen
	// on a fast machine, 22 ms after the start). The shells say when
	// their traps are set.
	x.waitLogged(t, "polite", "trapped")
	x.waitLogged(t, "stubborn", "trapped")
	observed := x.observe(t, pod.GetUid())
	killAt := time.Now()
	resp, err := x.r.ApplyActions(context.Background(), pod, observed, &syncpodv1.PodActions{KillPod: true})
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, resp)
	o := x.observe(t, pod.GetUid())
	polite, stubborn := newest(o, "polite"), newest(o, "stubborn")
	// SIGTERM first, SIGKILL when the grace period runs out. The
	// one that traps SIGTERM exits 0, which it can only do before the
	// runtime's SIGKILL (that would be 137): exit 0 is the proof it was
	// let go within the grace period, however slow a loaded machine is.
	// No upper bound on a time here: a test must not fail on a noisy
	// machine (it did in CI: 3.48 s against 3 s).
	if polite.GetExitCode() != 0 {
		t.Errorf("polite: exit %d, want 0 (SIGTERM trapped before the grace period ran out)", polite.GetExitCode())
	}
	if !polite.GetFinishedAt().AsTime().Before(stubborn.GetFinishedAt().AsTime()) {
		t.Errorf("polite finished at %v, not before stubborn at %v", polite.GetFinishedAt().AsTime(), stubborn.GetFinishedAt().AsTime())
	}
	// The one that ignores SIGTERM is killed no sooner than the grace
	// period allows: a lower bound, which load cannot break.
	if stubborn.GetExitCode() != 137 || stubborn.GetFinishedAt().AsTime().Sub(killAt) < time.Duration(grace)*time.Second-500*time.Millisecond {
		t.Errorf("stubborn: exit %d after %v, want 137 (SIGKILL) after about %ds", stubborn.GetExitCode(), stubborn.GetFinishedAt().AsTime().Sub(killAt), grace)
	}
}

func TestContainerdNeverPullMissingImage(t *testing.T) {
	x := newReal(t, backoff.Config{})
	c := sh("ghost", "localhost/syncpod/does-not-exist:0.0", "true")
	pod := realPod(t, x, nil, c)
	resp := x.apply(t, pod, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("ghost")})
	var reasons []string
	for _, s := range resp.GetSteps() {
		reasons = append(reasons, s.GetStep().String()+"="+s.GetReason())
	}
	want := "STEP_CREATE_SANDBOX= STEP_PULL_IMAGE=ErrImageNeverPull STEP_START_CONTAINER=ErrImageNeverPull"
	if got := strings.Join(reasons, " "); got != want {
		t.Fatalf("steps %s, want %s", got, want)
	}
}

func TestContainerdRemoveRefusesRunning(t *testing.T) {
	x := newReal(t, backoff.Config{})
	pod := realPod(t, x, nil, sh("run", x.cd.Busybox, `trap "exit 0" TERM; while true; do sleep 0.2; done`))
	resp := x.apply(t, pod, &syncpodv1.PodActions{CreateSandbox: true, ContainersToStart: start("run")})
	mustSucceed(t, resp)
	o := x.waitFor(t, pod.GetUid(), "running", inState("run", syncpodv1.ContainerState_CONTAINER_STATE_RUNNING))
	rm, err := x.r.RemoveResources(context.Background(), []string{newest(o, "run").GetId()}, []string{resp.GetSandboxId()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rm.GetResults() {
		if r.GetOutcome() != executorv1.Outcome_OUTCOME_FAILED {
			t.Errorf("removal of running %s: %v, want refused", r.GetId(), r.GetOutcome())
		}
	}
}

func TestContainerdRetriedSandboxCreationReusesTheSandbox(t *testing.T) {
	x := newReal(t, backoff.Config{})
	pod := realPod(t, x, nil, sh("c", x.cd.Busybox, "true"))
	a := &syncpodv1.PodActions{KillPod: true, CreateSandbox: true, Attempt: 0}
	resp1, err := x.r.ApplyActions(context.Background(), pod, &syncpodv1.ObservedPod{}, a)
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, resp1)
	// The answer was lost (executor crash); the planner, not having seen
	// the sandbox yet, asks again with the same attempt: containerd says
	// the name is reserved and the ready sandbox is reused.
	resp2, err := x.r.ApplyActions(context.Background(), pod, &syncpodv1.ObservedPod{}, a)
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, resp2)
	if resp2.GetSandboxId() != resp1.GetSandboxId() {
		t.Fatalf("second pass sandbox %s, want the first %s reused", resp2.GetSandboxId(), resp1.GetSandboxId())
	}
	if msg := resp2.GetSteps()[len(resp2.GetSteps())-1].GetMessage(); !strings.Contains(msg, "reused") {
		t.Fatalf("create step message %q, want a reuse", msg)
	}
	if n := len(x.observe(t, pod.GetUid()).GetSandboxes()); n != 1 {
		t.Fatalf("%d sandboxes, want 1", n)
	}
}
