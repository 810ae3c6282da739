package crisim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// shimEnv makes this test binary act as a container shim, as
// syncpod-crisim does with its crisim-shim argument.
const shimEnv = "CRISIM_TEST_AS_SHIM"

func TestMain(m *testing.M) {
	if os.Getenv(shimEnv) == "1" {
		os.Exit(RunShim(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// testShim runs this test binary as the shim.
func testShim() *Shim { return &Shim{Path: os.Args[0], Env: []string{shimEnv + "=1"}} }

// persistent builds a runtime on dir, closed at the end of the test
// (killing what runs) unless the test shuts it down first.
func persistent(t *testing.T, mode Mode, dir string) *Runtime {
	t.Helper()
	r, err := New(Options{Mode: mode, StateDir: dir, Shim: testShim(), KillOnShutdown: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Shutdown)
	return r
}

// leave shuts r down leaving its containers running, as SIGTERM does
// without --kill-on-exit.
func leave(r *Runtime) {
	r.opts.KillOnShutdown = false
	r.Shutdown()
}

func statusOf(t *testing.T, r *Runtime, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := r.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatalf("ContainerStatus(%.8s): %v", id, err)
	}
	return resp.GetStatus()
}

func procOf(t *testing.T, r *Runtime, id string) procRecord {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.containers[id].run.(interface{ proc() *procRecord })
	if !ok {
		t.Fatalf("container %.8s has no process", id)
	}
	return *p.proc()
}

func waitGone(t *testing.T, pid int, start uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for sameProcess(bootID(), bootID(), pid, start) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startIn(t *testing.T, r *Runtime, sb, name string, cmd []string) string {
	t.Helper()
	id, err := containerIn(t, r, sb, name, cmd, map[string]string{"io.kubernetes.container.restartCount": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	return id
}

// A crisim restarted on the same state dir re-adopts a running container:
// same id, still RUNNING, still logging through its shim, stoppable, and
// its exit code (143 for SIGTERM) is the real one.
func TestRestartReadoptsRunningContainer(t *testing.T) {
	dir := t.TempDir()
	r1 := persistent(t, ModeProcess, dir)
	sb := sandboxFor(t, r1, "p")
	id := startIn(t, r1, sb, "c", []string{"sh", "-c", `while :; do echo tick; sleep 0.05; done`})
	p := procOf(t, r1, id)
	logPath := statusOf(t, r1, id).GetLogPath()
	leave(r1)
	if !sameProcess(bootID(), p.BootID, p.PID, p.Start) {
		t.Fatal("the container died when crisim shut down")
	}

	r2 := persistent(t, ModeProcess, dir)
	st := statusOf(t, r2, id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetAnnotations()["io.kubernetes.container.restartCount"] != "4" {
		t.Fatalf("after restart: %s, annotations %v; want RUNNING with the restart count kept", st.GetState(), st.GetAnnotations())
	}
	if got := procOf(t, r2, id); got != p {
		t.Fatalf("re-adopted process %+v, want %+v", got, p)
	}
	// The sandbox and the container names stay reserved: no duplicate.
	_, err := r2.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "uid-p"}}})
	if !errors.Is(err, ErrReserved) {
		t.Errorf("RunPodSandbox of the same pod after restart: %v, want name reserved", err)
	}
	if _, err := containerIn(t, r2, sb, "c", []string{"true"}, nil); !errors.Is(err, ErrReserved) {
		t.Errorf("CreateContainer of the same name and attempt after restart: %v, want name reserved", err)
	}
	// Still logging through the shim.
	size := func() int64 { fi, _ := os.Stat(logPath); return fi.Size() }
	before := size()
	deadline := time.Now().Add(20 * time.Second)
	for size() == before {
		if time.Now().After(deadline) {
			t.Fatal("the re-adopted container's log stopped growing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := r2.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}); err != nil {
		t.Fatal(err)
	}
	st = statusOf(t, r2, id)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 143 {
		t.Errorf("after stop: %s exit %d, want EXITED 143", st.GetState(), st.GetExitCode())
	}
	waitGone(t, p.PID, p.Start)
	waitGone(t, p.ShimPID, p.ShimStart)
}

// A container that ends while no crisim runs is EXITED on the next start:
// with the code its shim recorded, or 255 "Unknown" when the shim died
// too (containerd's words for an exit it did not see).
func TestRestartContainerDiedWhileDown(t *testing.T) {
	dir := t.TempDir()
	r1 := persistent(t, ModeProcess, dir)
	sb := sandboxFor(t, r1, "p")
	seen := startIn(t, r1, sb, "seen", []string{"sleep", "3600"})
	unseen := startIn(t, r1, sb, "unseen", []string{"sleep", "3600"})
	ps, pu := procOf(t, r1, seen), procOf(t, r1, unseen)
	leave(r1)

	_ = syscall.Kill(-ps.PID, syscall.SIGKILL)
	waitGone(t, ps.ShimPID, ps.ShimStart) // it wrote the exit first
	_ = syscall.Kill(pu.ShimPID, syscall.SIGKILL)
	waitGone(t, pu.ShimPID, pu.ShimStart)

	r2 := persistent(t, ModeProcess, dir)
	if st := statusOf(t, r2, seen); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 137 || st.GetReason() != "Error" {
		t.Errorf("container killed while crisim was down: %s exit %d reason %q, want EXITED 137 Error", st.GetState(), st.GetExitCode(), st.GetReason())
	}
	st := statusOf(t, r2, unseen)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 255 || st.GetReason() != "Unknown" {
		t.Errorf("container whose shim died: %s exit %d reason %q, want EXITED 255 Unknown", st.GetState(), st.GetExitCode(), st.GetReason())
	}
	// Its orphaned process was taken down, not left running twice.
	waitGone(t, pu.PID, pu.Start)
	if st.GetAnnotations()["io.kubernetes.container.restartCount"] != "4" {
		t.Errorf("restart count annotation lost: %v", st.GetAnnotations())
	}
}

// With KillOnShutdown the containers die with crisim and the next crisim
// finds them EXITED with the real code.
func TestKillOnShutdownRecordsExits(t *testing.T) {
	dir := t.TempDir()
	r1 := persistent(t, ModeProcess, dir)
	sb := sandboxFor(t, r1, "p")
	id := startIn(t, r1, sb, "c", []string{"sleep", "3600"})
	p := procOf(t, r1, id)
	r1.Shutdown()
	if sameProcess(bootID(), p.BootID, p.PID, p.Start) {
		t.Fatal("the container survived a killing shutdown")
	}
	r2 := persistent(t, ModeProcess, dir)
	if st := statusOf(t, r2, id); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 137 {
		t.Errorf("after a killing shutdown: %s exit %d, want EXITED 137", st.GetState(), st.GetExitCode())
	}
}

// A simulated container keeps running across a restart, and its
// exit-after annotation still ends it.
func TestRestartSimulated(t *testing.T) {
	dir := t.TempDir()
	r1 := persistent(t, ModeSimulated, dir)
	sb := sandboxFor(t, r1, "p")
	forever, err := containerIn(t, r1, sb, "forever", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	soon, err := containerIn(t, r1, sb, "soon", nil, map[string]string{AnnotationExitAfter: "300ms", AnnotationExitCode: "3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{forever, soon} {
		if _, err := r1.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	leave(r1)
	r2 := persistent(t, ModeSimulated, dir)
	if st := statusOf(t, r2, forever); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("simulated container after restart: %s, want RUNNING", st.GetState())
	}
	if st := waitExited(t, r2, soon); st.GetExitCode() != 3 {
		t.Errorf("exit-after container exited %d, want 3", st.GetExitCode())
	}
	imgs, err := r2.ListImages(context.Background(), &runtimeapi.ListImagesRequest{})
	if err != nil || len(imgs.GetImages()) != 1 {
		t.Errorf("images after restart: %v, %v; want the pulled one", imgs.GetImages(), err)
	}
}

// A state file that cannot be read back stops crisim from starting, with
// the file named; it never starts empty while processes may be orphaned.
func TestCorruptStateRefusesToStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
	}{
		{"garbage", "{not json"},
		{"truncated", `{"id":"`},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r1 := persistent(t, ModeSimulated, dir)
			sb := sandboxFor(t, r1, "p")
			id, err := containerIn(t, r1, sb, "c", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			r1.Shutdown()
			file := filepath.Join(dir, "containers", id+".json")
			if err := os.WriteFile(file, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = New(Options{Mode: ModeSimulated, StateDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if !errors.Is(err, ErrStateCorrupt) || !strings.Contains(err.Error(), file) {
				t.Fatalf("New on a corrupt state: %v; want ErrStateCorrupt naming %s", err, file)
			}
			// The lock was released: a fixed state opens.
			if err := os.Rename(file, file+".bad"); err != nil {
				t.Fatal(err)
			}
			r2 := persistent(t, ModeSimulated, dir)
			if _, err := r2.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id}); !errors.Is(err, ErrNotFound) {
				t.Errorf("container whose file was moved aside: %v, want NotFound", err)
			}
		})
	}
}

// Two crisims never share a state dir.
func TestStateDirLocked(t *testing.T) {
	dir := t.TempDir()
	persistent(t, ModeSimulated, dir)
	_, err := New(Options{Mode: ModeSimulated, StateDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if !errors.Is(err, ErrStateLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second New on the same state dir: %v; want ErrStateLocked naming pid %d", err, os.Getpid())
	}
}

// startedButNotRecorded starts a container in a persistent crisim in a
// fresh state directory, leaves its processes running, and rewrites its
// record as CREATED: as a crisim that died before recording the start
// left it. It returns the directory, the container and its processes.
func startedButNotRecorded(t *testing.T) (string, string, procRecord) {
	t.Helper()
	dir := t.TempDir()
	r1 := persistent(t, ModeProcess, dir)
	sb := sandboxFor(t, r1, "p")
	id := startIn(t, r1, sb, "c", []string{"sleep", "3600"})
	p := procOf(t, r1, id)
	r1.mu.Lock()
	rec := r1.containers[id].record()
	r1.mu.Unlock()
	leave(r1)
	rec.State, rec.StartedAt, rec.Proc = int32(runtimeapi.ContainerState_CONTAINER_CREATED), 0, nil
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "containers", id+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, id, p
}

// readopted checks that r2 runs container id on its processes p again (a
// second start refused), then stops it.
func readopted(t *testing.T, r2 *Runtime, id string, p procRecord) {
	t.Helper()
	if got := procOf(t, r2, id); got.PID != p.PID || got.ShimPID != p.ShimPID {
		t.Fatalf("re-adopted %+v, want the processes %+v", got, p)
	}
	if _, err := r2.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: id}); !errors.Is(err, ErrFailedPrecondition) {
		t.Errorf("StartContainer again: %v, want FailedPrecondition (it runs)", err)
	}
	r2.Shutdown()
	waitGone(t, p.PID, p.Start)
}

// crisim can die after a shim started a container and before recording
// the start: the shim's started file makes the next crisim list it
// RUNNING (with its process re-adopted), so it is not started twice.
func TestRestartFindsAStartNotRecorded(t *testing.T) {
	// The record as it was before the start was recorded.
	dir, id, p := startedButNotRecorded(t)

	r2 := persistent(t, ModeProcess, dir)
	if st := statusOf(t, r2, id); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetStartedAt() == 0 {
		t.Fatalf("after restart: %s started_at %d; want RUNNING with its start time", st.GetState(), st.GetStartedAt())
	}
	readopted(t, r2, id, p)
}

// A crisim SIGKILLed after spawning a shim but before the shim wrote its
// started file: the shim still holds the container's start lock, so the
// next crisim waits for the started file instead of leaving the container
// CREATED for the planner to start a second time.
func TestRestartWaitsForAShimStillStarting(t *testing.T) {
	// As it was while the shim was starting: no start recorded by crisim,
	// no started file yet, the shim (alive) holding the start lock.
	dir, id, p := startedButNotRecorded(t)
	started := filepath.Join(dir, "exits", id+".started.json")
	if err := os.Rename(started, started+".later"); err != nil {
		t.Fatal(err)
	}

	waited := false
	r2, err := New(Options{Mode: ModeProcess, StateDir: dir, Shim: testShim(), KillOnShutdown: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		startInFlight: func(got string) {
			// The shim "gets to" write its started file only now.
			waited = got == id
			if err := os.Rename(started+".later", started); err != nil {
				t.Error(err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r2.Shutdown)
	if !waited {
		t.Fatal("the restart did not notice the shim still holding the start lock")
	}
	if st := statusOf(t, r2, id); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after restart: %s; want RUNNING (adopted from the in-flight shim)", st.GetState())
	}
	readopted(t, r2, id, p)
}

// A shim's start lock never reaches the container: the container cannot
// keep it (and so fake an in-flight start) after its shim is gone.
func TestStartLockIsNotInheritedByTheContainer(t *testing.T) {
	r := persistent(t, ModeProcess, t.TempDir())
	sb := sandboxFor(t, r, "p")
	id := startIn(t, r, sb, "c", []string{"sleep", "3600"})
	p := procOf(t, r, id)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p.PID, fd.Name())); strings.HasSuffix(target, ".start.lock") {
			t.Errorf("container process holds fd %s -> %s", fd.Name(), target)
		}
	}
	shimHolds := false
	fds, _ = os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.ShimPID))
	for _, fd := range fds {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p.ShimPID, fd.Name())); strings.HasSuffix(target, id+".start.lock") {
			shimHolds = true
		}
	}
	if !shimHolds {
		t.Error("the shim does not hold its container's start lock")
	}
}

// A container that ends before StartContainer has recorded it RUNNING (its
// shim starts without the runtime lock held) still gets its exit recorded,
// not lost to a container left RUNNING forever.
func TestShimExitBeforeStartIsRecorded(t *testing.T) {
	r := persistent(t, ModeProcess, t.TempDir())
	r.afterShimStart = func(s *shimRunner) {
		// Let the container end and its shim go before the start goes on;
		// give a watcher that would record the exit now the chance to.
		waitGone(t, s.rec.ShimPID, s.rec.ShimStart)
		select {
		case <-s.done:
		case <-time.After(time.Second):
		}
	}
	sb := sandboxFor(t, r, "p")
	id := startIn(t, r, sb, "quick", []string{"sh", "-c", "exit 3"})
	if st := waitExited(t, r, id); st.GetExitCode() != 3 {
		t.Errorf("exit code %d, want 3", st.GetExitCode())
	}
}
