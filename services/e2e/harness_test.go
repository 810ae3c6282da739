package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	"github.com/syncpod/syncpod/node/kubeconv"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/ctl"
)

// node is a whole syncpod node made of real processes: crisim in process
// mode on a unix socket, the executor and the PLEG on it, and the planner
// driving them.
type node struct {
	t   *testing.T
	dir string // short private directory (holds the CRI socket)
	// workDir is crisim's working directory, so every container process
	// whose spec names no working dir runs there: after shutdown no process
	// may still have it as its cwd.
	workDir     string
	manifestDir string
	sock        string
	// logDir is the executor's --log-dir, the root of the pod log
	// directories.
	logDir string

	crisim, executor, pleg, planner *proc
	plannerArgs                     []string
	killed                          []*proc // planners ended with SIGKILL

	conn     *grpc.ClientConn // to the planner; replaced on restart
	pods     plannerv1.PlannerServiceClient
	plegConn *grpc.ClientConn
	plegc    plegv1.PlegServiceClient
	cri      internalapi.RuntimeService
}

// nodeOptions tune a node.
type nodeOptions struct {
	// backoffInitial and backoffMax are the executor's crash-loop curve;
	// zero means 1s and 4s.
	backoffInitial, backoffMax time.Duration
	// resyncPeriod is the planner's periodic resync and housekeeping
	// period; zero means 2s. A long one shows that PLEG events and
	// back-off timers drive the syncs.
	resyncPeriod time.Duration
	// criEndpoint, when set, is an existing runtime (containerd) to use
	// instead of starting crisim.
	criEndpoint string
	// crisimMode is crisim's --mode; empty means process.
	crisimMode string
	// sockets puts the planner, executor and PLEG on unix sockets in the
	// node's short directory, so each can be killed and restarted on the
	// same address while clients keep their connections.
	sockets bool
	// executorCRI, when set, is given the runtime's endpoint and the node's
	// short directory and returns the executor's CRI endpoint (a proxy in
	// front of the runtime).
	executorCRI func(endpoint, dir string) string
	// plegCRI is executorCRI for the PLEG.
	plegCRI func(endpoint, dir string) string
	// executorArgs, plegArgs, crisimArgs and plannerArgs are extra flags
	// (later flags win).
	executorArgs, plegArgs, crisimArgs, plannerArgs []string
}

