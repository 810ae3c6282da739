package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syncpod/syncpod/internal/proctest"
)

// deploy/run-local.sh brings up crisim (the real main, through this test
// binary), hands the services its socket and their data dirs, and on
// SIGTERM stops everything it started. The three services are stand-ins
// that record their environment and sleep.
func TestRunLocalScript(t *testing.T) {
	script, err := filepath.Abs("../../../deploy/run-local.sh")
	if err != nil {
		t.Fatal(err)
	}
	bin, out := t.TempDir(), t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("syncpod-crisim", fmt.Sprintf("%s=1 exec %q --metrics-listen 127.0.0.1:0 \"$@\"\n", execEnv, os.Args[0]))
	for _, svc := range []string{"planner", "executor", "pleg"} {
		write("syncpod-"+svc, fmt.Sprintf("sleep 3600 &\necho \"$SYNCPOD_CRI_ENDPOINT $SYNCPOD_DATA_DIR $!\" > %s/%s.tmp\nmv %s/%s.tmp %s/%s\nwait\n",
			out, svc, out, svc, out, svc))
	}
	cmd := exec.Command("bash", script, bin)
	cmd.Env = append(os.Environ(), "SYNCPOD_RUN_DIR="+filepath.Join(out, "run"))
	logf, err := os.Create(filepath.Join(out, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	logs := func() string { b, _ := os.ReadFile(logf.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var sleepers []int
	for _, svc := range []string{"planner", "executor", "pleg"} {
		var b []byte
		deadline := time.Now().Add(30 * time.Second)
		for b, err = os.ReadFile(filepath.Join(out, svc)); err != nil; b, err = os.ReadFile(filepath.Join(out, svc)) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never started", svc)
			}
			time.Sleep(20 * time.Millisecond)
		}
		f := strings.Fields(string(b))
		if len(f) != 3 || !strings.HasPrefix(f[0], "unix://") || !strings.HasSuffix(f[1], "/data/"+svc) {
			t.Fatalf("%s got environment %q, want a unix:// CRI endpoint and its own data dir", svc, b)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// The real main's healthcheck: crisim answers on the socket the
		// service was given.
		hc := exec.CommandContext(ctx, os.Args[0], "healthcheck", "--listen", f[0])
		hc.Env = append(os.Environ(), execEnv+"=1")
		if out, err := hc.CombinedOutput(); err != nil {
			t.Errorf("crisim at %s (given to %s) is not SERVING: %v %s", f[0], svc, err, out)
		}
		cancel()
		pid, _ := strconv.Atoi(f[2])
		sleepers = append(sleepers, pid)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("run-local.sh did not exit within 30s of SIGTERM; output:\n%s", logs())
	}
	if !strings.Contains(logs(), "[crisim]") || !strings.Contains(logs(), "run-local: stopped") {
		t.Errorf("output lacks prefixed crisim logs or the stop line:\n%s", logs())
	}
	proctest.WaitGone(t, 10*time.Second, "after run-local.sh exited", sleepers...)
}
