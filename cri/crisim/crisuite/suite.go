package crisuite

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Simulated-mode annotation keys, repeated here so the suite does not
// depend on crisim.
const (
	annExitAfter   = "io.syncpod.crisim/exit-after"
	annExitCode    = "io.syncpod.crisim/exit-code"
	annIgnoreTERM  = "io.syncpod.crisim/ignore-sigterm"
	runLabel       = "io.syncpod.test/run"
	pollInterval   = 20 * time.Millisecond
	waitDeadline   = 30 * time.Second
	stopGraceInSec = 2
)

// Caps are the behaviours on which runtimes legitimately differ.
type Caps struct {
	// Simulated: commands do not run; outcomes come from the crisim
	// annotations, ExecSync answers 0 with no output, logs stay empty.
	Simulated bool
	// FakePodIP: pod-network sandboxes get an IP from 10.88.0.0/16.
	FakePodIP bool
	// SandboxEvents: GetContainerEvents also reports sandboxes, with the
	// sandbox id as container_id, and every event carries the sandbox
	// status and all container statuses.
	SandboxEvents bool
	// NoContainerEvents: the runtime does not offer GetContainerEvents
	// (containerd 1.6 answers Unimplemented); the event tests then check
	// only that answer.
	NoContainerEvents bool
	// StopUnknownOK: StopContainer and StopPodSandbox of an id the
	// runtime does not know answer OK (containerd 2.x: nothing is left to
	// reclaim, and CRI has both calls idempotent; crisim) rather than
	// NotFound (containerd 1.6).
	StopUnknownOK bool
	// LateStopEvent: a container's STOPPED event may reach subscribers
	// after the DELETED event of a RemoveContainer that followed its
	// StopContainer. containerd 2.x lets StopContainer return once its exit
	// handler has marked the container stopped, and only then sends the
	// event, so a removal in between is reported first. crisim sends the
	// event before StopContainer returns.
	LateStopEvent bool
	// TermKills: a process with no SIGTERM handler dies of it (exit 143).
	// False on containerd, where the command is PID 1 of its namespace and
	// ignores SIGTERM unless it handles it.
	TermKills bool
}

// Target is one runtime under test.
type Target struct {
	// Runtime and Images are CRI clients of the runtime.
	Runtime internalapi.RuntimeService
	Images  internalapi.ImageManagerService
	// Image is the image containers run (busybox on containerd; any name
	// on crisim). It must provide sh, sleep, echo, printf and kill.
	Image string
	// Caps describe the runtime.
	Caps Caps
}

// Factory returns the runtime under test for one test; it registers its
// own cleanup on t.
type Factory func(t *testing.T) *Target

// Run runs every behaviour test against the runtimes newTarget returns.
func Run(t *testing.T, newTarget Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, fx *fixture)
	}{
		{"SandboxLifecycle", testSandboxLifecycle},
		{"SandboxNameReserved", testSandboxNameReserved},
		{"PodNetworkFakeIP", testPodNetworkFakeIP},
		{"ContainerLifecycle", testContainerLifecycle},
		{"ExitCodes", testExitCodes},
		{"Logs", testLogs},
		{"ReopenLogAfterRotation", testReopenLogAfterRotation},
		{"StopWithGrace", testStopWithGrace},
		{"Events", testEvents},
		{"Filters", testFilters},
		{"ErrorCodes", testErrorCodes},
		{"ExecSync", testExecSync},
		{"Images", testImages},
		{"RemoveSandboxRemovesContainers", testRemoveSandboxRemovesContainers},
		{"UpdateContainerResources", testUpdateContainerResources},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tgt := newTarget(t)
			tc.fn(t, newFixture(t, tgt))
		})
	}
}

// fixture holds one test's objects; everything is removed at cleanup.
type fixture struct {
	t      *testing.T
	tgt    *Target
	rs     internalapi.RuntimeService
	caps   Caps
	run    string
	logDir string
	pulled bool
}

func newFixture(t *testing.T, tgt *Target) *fixture {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &fixture{t: t, tgt: tgt, rs: tgt.Runtime, caps: tgt.Caps, run: hex.EncodeToString(b[:]), logDir: t.TempDir()}
}

func (fx *fixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	fx.t.Cleanup(cancel)
	return ctx
}

// sandboxConfig is a host-network sandbox config unique to this test.
func (fx *fixture) sandboxConfig(name string, labels map[string]string) *runtimeapi.PodSandboxConfig {
	l := map[string]string{runLabel: fx.run}
	for k, v := range labels {
		l[k] = v
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "crisuite", Uid: fx.run + "-" + name, Attempt: 0},
		LogDirectory: filepath.Join(fx.logDir, name),
		Labels:       l,
		Annotations:  map[string]string{"crisuite/annotation": "kept " + name},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
}