// startNode starts every process of a node and stops them all, in order,
// at cleanup, failing the test if one does not exit cleanly or a
// container process outlives crisim. On failure it logs every process's
// output.
func startNode(t *testing.T, o nodeOptions) *node {
	t.Helper()
	if o.backoffInitial == 0 {
		o.backoffInitial = time.Second
	}
	if o.backoffMax == 0 {
		o.backoffMax = 4 * time.Second
	}
	if o.resyncPeriod == 0 {
		o.resyncPeriod = 2 * time.Second
	}
	// Unix socket paths are limited to ~100 bytes: t.TempDir() can be too
	// long, so the socket lives in a short directory of its own.
	short, err := os.MkdirTemp("", "spe2e")
	if err != nil {
		t.Fatal(err)
	}
	if len(short) > 60 {
		_ = os.RemoveAll(short)
		if short, err = os.MkdirTemp("/tmp", "spe2e"); err != nil {
			t.Fatal(err)
		}
	}
	base := t.TempDir()
	unmountAtCleanup(t, base)
	n := &node{
		t:           t,
		dir:         short,
		workDir:     filepath.Join(base, "work"),
		manifestDir: filepath.Join(base, "manifests"),
		sock:        filepath.Join(short, "cri.sock"),
		logDir:      filepath.Join(base, "logs"),
	}
	for _, d := range []string{n.workDir, n.manifestDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Registered first, so it runs last: after every process is stopped.
	t.Cleanup(func() {
		_ = os.RemoveAll(short)
	})
	t.Cleanup(n.shutdown)

	endpoint := "unix://" + n.sock
	if o.crisimMode == "" {
		o.crisimMode = "process"
	}
	// listen is the address flag of a service: a random loopback port, or
	// a socket of its own in sockets mode.
	listen := func(name string) []string {
		if !o.sockets {
			return nil
		}
		return []string{"--listen=unix://" + filepath.Join(short, name+".sock")}
	}
	if o.criEndpoint != "" {
		endpoint = o.criEndpoint
	} else {
		// --kill-on-exit: a node's SIGTERM shutdown ends every container,
		// which the check below relies on, while a SIGKILLed crisim leaves
		// them running for the next one to re-adopt from its private state
		// dir. Simulated mode keeps its state in memory: the scale tests
		// never restart it, and need no disk writes per call.
		args := []string{"--mode=" + o.crisimMode, "--listen=" + endpoint, "--kill-on-exit"}
		if o.crisimMode == "process" {
			args = append(args, "--data-dir="+filepath.Join(base, "crisim"))
		}
		n.crisim = startProc(t, "syncpod-crisim", procOptions{managed: true, dir: n.workDir, args: append(args, o.crisimArgs...)})
	}
	executorCRI := endpoint
	if o.executorCRI != nil {
		executorCRI = o.executorCRI(endpoint, short)
	}
	n.executor = startProc(t, "syncpod-executor", procOptions{managed: true, args: append(append(listen("executor"),
		"--cri-endpoint="+executorCRI,
		"--data-dir="+filepath.Join(base, "executor"),
		"--log-dir="+n.logDir,
		"--backoff-initial="+o.backoffInitial.String(),
		"--backoff-max="+o.backoffMax.String(),
		// A node on a real containerd would otherwise make the kubelet's
		// /kubepods on the host and leave it; the pod cgroups are tested
		// by executor/runner under a private cgroup root.
		"--cgroups-per-qos=false",
	), o.executorArgs...)})
	plegCRI := endpoint
	if o.plegCRI != nil {
		plegCRI = o.plegCRI(endpoint, short)
	}
	n.pleg = startProc(t, "syncpod-pleg", procOptions{managed: true, args: append(append(listen("pleg"),
		"--cri-endpoint="+plegCRI,
		"--relist-period=500ms",
	), o.plegArgs...)})
	n.plegConn = dial(t, n.pleg.grpc)
	n.plegc = plegv1.NewPlegServiceClient(n.plegConn)
	n.plannerArgs = append(listen("planner"),
		"--executor="+target(n.executor.grpc),
		"--pleg="+target(n.pleg.grpc),
		"--data-dir="+filepath.Join(base, "planner"),
		"--manifest-dir="+n.manifestDir,
		"--manifest-interval=200ms",
		"--resync-period="+o.resyncPeriod.String(),
		"--housekeeping-period="+o.resyncPeriod.String(),
		"--eviction-check-period="+o.resyncPeriod.String(),
		// The test machine's disk may be fuller than the kubelet's default
		// thresholds allow: its pods must not be evicted for it.
		"--eviction-hard=memory.available<100Mi,"+lowDiskThresholds,
	)
	n.plannerArgs = append(n.plannerArgs, o.plannerArgs...)
	n.startPlanner()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.cri, err = remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(10 * time.Second).Build(ctx)
	if err != nil {
		t.Fatalf("CRI client for %s: %v", endpoint, err)
	}
	return n
}

// target is the address a peer or a client dials for a service's bound
// address: unix:///path for a socket path, host:port as it is.
func target(addr string) string {
	if strings.HasPrefix(addr, "/") {
		return "unix://" + addr
	}
	return addr
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	tgt := "passthrough:///" + addr
	if strings.HasPrefix(addr, "/") {
		tgt = "unix://" + addr
	}
	conn, err := grpc.NewClient(tgt, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// startPlanner (re)starts the planner with the node's flags and points the
// planner client at it.
func (n *node) startPlanner() {
	n.t.Helper()
	n.planner = startProc(n.t, "syncpod-planner", procOptions{managed: true, args: n.plannerArgs})
	if n.conn != nil {
		_ = n.conn.Close()
	}
	n.conn = dial(n.t, n.planner.grpc)
	n.pods = plannerv1.NewPlannerServiceClient(n.conn)
}

// killPlanner ends the planner with SIGKILL (no chance to clean up) and
// starts a new one on the same database, executor and PLEG. The old
// planner's log is kept for failure reports.
func (n *node) killPlanner() {
	n.t.Helper()
	n.killPlannerWhile(func() {})
}

// killPlannerWhile ends the planner with SIGKILL, runs meanwhile while no
// planner runs, and starts a new one on the same database and peers.
func (n *node) killPlannerWhile(meanwhile func()) {
	n.t.Helper()
	n.killed = append(n.killed, killPlanner(n.t, n.planner, 300))
	meanwhile()
	n.startPlanner()
}

// killPlanner ends planner with SIGKILL and returns it, its last
// tailLines lines of log to be shown should the test fail.
func killPlanner(t *testing.T, planner *proc, tailLines int) *proc {
	t.Helper()
	_ = planner.signal(t, syscall.SIGKILL)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- log of the planner killed with SIGKILL ----\n%s", planner.tail(tailLines))
		}
	})
	return planner
}

