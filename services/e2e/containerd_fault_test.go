package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/syncpod/syncpod/cri/critest/containerdtest"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// envImageTars names the OCI image tarballs (pause, busybox) a private
// containerd imports; mk/soak.mk exports it from mk/containerd.mk's.
const envImageTars = "SYNCPOD_TEST_CONTAINERD_IMAGE_TARS"

// privateContainerd is a containerd of the test's own, started by
// mk/containerd.sh under the worktree's .tmp/, so killing it disturbs no
// other test (make test's shared containerd serves other packages at the
// same time).
type privateContainerd struct {
	dir, endpoint string
}

// startPrivateContainerd starts it, or skips loudly (fails when
// containerd is required: CI, root) when it cannot. It is stopped, its
// shims and containers killed and its directory removed at cleanup.
func startPrivateContainerd(t *testing.T) *privateContainerd {
	t.Helper()
	unavailable := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if containerdtest.Required() || os.Getuid() == 0 && os.Getenv("CI") != "" {
			t.Fatalf("containerd required but unavailable: %s", msg)
		}
		fmt.Fprintf(os.Stderr, "!!! SKIP %s: %s\n", t.Name(), msg)
		t.Skipf("SKIP: %s", msg)
	}
	if os.Getuid() != 0 {
		unavailable("a private containerd needs root")
	}
	tars := strings.Fields(os.Getenv(envImageTars))
	if len(tars) == 0 {
		unavailable("%s is not set (make test and make soak set it; `make containerd-images` builds the tarballs)", envImageTars)
	}
	for _, tar := range tars {
		if _, err := os.Stat(tar); err != nil {
			unavailable("image tarball: %v", err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(filepath.Join(root, ".tmp"), "cfault-")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "mk", "containerd.sh")
	t.Cleanup(func() {
		out, err := exec.Command("bash", script, "down", dir).CombinedOutput()
		if err != nil {
			t.Errorf("stopping the private containerd: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
		_ = os.Remove(dir + ".lock") // mk/containerd.sh's flock file beside it
	})
	args := append([]string{script, "up", dir, containerdtest.PauseImage(), containerdtest.BusyboxImage()}, tars...)
	if out, err := exec.Command("bash", args...).CombinedOutput(); err != nil {
		unavailable("mk/containerd.sh up: %v\n%s", err, out)
	}
	return &privateContainerd{dir: dir, endpoint: "unix://" + filepath.Join(dir, "containerd.sock")}
}

// pid is containerd's pid, as its pid file says.
func (c *privateContainerd) pid(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "containerd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// kill ends containerd, by its pid and only its pid, with SIGKILL; its
// shims (and so its containers) live on, as they do in production.
func (c *privateContainerd) kill(t *testing.T) {
	t.Helper()
	pid := c.pid(t)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL containerd %d: %v", pid, err)
	}
	for range 100 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return
		}
		if h, ok := readHostProc(pid); !ok || h.pid == 0 {
			return // a zombie until its parent reaps it
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("containerd %d still alive after SIGKILL", pid)
}

// restart starts containerd again on the same config and state, in a
// session of its own, and records its pid where mk/containerd.sh down
// will find it.
func (c *privateContainerd) restart(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(c.dir, "containerd.log"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// The containerd mk/containerd.sh started: Debian's on PATH, or the
	// one in SYNCPOD_CONTAINERD_BIN (2.x), which finds its own shim first
	// on its PATH.
	bin, env := "containerd", os.Environ()
	if dir := os.Getenv("SYNCPOD_CONTAINERD_BIN"); dir != "" {
		bin, env = filepath.Join(dir, "containerd"), append(env, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	cmd := exec.Command(bin, "--config", filepath.Join(c.dir, "config.toml"))
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reaped when it exits (mk/containerd.sh down)
	if err := os.WriteFile(filepath.Join(c.dir, "containerd.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A runtime fault: containerd killed with SIGKILL (by its pid) under a
// churn of host-network pods and started again on the same state. The
// PLEG's health turns NOT_SERVING while it is down and SERVING once it is
// back; the steady pods keep their containers (containerd's shims keep them
// running), nothing runs twice, and the node ends as the acknowledgement
// log says.
func TestRuntimeFaultContainerdSIGKILLRestart(t *testing.T) {
	t.Parallel() // its containerd is its own
	began := time.Now()
	cd := startPrivateContainerd(t)
	t.Logf("%5.1fs private containerd up", time.Since(began).Seconds())
	busybox := containerdtest.BusyboxImage()
	build := func(name string, ctrs, rev int) *syncpodv1.Pod {
		p := revPod(name, ctrs, rev)
		p.Spec.HostNetwork = true
		for _, c := range p.Spec.Containers {
			c.Image, c.ImagePullPolicy = busybox, syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER
			c.Command = []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}
		}
		return p
	}
	n := startNode(t, nodeOptions{criEndpoint: cd.endpoint, sockets: true, plegArgs: []string{"--relist-threshold=2s"}})
	t.Cleanup(func() { // runs before the node's shutdown
		n.deleteAll(t, 4, 2*converge)
		t.Logf("%5.1fs every pod removed from containerd", time.Since(began).Seconds())
	})
	ctrs := 1
	steady := map[string]int{"steady-0": 1}
	n.apply(build("steady-0", ctrs, 1))
	rec := n.waitRunning("steady-0", 2*converge)
	steadyID := rec.GetStatus().GetContainerStatuses()[0].GetContainerId()

	rounds := size(1, 3)
	c := newChurn(t, n, "churn", size(3, 6), ctrs, size(2, 3))
	c.build, c.timeout = build, 20*time.Second
	n.checkPLEGMode()
	t.Logf("%5.1fs node up, steady pod running", time.Since(began).Seconds())
	c.start()
	for r := range rounds {
		time.Sleep(3 * time.Second)
		cd.kill(t)
		eventually(t, converge, "PLEG health NOT_SERVING while containerd is down", func() (bool, string) {
			st, err := n.plegHealth()
			return err == nil && st == healthpb.HealthCheckResponse_NOT_SERVING, fmt.Sprintf("%v %v", st, err)
		})
		cd.restart(t)
		eventually(t, 2*converge, "PLEG health SERVING after containerd is back", func() (bool, string) {
			st, err := n.plegHealth()
			return err == nil && st == healthpb.HealthCheckResponse_SERVING, fmt.Sprintf("%v %v", st, err)
		})
		// On a runtime with CRI events the PLEG follows them again.
		n.waitPLEGMode(2 * converge)
		t.Logf("%5.1fs round %d: containerd SIGKILLed, PLEG NOT_SERVING, containerd restarted, PLEG SERVING (and in its mode again); %s", time.Since(began).Seconds(), r+1, c.counts())
	}
	time.Sleep(2 * time.Second)
	c.stop()
	c.settle()
	lost, _ := c.checkAcks("after the churn stopped")
	want := c.expected()
	var last convergence
	eventually(t, 3*converge, "the node agrees with the acknowledgement log", func() (bool, string) {
		last = n.look(want, ctrs, false, steady)
		return last.ok(), last.String()
	})
	t.Logf("%5.1fs converged", time.Since(began).Seconds())
	rec, err := n.get("steady-0")
	if err != nil {
		t.Fatal(err)
	}
	spurious := 0
	if cs := rec.GetStatus().GetContainerStatuses()[0]; cs.GetContainerId() != steadyID || cs.GetRestartCount() != 0 {
		spurious++
		t.Errorf("steady-0: container %s -> %s, restarts %d, across containerd restarts; want it untouched", steadyID, cs.GetContainerId(), cs.GetRestartCount())
	}
	mode := containerdtest.ExpectedPLEGMode() // which run: 1.6 (relist) or 2.x (evented)
	if mode == "" {
		mode = "unknown"
	}
	summaryf(t, "pleg=%s faults=%d health_flips=%d %s lost=%d spurious_kills=%d duplicates=%d", mode, rounds, rounds, c.counts(), lost, spurious, last.duplicates)
}
