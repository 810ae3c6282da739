package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crilabels"
	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/cri/observe"
	"github.com/syncpod/syncpod/internal/proctest"
)

// crisimProc is one run of the real binary.
type crisimProc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once it exited; err is its status
	err    error
}

// startCrisim runs the binary (this test binary acting as main) on sock
// with state in stateDir, and waits until it serves.
func startCrisim(t *testing.T, sock, stateDir string, extra ...string) *crisimProc {
	t.Helper()
	return runCrisim(t, stateDir, append([]string{"--listen", "unix://" + sock, "--metrics-listen", "127.0.0.1:0", "--data-dir", stateDir}, extra...)...)
}

// runCrisim runs the binary (this test binary acting as main) with args
// and waits for the first line it prints, which must hold firstLine; it
// is killed at the end of the test if it still runs.
func runCrisim(t *testing.T, firstLine string, args ...string) *crisimProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), execEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &crisimProc{cmd: cmd, exited: make(chan struct{})}
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	if err != nil || !strings.Contains(line, firstLine) {
		t.Fatalf("crisim's first line %q (%v) does not hold %s", line, err, firstLine)
	}
	return p
}

func (p *crisimProc) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(30 * time.Second):
		t.Fatal("syncpod-crisim did not exit within 30s")
		return nil
	}
}