// runSandbox runs cfg and removes it at cleanup.
func (fx *fixture) runSandbox(cfg *runtimeapi.PodSandboxConfig) string {
	fx.t.Helper()
	id, err := fx.rs.RunPodSandbox(fx.ctx(), cfg, "")
	if err != nil {
		fx.t.Fatalf("RunPodSandbox(%s): %v", cfg.GetMetadata().GetName(), err)
	}
	fx.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = fx.rs.StopPodSandbox(ctx, id)
		_ = fx.rs.RemovePodSandbox(ctx, id)
	})
	return id
}

// spec is a container both a process runtime and crisim's simulated mode
// can run.
type spec struct {
	name   string
	cmd    []string
	ann    map[string]string
	labels map[string]string
	env    map[string]string
	dir    string
	linux  *runtimeapi.LinuxContainerResources
}

// pull makes the image present the way IfNotPresent does: runtimes whose
// images were imported locally (containerd here, with no registry in
// reach) are never asked to pull.
func (fx *fixture) pull() {
	fx.t.Helper()
	if fx.pulled {
		return
	}
	if st, err := fx.tgt.Images.ImageStatus(fx.ctx(), &runtimeapi.ImageSpec{Image: fx.tgt.Image}, false); err == nil && st.GetImage() != nil {
		fx.pulled = true
		return
	}
	if _, err := fx.tgt.Images.PullImage(fx.ctx(), &runtimeapi.ImageSpec{Image: fx.tgt.Image}, nil, nil); err != nil {
		fx.t.Fatalf("PullImage(%s): %v", fx.tgt.Image, err)
	}
	fx.pulled = true
}

func (fx *fixture) create(sbID string, sbCfg *runtimeapi.PodSandboxConfig, s spec) string {
	fx.t.Helper()
	fx.pull()
	labels := map[string]string{runLabel: fx.run}
	for k, v := range s.labels {
		labels[k] = v
	}
	var envs []*runtimeapi.KeyValue
	for k, v := range s.env {
		envs = append(envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: s.name},
		Image:       &runtimeapi.ImageSpec{Image: fx.tgt.Image},
		Command:     s.cmd,
		WorkingDir:  s.dir,
		Envs:        envs,
		Labels:      labels,
		Annotations: s.ann,
		LogPath:     s.name + ".log",
	}
	if s.linux != nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: s.linux}
	}
	id, err := fx.rs.CreateContainer(fx.ctx(), sbID, cfg, sbCfg)
	if err != nil {
		fx.t.Fatalf("CreateContainer(%s): %v", s.name, err)
	}
	return id
}

func (fx *fixture) start(id string) {
	fx.t.Helper()
	if err := fx.rs.StartContainer(fx.ctx(), id); err != nil {
		fx.t.Fatalf("StartContainer(%s): %v", id, err)
	}
}