// shutdown stops the processes in dependency order with SIGTERM and checks
// that each exits cleanly and that no container process is left.
func (n *node) shutdown() {
	t := n.t
	if n.cri != nil {
		_ = n.cri.Close(context.Background())
	}
	for _, c := range []*grpc.ClientConn{n.conn, n.plegConn} {
		if c != nil {
			_ = c.Close()
		}
	}
	for _, p := range []*proc{n.planner, n.executor, n.pleg, n.crisim} {
		if p == nil {
			continue
		}
		if err := p.stop(t); err != nil {
			t.Errorf("%s: exit after SIGTERM: %v", p.name, err)
		}
	}
	if n.crisim == nil {
		return // an external runtime: its containers are the test's to remove
	}
	// crisim kills every container process group on shutdown; give the
	// kernel a moment to reap them (polled: a loaded machine may take
	// seconds), then look for survivors.
	var left []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		left = n.containerProcesses()
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("container processes outlived crisim: %s", strings.Join(left, "; "))
		for _, pid := range left {
			var p int
			if _, err := fmt.Sscan(strings.Fields(pid)[0], &p); err == nil {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
	}
	if d := os.Getenv("SYNCPOD_E2E_LOG_DIR"); d != "" {
		// Full logs for debugging: SYNCPOD_E2E_LOG_DIR/<test>/<binary>.log.
		dir := filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err == nil {
			for _, p := range append([]*proc{n.crisim, n.executor, n.pleg, n.planner}, n.killed...) {
				if p != nil {
					_ = os.WriteFile(filepath.Join(dir, p.name+"-"+strconv.Itoa(p.cmd.Process.Pid)+".log"), []byte(p.output()), 0o644)
				}
			}
		}
	}
	if t.Failed() {
		for _, p := range []*proc{n.crisim, n.executor, n.pleg, n.planner} {
			if p != nil {
				t.Logf("---- log of %s ----\n%s", p.name, p.tail(300))
			}
		}
	}
}

// containerProcesses lists "pid cmdline" of the processes whose working
// directory is crisim's, crisim itself excepted: its containers and execs.
func (n *node) containerProcesses() []string {
	var crisim string
	if n.crisim != nil {
		crisim = strconv.Itoa(n.crisim.cmd.Process.Pid)
	}
	return slices.DeleteFunc(processesIn(n.workDir), func(p string) bool { return strings.Fields(p)[0] == crisim })
}

// processesIn lists "pid cmdline" of the processes whose working directory
// is dir.
func processesIn(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || cwd != dir {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, e.Name()+" "+strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
	}
	return out
}

// ctl runs syncpodctl against the planner and returns its exit code and
// output. Its bound is longer than any --timeout the tests pass and than a
// deletion takes on a loaded machine (a delete waits until the pod is
// gone: over 30 s for a pod in crash-loop back-off has been seen); a
// command's own --timeout is what a test checks.
func (n *node) ctl(args ...string) (code int, stdout, stderr string) {
	n.t.Helper()
	var out, errb bytes.Buffer
	env := ctl.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv:            func(string) string { return "" },
		ConvertKubernetes: kubeconv.ConvertManifest,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code = ctl.Run(ctx, append([]string{"--server=" + target(n.planner.grpc), "--executor=" + target(n.executor.grpc)}, args...), env)
	return code, out.String(), errb.String()
}

func rpcCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// apply stores a pod through the planner and returns it as stored.
func (n *node) apply(pod *syncpodv1.Pod) *syncpodv1.Pod {
	n.t.Helper()
	resp, err := n.pods.ApplyPod(rpcCtx(n.t), &plannerv1.ApplyPodRequest{Pod: pod})
	if err != nil {
		n.t.Fatalf("ApplyPod %s: %v", pod.GetName(), err)
	}
	return resp.GetPod()
}

// get returns the pod's record, or nil when the planner does not know it.
func (n *node) get(name string) (*plannerv1.PodRecord, error) {
	resp, err := n.pods.GetPod(rpcCtx(n.t), &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Namespace: "default", Name: name}})
	return resp.GetRecord(), err
}

