package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/syncpod/syncpod/cri/crisim/crisimtest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Bad command lines exit 2 with one line naming what is wrong, before
// any service starts.
func TestBadCommandLinesExitTwo(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("# nothing\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "no service to run"},
		{"unknown service", []string{"kubelet", "--x"}, `"kubelet" is not crisim, executor, pleg, planner or node`},
		{"unknown option", []string{"--verbose", "planner"}, "unknown option --verbose"},
		{"option without value", []string{"--log-dir"}, "--log-dir: needs a value"},
		{"empty service", []string{"planner", "--", "--", "pleg"}, "service 2: empty"},
		{"trailing separator", []string{"planner", "--"}, "a -- with no service after it"},
		{"name leaving the log dir", []string{"planner:../x"}, `name "../x"`},
		{"name used twice", []string{"planner:a", "--", "pleg:a"}, `two services are named "a"`},
		{"default name used twice", []string{"planner:planner-1", "--", "planner", "--", "planner"}, `two services are named "planner-1"`},
		{"missing file", []string{"--file", filepath.Join(dir, "none")}, "--file: open"},
		{"empty file", []string{"--file", empty}, "no service in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runAll(context.Background(), nil, tc.args, &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 saying %q", code, errb.String(), tc.want)
			}
		})
	}
}

// A service's bad flag stops syncpod-all with that service's status,
// naming it.
func TestAServiceThatCannotStartStopsTheOthers(t *testing.T) {
	dir := shortDir(t)
	var out, errb bytes.Buffer
	code := runAll(context.Background(), nil, []string{
		"crisim:c", "--listen", "unix://" + filepath.Join(dir, "c.sock"), "--metrics-listen=", "--mode", "simulated",
		"--", "planner:p", "--bogus"}, &out, &errb)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", code, errb.String())
	}
	for _, want := range []string{"p: syncpod-planner: flag provided but not defined: -bogus", "syncpod-all: p ended with status 2"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, errb.String())
		}
	}
}

// shortDir is a directory for unix sockets, whose paths must stay short.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "spall")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// nodeArgs are the services of one node (simulated crisim, executor,
// PLEG, planner) under dir, named NODE/SERVICE.
func nodeArgs(dir, node string) []string {
	d := filepath.Join(dir, node)
	sock := func(s string) string { return "unix://" + filepath.Join(d, s+".sock") }
	return []string{
		"crisim:" + node + "/crisim", "--listen", sock("crisim"), "--metrics-listen=", "--mode", "simulated",
		"--", "executor:" + node + "/executor", "--listen", sock("executor"), "--metrics-listen=", "--cri-endpoint", sock("crisim"),
		"--data-dir", filepath.Join(d, "executor"), "--log-dir", filepath.Join(d, "logs"), "--cgroups-per-qos=false",
		"--", "pleg:" + node + "/pleg", "--listen", sock("pleg"), "--metrics-listen=", "--cri-endpoint", sock("crisim"),
		"--", "planner:" + node + "/planner", "--listen", sock("planner"), "--metrics-listen=", "--executor", sock("executor"),
		"--pleg", sock("pleg"), "--data-dir", filepath.Join(d, "planner"),
	}
}

// Two nodes in one process each keep their own state: a pod applied to
// one node's planner runs on that node's runtime, and the other node's
// planner, runtime and database know nothing of it. Then SIGTERM's path
// stops them all, exit 0. The planner calls its executor in-process (the
// executor's audit trail names the caller in-process), and the executor
// and the PLEG call their crisim in-process, or with --sockets-only all
// of them go through the sockets (the caller is the unix peer, the CRI
// runtime is connected to).
func TestTwoNodesInOneProcessKeepTheirOwnState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []string
		caller string
		cri    string
	}{
		{"in-process", nil, fmt.Sprintf(`identity="in-process:uid=%d,pid=%d" verb=write method=/syncpod.executor.v1.ExecutorService/ApplyActions`, os.Getuid(), os.Getpid()),
			`msg="calling the CRI runtime in-process"`},
		{"sockets-only", []string{"--sockets-only"}, fmt.Sprintf(`identity="unix:uid=%d,pid=%d" verb=write method=/syncpod.executor.v1.ExecutorService/ApplyActions`, os.Getuid(), os.Getpid()),
			`msg="connected to the CRI runtime"`},
	} {
		t.Run(tc.name, func(t *testing.T) { twoNodes(t, tc.opts, tc.caller, tc.cri) })
	}
}