// waitLog polls a container log file until a line contains want.
func (fx *fixture) waitLog(path, want string) {
	fx.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			fx.t.Fatalf("%s never logged %q", path, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (fx *fixture) status(id string) *runtimeapi.ContainerStatus {
	fx.t.Helper()
	resp, err := fx.rs.ContainerStatus(fx.ctx(), id, false)
	if err != nil {
		fx.t.Fatalf("ContainerStatus(%s): %v", id, err)
	}
	return resp.GetStatus()
}

// waitState polls until the container is in state, with a deadline.
func (fx *fixture) waitState(id string, state runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	fx.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for {
		st := fx.status(id)
		if st.GetState() == state {
			return st
		}
		if time.Now().After(deadline) {
			fx.t.Fatalf("container %s is %s after %s, want %s", id, st.GetState(), waitDeadline, state)
		}
		time.Sleep(pollInterval)
	}
}

// sleeper runs until stopped.
func sleeper(name string) spec {
	return spec{name: name, cmd: []string{"sleep", "3600"}}
}

// exiter exits with code on its own.
func exiter(name string, code int) spec {
	return spec{name: name, cmd: []string{"sh", "-c", fmt.Sprintf("exit %d", code)},
		ann: map[string]string{annExitAfter: "0s", annExitCode: fmt.Sprint(code)}}
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: code %s (err %v), want %s", what, got, err, want)
	}
}

func nanosNow(t *testing.T, what string, ns int64) {
	t.Helper()
	if d := time.Since(time.Unix(0, ns)); d < -time.Hour || d > time.Hour {
		t.Errorf("%s = %d is not a nanosecond timestamp near now (off by %s)", what, ns, d)
	}
}

func testSandboxLifecycle(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	cfg := fx.sandboxConfig("lifecycle", map[string]string{"app": "x"})
	id := fx.runSandbox(cfg)

	resp, err := fx.rs.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	st := resp.GetStatus()
	if st.GetId() != id || st.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("status = %s %s, want %s READY", st.GetId(), st.GetState(), id)
	}
	md := st.GetMetadata()
	if md.GetName() != "lifecycle" || md.GetNamespace() != "crisuite" || md.GetUid() != cfg.Metadata.Uid {
		t.Errorf("metadata = %v, want the config's", md)
	}
	if st.GetLabels()["app"] != "x" || st.GetLabels()[runLabel] != fx.run {
		t.Errorf("labels = %v, want the config's kept", st.GetLabels())
	}
	if st.GetAnnotations()["crisuite/annotation"] != "kept lifecycle" {
		t.Errorf("annotations = %v, want the config's kept", st.GetAnnotations())
	}
	nanosNow(t, "created_at", st.GetCreatedAt())
	if ip := st.GetNetwork().GetIp(); ip != "" && fx.caps.FakePodIP {
		t.Errorf("host-network sandbox has IP %q, want none", ip)
	}
	if got := st.GetLinux().GetNamespaces().GetOptions().GetNetwork(); got != runtimeapi.NamespaceMode_NODE {
		t.Errorf("network namespace mode = %s, want NODE (the kubelet compares it with the pod's)", got)
	}

	items, err := fx.rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runLabel: fx.run}})
	if err != nil || len(items) != 1 || items[0].GetId() != id {
		t.Fatalf("ListPodSandbox = %v, %v; want just %s", items, err, id)
	}

	for i := range 2 { // CRI: StopPodSandbox is idempotent
		if err := fx.rs.StopPodSandbox(ctx, id); err != nil {
			t.Fatalf("StopPodSandbox #%d: %v", i+1, err)
		}
	}
	resp, err = fx.rs.PodSandboxStatus(ctx, id, false)
	if err != nil || resp.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("after stop: %v, %v; want NOTREADY", resp.GetStatus().GetState(), err)
	}
	for i := range 2 { // CRI: RemovePodSandbox is idempotent
		if err := fx.rs.RemovePodSandbox(ctx, id); err != nil {
			t.Fatalf("RemovePodSandbox #%d: %v", i+1, err)
		}
	}
	_, err = fx.rs.PodSandboxStatus(ctx, id, false)
	wantCode(t, "PodSandboxStatus after remove", err, codes.NotFound)
}

func testSandboxNameReserved(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	cfg := fx.sandboxConfig("reserved", nil)
	id := fx.runSandbox(cfg)
	if id2, err := fx.rs.RunPodSandbox(ctx, cfg, ""); err == nil {
		_ = fx.rs.RemovePodSandbox(ctx, id2)
		t.Fatal("second RunPodSandbox with the same metadata succeeded, want a reserved-name error")
	} else if !strings.Contains(err.Error(), "reserved") {
		t.Errorf("second RunPodSandbox: %v, want an error saying the name is reserved", err)
	}
	// A new attempt is a new name.
	cfg2 := fx.sandboxConfig("reserved", nil)
	cfg2.Metadata.Attempt = 1
	fx.runSandbox(cfg2)
	// Removal frees the name.
	_ = fx.rs.StopPodSandbox(ctx, id)
	if err := fx.rs.RemovePodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	fx.runSandbox(cfg)
}

func testPodNetworkFakeIP(t *testing.T, fx *fixture) {
	if !fx.caps.FakePodIP {
		t.Log("runtime gives pod-network sandboxes real IPs; this suite only runs host-network sandboxes on it")
		return
	}
	cidr := netip.MustParsePrefix("10.88.0.0/16")
	seen := map[string]bool{}
	for _, name := range []string{"podnet-a", "podnet-b"} {
		cfg := fx.sandboxConfig(name, nil)
		cfg.Linux = nil // pod network
		id := fx.runSandbox(cfg)
		resp, err := fx.rs.PodSandboxStatus(fx.ctx(), id, false)
		if err != nil {
			t.Fatal(err)
		}
		ip, err := netip.ParseAddr(resp.GetStatus().GetNetwork().GetIp())
		if err != nil || !cidr.Contains(ip) {
			t.Errorf("%s: IP %q, want one in %s", name, resp.GetStatus().GetNetwork().GetIp(), cidr)
		}
		if seen[ip.String()] {
			t.Errorf("%s: IP %s given twice", name, ip)
		}
		seen[ip.String()] = true
	}
}