// eventually polls cond every 150 ms until it holds or timeout passes; cond
// returns a description of what it saw, reported on failure.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last seen: %s", what, timeout, saw)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// poll is eventually without the failure: it reports whether cond held
// within timeout, and what cond saw last.
func poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, saw := cond()
		if ok || time.Now().After(deadline) {
			return ok, saw
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// waitRecord polls GetPod until cond holds on the record.
func (n *node) waitRecord(name string, timeout time.Duration, what string, cond func(*plannerv1.PodRecord) bool) *plannerv1.PodRecord {
	n.t.Helper()
	var rec *plannerv1.PodRecord
	eventually(n.t, timeout, name+": "+what, func() (bool, string) {
		r, err := n.get(name)
		if err != nil {
			return false, err.Error()
		}
		rec = r
		return cond(r), summary(r)
	})
	return rec
}

// waitRunning waits until the pod is Running with every container and
// sidecar ready.
func (n *node) waitRunning(name string, timeout time.Duration) *plannerv1.PodRecord {
	n.t.Helper()
	return n.waitRecord(name, timeout, "Running with all containers ready", allReady)
}

func allReady(r *plannerv1.PodRecord) bool {
	st := r.GetStatus()
	if st.GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING || len(st.GetContainerStatuses()) != len(r.GetPod().GetSpec().GetContainers()) {
		return false
	}
	for _, cs := range st.GetContainerStatuses() {
		if !cs.GetReady() || cs.GetState().GetRunning() == nil {
			return false
		}
	}
	for i, c := range r.GetPod().GetSpec().GetInitContainers() {
		if c.GetRestartPolicy() != syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_ALWAYS {
			continue
		}
		if i >= len(st.GetInitContainerStatuses()) || !st.GetInitContainerStatuses()[i].GetReady() {
			return false
		}
	}
	return true
}

// cstatus returns the named container's status (regular or init).
func cstatus(r *plannerv1.PodRecord, name string) *syncpodv1.ContainerStatus {
	for _, cs := range append(append([]*syncpodv1.ContainerStatus(nil), r.GetStatus().GetInitContainerStatuses()...), r.GetStatus().GetContainerStatuses()...) {
		if cs.GetName() == name {
			return cs
		}
	}
	return nil
}

// findEvent returns the first event with that reason (and container, if
// given).
func findEvent(r *plannerv1.PodRecord, reason, container string) *syncpodv1.Event {
	for _, e := range r.GetEvents() {
		if e.GetReason() == reason && (container == "" || e.GetInvolvedContainer() == container) {
			return e
		}
	}
	return nil
}

// summary is a one-line view of a record for failure messages.
func summary(r *plannerv1.PodRecord) string {
	if r == nil {
		return "<no record>"
	}
	var b strings.Builder
	st := r.GetStatus()
	fmt.Fprintf(&b, "phase=%s reason=%q", st.GetPhase(), st.GetReason())
	all := append(append([]*syncpodv1.ContainerStatus(nil), st.GetInitContainerStatuses()...), st.GetContainerStatuses()...)
	for _, cs := range all {
		fmt.Fprintf(&b, " [%s ready=%v restarts=%d id=%.12s state=%s]", cs.GetName(), cs.GetReady(), cs.GetRestartCount(), cs.GetContainerId(), stateString(cs.GetState()))
	}
	var evs []string
	for _, e := range r.GetEvents() {
		evs = append(evs, fmt.Sprintf("%s/%s(x%d)", e.GetReason(), e.GetInvolvedContainer(), e.GetCount()))
	}
	fmt.Fprintf(&b, " events=%v", evs)
	return b.String()
}

func stateString(s *syncpodv1.ContainerStateDetail) string {
	switch {
	case s.GetRunning() != nil:
		return "running"
	case s.GetWaiting() != nil:
		return "waiting:" + s.GetWaiting().GetReason()
	case s.GetTerminated() != nil:
		return fmt.Sprintf("terminated:%s(%d)", s.GetTerminated().GetReason(), s.GetTerminated().GetExitCode())
	}
	return "none"
}

// runtimeOf lists what crisim holds for a pod uid: its sandboxes (by
// state) and containers.
func (n *node) runtimeOf(uid string) (sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) {
	n.t.Helper()
	ctx := rpcCtx(n.t)
	sbs, err := n.cri.ListPodSandbox(ctx, nil)
	if err != nil {
		n.t.Fatalf("CRI ListPodSandbox: %v", err)
	}
	ids := map[string]bool{}
	for _, s := range sbs {
		if s.GetMetadata().GetUid() == uid {
			sandboxes = append(sandboxes, s)
			ids[s.GetId()] = true
		}
	}
	cs, err := n.cri.ListContainers(ctx, nil)
	if err != nil {
		n.t.Fatalf("CRI ListContainers: %v", err)
	}
	for _, c := range cs {
		if ids[c.GetPodSandboxId()] {
			containers = append(containers, c)
		}
	}
	return sandboxes, containers
}

// readySandboxes counts the READY sandboxes of a pod in crisim.
func (n *node) readySandboxes(uid string) int {
	sbs, _ := n.runtimeOf(uid)
	ready := 0
	for _, s := range sbs {
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	return ready
}

// podNames lists the pods the planner holds.
func (n *node) podNames() []string {
	n.t.Helper()
	resp, err := n.pods.ListPods(rpcCtx(n.t), &plannerv1.ListPodsRequest{})
	if err != nil {
		n.t.Fatalf("ListPods: %v", err)
	}
	var names []string
	for _, r := range resp.GetRecords() {
		names = append(names, r.GetPod().GetNamespace()+"/"+r.GetPod().GetName())
	}
	sort.Strings(names)
	return names
}

// Pod builders. crisim ignores images; the name only has to be pullable.

const image = "busybox:1.36"

func container(name string, command ...string) *syncpodv1.Container {
	return &syncpodv1.Container{Name: name, Image: image, Command: command, ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT}
}

func sleeper(name string) *syncpodv1.Container { return container(name, "sleep", "3600") }

func pod(name string, containers ...*syncpodv1.Container) *syncpodv1.Pod {
	grace := int64(2)
	return &syncpodv1.Pod{
		Name: name, Namespace: "default",
		Labels: map[string]string{"e2e": "true"},
		Spec:   &syncpodv1.PodSpec{Containers: containers, TerminationGracePeriodSeconds: &grace},
	}
}

// containerdNodes lets one test at a time run a node on containerd.
var containerdNodes sync.Mutex

// nodeOnContainerd makes the test parallel with the others, waits for its
// turn to run a syncpod node on containerd, and returns that containerd's
// endpoint (containerdtest.NodeEndpoint: one no other package's tests use
// in make test). One node at a time: a node kills the pods it does not
// know, so two would take each other's for orphans. The turn ends after
// the test's own cleanups (registered later, run first) stopped its node.
func nodeOnContainerd(t *testing.T) string {
	t.Helper()
	t.Parallel()
	containerdNodes.Lock()
	t.Cleanup(containerdNodes.Unlock)
	return containerdtest.NodeEndpoint(t) // skips loudly, or fails in CI/as root
}
