package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	"github.com/syncpod/syncpod/internal/proctest"
)

// execEnv makes the test binary act as syncpod-crisim, so the tests can
// run the real main in its own process and send it real signals.
const execEnv = "CRISIM_MAIN_TEST_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// The binary starts, prints its socket, answers Version over it, runs a
// container, and on SIGTERM with --kill-on-exit exits 0 having killed the
// container's whole process group (including a child that ignores
// SIGTERM).
func TestBinaryServesAndStopsCleanly(t *testing.T) {
	dir, err := os.MkdirTemp("", "crisim-main")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "crisim.sock")
	p := runCrisim(t, "unix://"+sock, "--listen", "unix://"+sock, "--metrics-listen", "127.0.0.1:0", "--kill-on-exit", "--cgroup-driver", "cgroupfs")

	rs, is := crisimtest.Clients(t, "unix://"+sock)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := rs.Version(ctx, "v1")
	if err != nil || v.GetRuntimeName() != "syncpod-crisim" {
		t.Fatalf("Version = %v, %v; want runtime_name syncpod-crisim", v, err)
	}
	if rc, err := rs.RuntimeConfig(ctx); err != nil || rc.GetLinux().GetCgroupDriver() != runtimeapi.CgroupDriver_CGROUPFS {
		t.Fatalf("RuntimeConfig = %v, %v; want the cgroupfs driver of --cgroup-driver", rc, err)
	}

	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "n", Uid: "u"}}
	sb, err := rs.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	pids := filepath.Join(dir, "pids")
	script := fmt.Sprintf(`trap "" TERM; sleep 3600 & echo $$ $! > %s.tmp; mv %s.tmp %s; wait`, pids, pids, pids)
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image: &runtimeapi.ImageSpec{Image: "img"}, Command: []string{"sh", "-c", script}}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	// An open event stream must not hold up the graceful stop.
	go func() { _ = rs.GetContainerEvents(ctx, make(chan *runtimeapi.ContainerEventResponse, 100), nil) }()

	tree := proctest.ReadPIDs(t, pids, 30*time.Second) // the shell and its sleep

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t); err != nil {
		t.Fatalf("syncpod-crisim exited with %v after SIGTERM, want 0", err)
	}
	proctest.WaitGone(t, 30*time.Second, "after syncpod-crisim exited", tree...)
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s left behind: %v", sock, err)
	}
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"unknown mode", []string{"--mode", "vm"}},
		{"tcp listen", []string{"--listen", "127.0.0.1:0", "--insecure-tcp"}},
		{"bad unpullable regexp", []string{"--unpullable", "("}},
		{"unknown cgroup driver", []string{"--cgroup-driver", "cgroupv3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			if code := run(tc.args, func(string) string { return "" }, &strings.Builder{}, &stderr); code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
		})
	}
}