func testContainerLifecycle(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	sbCfg := fx.sandboxConfig("ctr", nil)
	sb := fx.runSandbox(sbCfg)
	s := sleeper("main")
	s.labels = map[string]string{"io.kubernetes.container.name": "main"}
	s.ann = map[string]string{"io.kubernetes.container.restartCount": "0"}
	id := fx.create(sb, sbCfg, s)

	st := fx.status(id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("after create: %s, want CREATED", st.GetState())
	}
	if st.GetMetadata().GetName() != "main" || st.GetLabels()["io.kubernetes.container.name"] != "main" ||
		st.GetAnnotations()["io.kubernetes.container.restartCount"] != "0" {
		t.Errorf("status metadata/labels/annotations not kept: %v %v %v", st.GetMetadata(), st.GetLabels(), st.GetAnnotations())
	}
	nanosNow(t, "created_at", st.GetCreatedAt())

	fx.start(id)
	st = fx.status(id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after start: %s, want RUNNING", st.GetState())
	}
	nanosNow(t, "started_at", st.GetStartedAt())
	if err := fx.rs.StartContainer(ctx, id); err == nil {
		t.Error("second StartContainer succeeded, want an error")
	}

	for i := range 2 { // CRI: StopContainer is idempotent
		if err := fx.rs.StopContainer(ctx, id, stopGraceInSec); err != nil {
			t.Fatalf("StopContainer #%d: %v", i+1, err)
		}
	}
	st = fx.status(id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("after stop: %s, want EXITED", st.GetState())
	}
	nanosNow(t, "finished_at", st.GetFinishedAt())
	if st.GetFinishedAt() < st.GetStartedAt() || st.GetStartedAt() < st.GetCreatedAt() {
		t.Errorf("timestamps out of order: created %d started %d finished %d", st.GetCreatedAt(), st.GetStartedAt(), st.GetFinishedAt())
	}
	if fx.caps.TermKills && st.GetExitCode() != 143 {
		t.Errorf("exit code after SIGTERM = %d, want 143", st.GetExitCode())
	}

	for i := range 2 { // CRI: RemoveContainer is idempotent
		if err := fx.rs.RemoveContainer(ctx, id); err != nil {
			t.Fatalf("RemoveContainer #%d: %v", i+1, err)
		}
	}
	_, err := fx.rs.ContainerStatus(ctx, id, false)
	wantCode(t, "ContainerStatus after remove", err, codes.NotFound)
	// The name is free again after removal.
	fx.create(sb, sbCfg, sleeper("main"))
}

func testExitCodes(t *testing.T, fx *fixture) {
	sbCfg := fx.sandboxConfig("exits", nil)
	sb := fx.runSandbox(sbCfg)
	tests := []struct {
		name       string
		s          spec
		wantCode   int32
		wantReason string
	}{
		{"exit 0 is Completed", exiter("zero", 0), 0, "Completed"},
		{"exit 3 is Error", exiter("three", 3), 3, "Error"},
		// The inner sh kills itself: a container's PID 1 cannot be killed
		// from inside its namespace, so the outer sh reports the death.
		{"death by SIGKILL is 137", spec{name: "killed", cmd: []string{"sh", "-c", `sh -c 'kill -KILL $$'; exit $?`},
			ann: map[string]string{annExitAfter: "0s", annExitCode: "137"}}, 137, "Error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := fx.create(sb, sbCfg, tc.s)
			fx.start(id)
			st := fx.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED)
			if st.GetExitCode() != tc.wantCode || st.GetReason() != tc.wantReason {
				t.Errorf("exit %d %q, want %d %q", st.GetExitCode(), st.GetReason(), tc.wantCode, tc.wantReason)
			}
		})
	}
}

// testReopenLogAfterRotation: a running container's log renamed away (a
// rotation) is there again when ReopenContainerLog returns, and the
// container's next lines go to it.
func testReopenLogAfterRotation(t *testing.T, fx *fixture) {
	if fx.caps.Simulated {
		t.Log("simulated containers write no output")
		return
	}
	sbCfg := fx.sandboxConfig("rotate", nil)
	sb := fx.runSandbox(sbCfg)
	id := fx.create(sb, sbCfg, spec{name: "ticker", cmd: []string{"sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"}})
	fx.start(id)
	path := filepath.Join(sbCfg.LogDirectory, "ticker.log")
	fx.waitLog(path, "tick 1")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := fx.rs.ReopenContainerLog(fx.ctx(), id); err != nil {
		t.Fatalf("ReopenContainerLog: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("after ReopenContainerLog returned: %v, want the log created again", err)
	}
	fx.waitLog(path, "tick")
}

// criLogLine is "<RFC3339Nano> <stream> <F|P> <content>".
var criLogLine = regexp.MustCompile(`^(\S+) (stdout|stderr) (F|P) (.*)$`)

func testLogs(t *testing.T, fx *fixture) {
	if fx.caps.Simulated {
		t.Log("simulated containers write no output")
		return
	}
	sbCfg := fx.sandboxConfig("logs", nil)
	sb := fx.runSandbox(sbCfg)
	id := fx.create(sb, sbCfg, spec{name: "talker", cmd: []string{"sh", "-c", "echo hello; echo oops >&2; printf partial"}})
	fx.start(id)
	st := fx.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED)
	want := filepath.Join(sbCfg.LogDirectory, "talker.log")
	if st.GetLogPath() != want {
		t.Errorf("log_path = %q, want %q", st.GetLogPath(), want)
	}
	f, err := os.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := criLogLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Errorf("line %q is not in the CRI log format", sc.Text())
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
			t.Errorf("line %q: timestamp: %v", sc.Text(), err)
		}
		got = append(got, m[2]+" "+m[3]+" "+m[4])
	}
	// An unterminated last line is written partial (P), as containerd does.
	for _, w := range []string{"stdout F hello", "stderr F oops", "stdout P partial"} {
		if !slices.Contains(got, w) {
			t.Errorf("log lacks %q; has %q", w, got)
		}
	}
}