// marked lists the PIDs of live processes whose environment holds marker.
func marked(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || proctest.Gone(pid) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SIGKILL crisim under a running container, start it again on the same
// state dir: the container is still listed RUNNING with the same id, its
// one process is re-adopted (none started twice), a container killed while
// crisim was down is EXITED, restart counts are kept, and a later
// SIGTERM leaves the container running for the next crisim while
// --kill-on-exit takes it down.
func TestSIGKILLedCrisimReadoptsItsContainers(t *testing.T) {
	dir, err := os.MkdirTemp("", "crisim-restart")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock, stateDir := filepath.Join(dir, "c.sock"), filepath.Join(dir, "state")
	var rb [8]byte
	_, _ = rand.Read(rb[:])
	marker := "CRISIM_RESTART_TEST=" + hex.EncodeToString(rb[:])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	first := startCrisim(t, sock, stateDir)
	rs, is := crisimtest.Clients(t, "unix://"+sock)
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "n", Uid: "u"}, LogDirectory: filepath.Join(dir, "logs")}
	sb, err := rs.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	start := func(name string, attempt uint32) (id string, pid int) {
		t.Helper()
		pidFile := filepath.Join(dir, name+".pid")
		id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata:    &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
			Image:       &runtimeapi.ImageSpec{Image: "img"},
			Command:     []string{"sh", "-c", fmt.Sprintf(`echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 3600`, pidFile, pidFile, pidFile)},
			Envs:        []*runtimeapi.KeyValue{{Key: strings.Split(marker, "=")[0], Value: []byte(strings.Split(marker, "=")[1])}},
			Labels:      map[string]string{crilabels.ContainerName: name},
			Annotations: map[string]string{crilabels.RestartCount: strconv.Itoa(int(attempt))},
			LogPath:     name + ".log",
		}, sbCfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		return id, readPID(t, pidFile)
	}
	sleeper, sleeperPID := start("sleeper", 2)
	victim, victimPID := start("victim", 0)

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.wait(t)
	if proctest.Gone(sleeperPID) || proctest.Gone(victimPID) {
		t.Fatal("container processes died with a SIGKILLed crisim; they must outlive it")
	}
	// One container dies while no crisim runs.
	_ = syscall.Kill(victimPID, syscall.SIGKILL)

	second := startCrisim(t, sock, stateDir)
	rs, _ = crisimtest.Clients(t, "unix://"+sock)
	list, err := rs.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("after the restart crisim lists %d containers, want the 2 it had", len(list))
	}
	st, err := rs.ContainerStatus(ctx, sleeper, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("re-adopted container %.12s is %s, want RUNNING", sleeper, st.GetStatus().GetState())
	}
	if got := marked(marker); len(got) != 1 || got[0] != sleeperPID {
		t.Fatalf("container processes after the restart: %v, want only the original %d", got, sleeperPID)
	}
	t.Run("R-11.8 restart count survives the runtime restart", func(t *testing.T) {
		o := observe.Container(st.GetStatus(), sb)
		if o.GetRestartCount() != 2 || st.GetStatus().GetMetadata().GetAttempt() != 2 {
			t.Errorf("restart count %d, attempt %d after the restart; want 2 and 2", o.GetRestartCount(), st.GetStatus().GetMetadata().GetAttempt())
		}
	})
	// Its shim recorded the exit; if the shim was still finishing when
	// crisim came back, crisim re-adopted it and sees the exit shortly.
	deadline := time.Now().Add(20 * time.Second)
	for {
		vs, err := rs.ContainerStatus(ctx, victim, false)
		if err != nil {
			t.Fatal(err)
		}
		v := vs.GetStatus()
		if v.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			if v.GetExitCode() != 137 {
				t.Errorf("container killed while crisim was down: exit %d, want 137", v.GetExitCode())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("container killed while crisim was down is still %s", v.GetState())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// SIGTERM without --kill-on-exit: the container keeps running.
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.wait(t); err != nil {
		t.Fatalf("crisim exited with %v after SIGTERM, want 0", err)
	}
	if proctest.Gone(sleeperPID) {
		t.Fatal("a clean crisim stop killed its container; it must leave it running for the next crisim")
	}

	third := startCrisim(t, sock, stateDir, "--kill-on-exit")
	rs, _ = crisimtest.Clients(t, "unix://"+sock)
	if st, err := rs.ContainerStatus(ctx, sleeper, false); err != nil || st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after a clean restart: %v %v, want RUNNING", st.GetStatus().GetState(), err)
	}
	t.Run("R-11.8 the next attempt counts on", func(t *testing.T) {
		// The same attempt again is refused (it would run twice); the next
		// one, as the executor numbers it, is accepted.
		cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "sleeper", Attempt: 2}, Image: &runtimeapi.ImageSpec{Image: "img"},
			Command: []string{"true"}}
		if _, err := rs.CreateContainer(ctx, sb, cfg, sbCfg); status.Code(err) != codes.AlreadyExists {
			t.Errorf("CreateContainer of attempt 2 again: %v, want AlreadyExists", err)
		}
		cfg.Metadata.Attempt = 3
		if _, err := rs.CreateContainer(ctx, sb, cfg, sbCfg); err != nil {
			t.Errorf("CreateContainer of attempt 3: %v", err)
		}
	})
	if err := third.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := third.wait(t); err != nil {
		t.Fatalf("crisim --kill-on-exit exited with %v after SIGTERM, want 0", err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for len(marked(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("container processes %v outlived crisim --kill-on-exit", marked(marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Process mode keeps state beside the socket by default; simulated mode,
// where no process can be orphaned, keeps it in memory unless --data-dir
// says otherwise.
func TestDefaultStateDir(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		wantState bool
	}{{"process", true}, {"simulated", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "crisim-state")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			sock := filepath.Join(dir, "x.sock")
			cmd := exec.Command(os.Args[0], "--listen", "unix://"+sock, "--metrics-listen", "127.0.0.1:0", "--mode", tc.mode, "--kill-on-exit")
			cmd.Env = append(os.Environ(), execEnv+"=1")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
			line, _ := bufio.NewReader(out).ReadString('\n')
			_, statErr := os.Stat(filepath.Join(dir, "x.state", "VERSION"))
			if tc.wantState && (!strings.Contains(line, filepath.Join(dir, "x.state")) || statErr != nil) {
				t.Errorf("process mode: first line %q, state %v; want state in %s", line, statErr, filepath.Join(dir, "x.state"))
			}
			if !tc.wantState && (!strings.Contains(line, "state in memory") || statErr == nil) {
				t.Errorf("simulated mode: first line %q, state dir made: %v; want state in memory", line, statErr == nil)
			}
		})
	}
}