func twoNodes(t *testing.T, opts []string, caller, cri string) {
	dir := shortDir(t)
	args := append(nodeArgs(dir, "a"), "--")
	args = append(args, nodeArgs(dir, "b")...)
	logs := filepath.Join(dir, "log")
	args = append(append([]string{"--log-dir", logs}, opts...), args...)

	term := make(chan struct{})
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runAll(context.Background(), term, args, &out, &errb) }()
	stopped := false
	var stopOnce sync.Once
	stop := func() int {
		stopOnce.Do(func() { close(term) })
		select {
		case code := <-done:
			stopped = true
			return code
		case <-time.After(60 * time.Second):
			t.Fatal("syncpod-all did not stop within 60s of SIGTERM")
			return -1
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})

	planner := func(node string) plannerv1.PlannerServiceClient {
		conn, err := grpc.NewClient("unix://"+filepath.Join(dir, node, "planner.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return plannerv1.NewPlannerServiceClient(conn)
	}
	pa, pb := planner("a"), planner("b")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	grace := int64(1)
	p := &syncpodv1.Pod{Name: "only-on-a", Namespace: "default", Spec: &syncpodv1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers: []*syncpodv1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep", "3600"},
			ImagePullPolicy: syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_IF_NOT_PRESENT}},
	}}
	for {
		_, err := pa.ApplyPod(ctx, &plannerv1.ApplyPodRequest{Pod: p}, grpc.WaitForReady(true))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("ApplyPod on node a: %v\nstderr: %s", err, errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		r, err := pa.GetPod(ctx, &plannerv1.GetPodRequest{Pod: &plannerv1.PodRef{Namespace: "default", Name: "only-on-a"}})
		if err == nil && r.GetRecord().GetStatus().GetPhase() == syncpodv1.PodPhase_POD_PHASE_RUNNING {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the pod on node a never ran: %v, %v", r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	lb, err := pb.ListPods(ctx, &plannerv1.ListPodsRequest{}, grpc.WaitForReady(true))
	if err != nil || len(lb.GetRecords()) != 0 {
		t.Errorf("node b's planner lists %v (%v); want no pod", lb.GetRecords(), err)
	}
	sandboxes := func(node string) int {
		rs, _ := crisimtest.Clients(t, "unix://"+filepath.Join(dir, node, "crisim.sock"))
		l, err := rs.ListPodSandbox(ctx, nil)
		if err != nil {
			t.Fatalf("node %s's crisim: %v", node, err)
		}
		return len(l)
	}
	if a, b := sandboxes("a"), sandboxes("b"); a != 1 || b != 0 {
		t.Errorf("sandboxes on a, b: %d, %d; want 1, 0", a, b)
	}
	for _, n := range []string{"a", "b"} {
		for _, f := range []string{"planner/planner.db", "executor/executor.db"} {
			if _, err := os.Stat(filepath.Join(dir, n, f)); err != nil {
				t.Errorf("node %s has no %s of its own: %v", n, f, err)
			}
		}
	}

	if code := stop(); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0; stderr %s", code, errb.String())
	}
	// Each service logged to its own file, and stopped.
	for _, n := range []string{"a", "b"} {
		for _, s := range []string{"crisim", "executor", "pleg", "planner"} {
			b, err := os.ReadFile(filepath.Join(logs, n, s+".log"))
			if err != nil || !strings.Contains(string(b), "stopped") {
				t.Errorf("%s/%s's log (%v) does not say it stopped:\n%s", n, s, err, b)
			}
		}
	}
	if errb.Len() != 0 {
		t.Errorf("with --log-dir, syncpod-all's own stderr holds %q", errb.String())
	}
	if b, _ := os.ReadFile(filepath.Join(logs, "a", "executor.log")); !strings.Contains(string(b), caller) {
		t.Errorf("node a's executor's audit trail lacks %q:\n%s", caller, b)
	}
	for _, s := range []string{"executor", "pleg"} {
		b, _ := os.ReadFile(filepath.Join(logs, "a", s+".log"))
		if !strings.Contains(string(b), cri) {
			t.Errorf("node a's %s's log lacks %q:\n%s", s, cri, b)
		}
		if other := `msg="connected to the CRI runtime"`; cri != other && strings.Contains(string(b), other) {
			t.Errorf("node a's %s connected to the runtime's socket:\n%s", s, b)
		}
	}
}