func testStopWithGrace(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	sbCfg := fx.sandboxConfig("grace", nil)
	sb := fx.runSandbox(sbCfg)
	s := spec{name: "stubborn", cmd: []string{"sh", "-c", `trap "" TERM; echo ready; sleep 30 & wait`},
		ann: map[string]string{annIgnoreTERM: "true"}}
	id := fx.create(sb, sbCfg, s)
	fx.start(id)
	if !fx.caps.Simulated {
		// Stop only once the shell ignores SIGTERM; before its trap is set
		// a SIGTERM kills it at once, and the test would race the shell.
		fx.waitLog(filepath.Join(sbCfg.LogDirectory, "stubborn.log"), "ready")
	}
	t0 := time.Now()
	if err := fx.rs.StopContainer(ctx, id, stopGraceInSec); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	// A lower bound, not a speed goal: a process ignoring SIGTERM cannot
	// be gone before the SIGKILL that follows the grace period.
	if took := time.Since(t0); took < stopGraceInSec*time.Second {
		t.Errorf("StopContainer returned after %s, before the %ds grace period ended", took, stopGraceInSec)
	}
	st := fx.status(id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 137 {
		t.Errorf("after stop: %s exit %d, want EXITED 137 (SIGKILL)", st.GetState(), st.GetExitCode())
	}
}

// subscription collects GetContainerEvents into a channel.
type subscription struct {
	ch chan *runtimeapi.ContainerEventResponse
}

func (fx *fixture) subscribe() *subscription {
	fx.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub := &subscription{ch: make(chan *runtimeapi.ContainerEventResponse, 4096)}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = fx.rs.GetContainerEvents(ctx, sub.ch, nil)
	}()
	fx.t.Cleanup(func() { cancel(); <-ended })
	return sub
}

// sync makes sure every subscription is live on the server: it runs
// sandboxes until each subscription has seen one.
func (fx *fixture) sync(subs ...*subscription) {
	fx.t.Helper()
	for i := range 50 {
		cfg := fx.sandboxConfig(fmt.Sprintf("sync-%d", i), nil)
		id := fx.runSandbox(cfg)
		ok := true
		for _, s := range subs {
			ok = ok && s.waitFor(id, 2*time.Second) != nil
		}
		if ok {
			return
		}
	}
	fx.t.Fatal("event subscriptions never saw a sandbox event")
}

// waitFor returns the first event about id, or nil after d.
func (s *subscription) waitFor(id string, d time.Duration) *runtimeapi.ContainerEventResponse {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case ev := <-s.ch:
			if ev.GetContainerId() == id {
				return ev
			}
		case <-t.C:
			return nil
		}
	}
}

// collect returns the events about any of ids until one about stopAt of
// type stopType.
func (s *subscription) collect(t *testing.T, ids []string, stopAt string, stopType runtimeapi.ContainerEventType) []*runtimeapi.ContainerEventResponse {
	t.Helper()
	timer := time.NewTimer(waitDeadline)
	defer timer.Stop()
	var out []*runtimeapi.ContainerEventResponse
	for {
		select {
		case ev := <-s.ch:
			if !slices.Contains(ids, ev.GetContainerId()) {
				continue
			}
			out = append(out, ev)
			if ev.GetContainerId() == stopAt && ev.GetContainerEventType() == stopType {
				return out
			}
		case <-timer.C:
			t.Fatalf("no %s event for %s within %s; got %v", stopType, stopAt, waitDeadline, eventNames(out))
		}
	}
}

func eventNames(evs []*runtimeapi.ContainerEventResponse) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%.8s:%s", ev.GetContainerId(), strings.TrimSuffix(strings.TrimPrefix(ev.GetContainerEventType().String(), "CONTAINER_"), "_EVENT")))
	}
	return out
}

func testEvents(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	if fx.tgt.Caps.NoContainerEvents {
		// Bounded: a runtime that does offer events keeps the stream
		// open (and the client blocks on a full channel).
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ch := make(chan *runtimeapi.ContainerEventResponse, 1024)
		err := fx.rs.GetContainerEvents(ctx, ch, nil)
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("GetContainerEvents on a runtime said to have no events: %v, want Unimplemented", err)
		}
		return
	}
	subs := []*subscription{fx.subscribe(), fx.subscribe()}
	fx.sync(subs...)

	sbCfg := fx.sandboxConfig("events", nil)
	sb := fx.runSandbox(sbCfg)
	id := fx.create(sb, sbCfg, sleeper("watched"))
	fx.start(id)
	if err := fx.rs.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if err := fx.rs.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	want := []string{"CREATED", "STARTED", "STOPPED", "DELETED"}
	stopAt, stopType := id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT
	if fx.caps.SandboxEvents {
		if err := fx.rs.StopPodSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		if err := fx.rs.RemovePodSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		// the sandbox's DELETED event ends the pod.
		want = []string{"sb:CREATED", "sb:STARTED", "CREATED", "STARTED", "STOPPED", "DELETED", "sb:STOPPED", "sb:DELETED"}
		stopAt = sb
	}
	for i, s := range subs {
		evs := s.collect(t, []string{sb, id}, stopAt, stopType)
		var got []string
		for _, ev := range evs {
			name := strings.TrimSuffix(strings.TrimPrefix(ev.GetContainerEventType().String(), "CONTAINER_"), "_EVENT")
			if ev.GetContainerId() == sb {
				if !fx.caps.SandboxEvents {
					continue
				}
				name = "sb:" + name
			}
			got = append(got, name)
			nanosNow(t, "event created_at", ev.GetCreatedAt())
			if !fx.caps.SandboxEvents {
				continue
			}
			// every event carries the sandbox status (with
			// metadata) and the statuses of all the pod's containers.
			if ev.GetPodSandboxStatus().GetId() != sb || ev.GetPodSandboxStatus().GetMetadata().GetUid() != sbCfg.Metadata.Uid {
				t.Errorf("subscriber %d: %s event lacks the sandbox status: %v", i, name, ev.GetPodSandboxStatus())
			}
			if name == "STARTED" {
				found := false
				for _, cs := range ev.GetContainersStatuses() {
					found = found || (cs.GetId() == id && cs.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING)
				}
				if !found {
					t.Errorf("subscriber %d: STARTED event lacks the running container's status: %v", i, ev.GetContainersStatuses())
				}
			}
		}
		if fx.caps.LateStopEvent {
			got = stopBeforeDelete(got)
		}
		if !slices.Equal(got, want) {
			t.Errorf("subscriber %d saw %v, want %v", i, got, want)
		}
	}
}

// stopBeforeDelete puts a container's STOPPED event that came right after
// its DELETED event back before it (Caps.LateStopEvent); any other order
// is left for the comparison to refuse.
func stopBeforeDelete(names []string) []string {
	out := slices.Clone(names)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "DELETED" && out[i+1] == "STOPPED" {
			out[i], out[i+1] = out[i+1], out[i]
		}
	}
	return out
}

func ids[T interface{ GetId() string }](items []T) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.GetId())
	}
	slices.Sort(out)
	return out
}

func sorted(ss ...string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return out
}

func testFilters(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	cfgA := fx.sandboxConfig("filter-a", map[string]string{"tier": "web"})
	cfgB := fx.sandboxConfig("filter-b", map[string]string{"tier": "db"})
	sbA, sbB := fx.runSandbox(cfgA), fx.runSandbox(cfgB)
	running := fx.create(sbA, cfgA, spec{name: "running", cmd: []string{"sleep", "3600"}, labels: map[string]string{"role": "app"}})
	fx.start(running)
	created := fx.create(sbA, cfgA, spec{name: "created", cmd: []string{"sleep", "3600"}, labels: map[string]string{"role": "app"}})
	exited := fx.create(sbB, cfgB, exiter("exited", 0))
	fx.start(exited)
	fx.waitState(exited, runtimeapi.ContainerState_CONTAINER_EXITED)
	if err := fx.rs.StopPodSandbox(ctx, sbB); err != nil {
		t.Fatal(err)
	}

	mine := map[string]string{runLabel: fx.run}
	with := func(kv ...string) map[string]string {
		m := map[string]string{runLabel: fx.run}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	ctrTests := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"all of this test", &runtimeapi.ContainerFilter{LabelSelector: mine}, sorted(running, created, exited)},
		{"by id", &runtimeapi.ContainerFilter{Id: created}, sorted(created)},
		{"by state running", &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}, LabelSelector: mine}, sorted(running)},
		{"by state created", &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED}, LabelSelector: mine}, sorted(created)},
		{"by state exited", &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}, LabelSelector: mine}, sorted(exited)},
		{"by sandbox", &runtimeapi.ContainerFilter{PodSandboxId: sbA}, sorted(running, created)},
		{"by label", &runtimeapi.ContainerFilter{LabelSelector: with("role", "app")}, sorted(running, created)},
		{"by sandbox and state", &runtimeapi.ContainerFilter{PodSandboxId: sbA, State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED}}, sorted(created)},
		{"label matches nothing", &runtimeapi.ContainerFilter{LabelSelector: with("role", "none")}, nil},
	}
	for _, tc := range ctrTests {
		t.Run("containers/"+tc.name, func(t *testing.T) {
			got, err := fx.rs.ListContainers(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !slices.Equal(g, tc.want) {
				t.Errorf("got %v, want %v", g, tc.want)
			}
		})
	}
	sbTests := []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"by id", &runtimeapi.PodSandboxFilter{Id: sbB}, sorted(sbB)},
		{"by state ready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}, LabelSelector: mine}, sorted(sbA)},
		{"by state notready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}, LabelSelector: mine}, sorted(sbB)},
		{"by label", &runtimeapi.PodSandboxFilter{LabelSelector: with("tier", "web")}, sorted(sbA)},
	}
	for _, tc := range sbTests {
		t.Run("sandboxes/"+tc.name, func(t *testing.T) {
			got, err := fx.rs.ListPodSandbox(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !slices.Equal(g, tc.want) {
				t.Errorf("got %v, want %v", g, tc.want)
			}
		})
	}
}

func testErrorCodes(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	unknown := strings.Repeat("0", 64)
	sbCfg := fx.sandboxConfig("errors", nil)
	sb := fx.runSandbox(sbCfg)
	run := fx.create(sb, sbCfg, sleeper("running"))
	fx.start(run)

	stopUnknown, stopUnknownName := codes.NotFound, "NotFound"
	if fx.caps.StopUnknownOK {
		stopUnknown, stopUnknownName = codes.OK, "fine"
	}
	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"ContainerStatus of unknown id is NotFound", func() error { _, err := fx.rs.ContainerStatus(ctx, unknown, false); return err }, codes.NotFound},
		{"PodSandboxStatus of unknown id is NotFound", func() error { _, err := fx.rs.PodSandboxStatus(ctx, unknown, false); return err }, codes.NotFound},
		{"StartContainer of unknown id is NotFound", func() error { return fx.rs.StartContainer(ctx, unknown) }, codes.NotFound},
		{"StopContainer of unknown id is " + stopUnknownName, func() error { return fx.rs.StopContainer(ctx, unknown, 0) }, stopUnknown},
		{"StopPodSandbox of unknown id is " + stopUnknownName, func() error { return fx.rs.StopPodSandbox(ctx, unknown) }, stopUnknown},
		{"CreateContainer in unknown sandbox is NotFound", func() error {
			_, err := fx.rs.CreateContainer(ctx, unknown, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "x"}, Image: &runtimeapi.ImageSpec{Image: fx.tgt.Image}}, sbCfg)
			return err
		}, codes.NotFound},
		{"RemoveContainer of unknown id is fine (CRI: idempotent)", func() error { return fx.rs.RemoveContainer(ctx, unknown) }, codes.OK},
		{"RemovePodSandbox of unknown id is fine (CRI: idempotent)", func() error { return fx.rs.RemovePodSandbox(ctx, unknown) }, codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.name, tc.call(), tc.want) })
	}

	t.Run("RemoveContainer of a running container", func(t *testing.T) {
		if err := fx.rs.RemoveContainer(ctx, run); err != nil {
			t.Fatalf("removing a running container: %v, want a forced removal (CRI)", err)
		}
		_, err := fx.rs.ContainerStatus(ctx, run, false)
		wantCode(t, "ContainerStatus after forced removal", err, codes.NotFound)
	})
	t.Run("CreateContainer with the same metadata twice", func(t *testing.T) {
		fx.create(sb, sbCfg, sleeper("twice"))
		_, err := fx.rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "twice"}, Image: &runtimeapi.ImageSpec{Image: fx.tgt.Image},
			Command: []string{"sleep", "1"}, Labels: map[string]string{runLabel: fx.run}}, sbCfg)
		if err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("got %v, want a reserved-name error", err)
		}
	})
}

func testExecSync(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	sbCfg := fx.sandboxConfig("exec", nil)
	sb := fx.runSandbox(sbCfg)
	s := sleeper("target")
	s.env = map[string]string{"GREETING": "hi from env"}
	s.dir = "/tmp"
	id := fx.create(sb, sbCfg, s)
	fx.start(id)
	stdout, stderr, err := fx.rs.ExecSync(ctx, id, []string{"sh", "-c", `echo "$GREETING"; pwd; echo err >&2; exit 4`}, 10*time.Second)
	if fx.caps.Simulated {
		if err != nil {
			t.Errorf("simulated ExecSync: %v, want exit 0", err)
		}
		return
	}
	var coded interface{ ExitStatus() int }
	if err == nil || !errorAs(err, &coded) || coded.ExitStatus() != 4 {
		t.Errorf("ExecSync error = %v, want exit code 4", err)
	}
	if string(stdout) != "hi from env\n/tmp\n" || string(stderr) != "err\n" {
		t.Errorf("stdout %q stderr %q, want the env, the working dir and err", stdout, stderr)
	}
	_, _, err = fx.rs.ExecSync(ctx, id, []string{"sleep", "30"}, 1*time.Second)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("ExecSync past its timeout: %v, want a timeout error", err)
	}
}

func testImages(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	fx.pull()
	resp, err := fx.tgt.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: fx.tgt.Image}, false)
	if err != nil || resp.GetImage() == nil || resp.GetImage().GetId() == "" {
		t.Errorf("ImageStatus(%s) = %v, %v; want the image", fx.tgt.Image, resp.GetImage(), err)
	}
	resp, err = fx.tgt.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "example.invalid/absent-" + fx.run + ":1"}, false)
	if err != nil || resp.GetImage() != nil {
		t.Errorf("ImageStatus(absent) = %v, %v; want a nil image and no error", resp.GetImage(), err)
	}
	imgs, err := fx.tgt.Images.ListImages(ctx, nil)
	if err != nil || len(imgs) == 0 {
		t.Errorf("ListImages = %d images, %v", len(imgs), err)
	}
	if _, err := fx.tgt.Images.ImageFsInfo(ctx); err != nil {
		t.Errorf("ImageFsInfo: %v", err)
	}
}

func testRemoveSandboxRemovesContainers(t *testing.T, fx *fixture) {
	ctx := fx.ctx()
	sbCfg := fx.sandboxConfig("teardown", nil)
	sb := fx.runSandbox(sbCfg)
	a := fx.create(sb, sbCfg, sleeper("a"))
	fx.start(a)
	b := fx.create(sb, sbCfg, sleeper("b"))
	if err := fx.rs.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if st := fx.status(a); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("after StopPodSandbox the running container is %s, want EXITED", st.GetState())
	}
	if err := fx.rs.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	left, err := fx.rs.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb})
	if err != nil || len(left) != 0 {
		t.Errorf("after RemovePodSandbox: %v, %v; want no containers (%s, %s removed)", ids(left), err, a, b)
	}
}

// testUpdateContainerResources: a running container's resources change in
// place, and its status reports the values it was created with, then the
// updated ones (what an in-place resize reads back).
func testUpdateContainerResources(t *testing.T, fx *fixture) {
	sbCfg := fx.sandboxConfig("resize", nil)
	sb := fx.runSandbox(sbCfg)
	s := sleeper("main")
	s.linux = &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 64 << 20}
	id := fx.create(sb, sbCfg, s)
	fx.start(id)
	resources := func(r *runtimeapi.LinuxContainerResources) [4]int64 {
		return [4]int64{r.GetCpuShares(), r.GetCpuPeriod(), r.GetCpuQuota(), r.GetMemoryLimitInBytes()}
	}
	if got, want := resources(fx.status(id).GetResources().GetLinux()), resources(s.linux); got != want {
		t.Errorf("status resources after create = %v, want %v", got, want)
	}
	next := &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: 128 << 20}
	if err := fx.rs.UpdateContainerResources(fx.ctx(), id, &runtimeapi.ContainerResources{Linux: next}); err != nil {
		t.Fatalf("UpdateContainerResources: %v", err)
	}
	st := fx.status(id)
	if got, want := resources(st.GetResources().GetLinux()), resources(next); got != want {
		t.Errorf("status resources after update = %v, want %v", got, want)
	}
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("state after update = %s, want RUNNING", st.GetState())
	}
	err := fx.rs.UpdateContainerResources(fx.ctx(), "no-such-container", &runtimeapi.ContainerResources{Linux: next})
	wantCode(t, "UpdateContainerResources of an unknown container", err, codes.NotFound)
}
