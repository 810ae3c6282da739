package e2e

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syncpod/syncpod/services/server"
)

// repoRoot is the repository's top folder (the one with the Makefile).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Fatalf("no Makefile at the repository root %s: %v", root, err)
	}
	return root
}

// makeEnv is the test's environment for a nested make: without the outer
// make's MAKEFLAGS (jobserver descriptors this process does not hold).
func makeEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// quietPorts returns n distinct loopback ports that are free now and lie
// below the kernel's ephemeral range, for a process that binds them long
// after they were chosen (docker compose, make run after its build). A
// port from the ephemeral range may meanwhile be handed to another test's
// listener or to the local end of any connection; these are not, so only
// another explicit choice could take them, and the choice is random.
func quietPorts(t *testing.T, n int) []int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	const base = 10000
	if low <= base+n {
		return freePorts(t, n) // no room below the range
	}
	var ports []int
	seen := map[int]bool{}
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("no %d free ports in [%d, %d)", n, base, low)
		}
		p := base + rand.IntN(low-base)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	return ports
}

// freePorts returns n distinct free loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// seededBin is a bin directory of the test's own, holding copies of what
// the repository's bin/ has (make test's set-up has just built it): go
// build finds them up to date, so make run's first build in it links
// nothing again. Without them it links six binaries, which under make
// test's load took most of the time a start may take.
func seededBin(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(repoRoot(t), "bin")
	entries, _ := os.ReadDir(src) // none: make run builds them all
	for _, e := range entries {
		if !e.Type().IsRegular() || !(strings.HasPrefix(e.Name(), "syncpod") || e.Name() == "grpcurl") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// makeRun is `make run` started as a script would start it: in a session
// of its own (so the test can find every process it left), output in a
// file.
type makeRun struct {
	cmd      *exec.Cmd
	out      string // path of the combined output
	runDir   string
	planner  string // unix:///path of its socket
	executor string
	pleg     string
	sockets  string   // the directory of the three sockets
	metrics  []string // planner, executor, pleg, crisim
	sockDir  string   // crisim's socket directory, from the output
	done     chan struct{}
	err      error
}

var criEndpointLine = regexp.MustCompile(`run-local: CRI endpoint unix://(\S+)/crisim.sock`)

// startMakeRun runs `make run` with its sockets in a directory of the
// test's and its metrics on free ports, and waits until every service
// answers. Cleanup stops it if the test did not. bin, when set, is the
// directory make builds into instead of the repository's bin/, so tests
// running at the same time never rewrite a binary another one runs.
func startMakeRun(t *testing.T, bin string) *makeRun {
	t.Helper()
	root := repoRoot(t)
	p := quietPorts(t, 4)
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(p[i]) }
	// A short directory: socket paths are limited to about 100 bytes.
	sockets, err := os.MkdirTemp("", "spr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockets) })
	r := &makeRun{
		out:      filepath.Join(t.TempDir(), "make-run.log"),
		runDir:   t.TempDir(),
		sockets:  sockets,
		planner:  "unix://" + filepath.Join(sockets, "planner.sock"),
		executor: "unix://" + filepath.Join(sockets, "executor.sock"),
		pleg:     "unix://" + filepath.Join(sockets, "pleg.sock"),
		metrics:  []string{addr(0), addr(1), addr(2), addr(3)},
		done:     make(chan struct{}),
	}
	f, err := os.Create(r.out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	args := []string{"--no-print-directory", "run"}
	if bin != "" {
		args = append(args, "BIN="+bin)
	}
	// A user's script starts make with SIGINT and SIGTERM at their
	// defaults. This process may have inherited SIGINT ignored (a
	// background job of a non-interactive shell starts so), and make
	// would inherit that and never see the SIGINT this test sends.
	r.cmd = exec.Command("env", append([]string{"--default-signal=INT,TERM,HUP", "make"}, args...)...)
	r.cmd.Dir = root
	r.cmd.Stdout, r.cmd.Stderr = f, f
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	r.cmd.Env = makeEnv(
		"SYNCPOD_RUN_DIR="+r.runDir,
		"SYNCPOD_RUN_SOCKETS="+r.sockets,
		"SYNCPOD_RUN_METRICS_PLANNER="+r.metrics[0],
		"SYNCPOD_RUN_METRICS_EXECUTOR="+r.metrics[1],
		"SYNCPOD_RUN_METRICS_PLEG="+r.metrics[2],
		"SYNCPOD_RUN_METRICS_CRISIM="+r.metrics[3],
	)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-r.done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
				<-r.done
			}
		}
		// run-local.sh starts each service in a process group of its own,
		// which a kill of make's group does not reach: when the script was
		// killed (or a failed test left it mid-stop), end what it started.
		for _, pid := range processesWithEnv("SYNCPOD_RUN_DIR=" + r.runDir) {
			t.Logf("make run left pid %d running; killing it", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// A cold build can take minutes on a loaded machine.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out := r.output()
		if m := criEndpointLine.FindStringSubmatch(out); m != nil {
			r.sockDir = m[1]
		}
		if strings.Contains(out, "Ctrl-C stops everything") && r.sockDir != "" {
			break
		}
		select {
		case <-r.done:
			t.Fatalf("make run exited before serving (%v):\n%s", r.err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not start within 5 minutes:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, a := range []string{r.planner, r.executor, r.pleg} {
		waitHealthy(t, a)
	}
	return r
}

// healthCheck asks addr's grpc.health.v1 for the overall status.
func healthCheck(addr string) error {
	return server.Healthcheck(addr, server.DialPolicy{}, 2*time.Second)
}

// waitHealthy waits until the gRPC server at addr answers SERVING.
func waitHealthy(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := healthCheck(addr); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s never became SERVING: %v", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (r *makeRun) output() string {
	b, _ := os.ReadFile(r.out)
	return string(b)
}

// wait waits for make to exit and returns its wait status.
func (r *makeRun) wait(t *testing.T) syscall.WaitStatus {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("make run still running 60 s after the stop signal:\n%s", r.output())
	}
	return r.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// sessionProcesses lists the processes (pid and command) still in the
// session whose id is sid.
func sessionProcesses(sid int) []string {
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold spaces.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 4 || fields[3] != strconv.Itoa(sid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		left = append(left, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return left
}

// runLocalPid is the pid of run-local.sh below make.
func runLocalPid(t *testing.T, makePid int) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		ppid := ""
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PPid:"); ok {
				ppid = strings.TrimSpace(v)
			}
		}
		f.Close()
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if ppid == strconv.Itoa(makePid) && strings.Contains(string(cmdline), "run-local.sh") {
			return pid
		}
	}
	t.Fatalf("no run-local.sh below make (pid %d)", makePid)
	return 0
}

// TestMakeRunStopsOnSignalFromAScript starts `make run` as a script does
// and stops it the ways a script or a terminal would: SIGINT to its
// process group, SIGINT or SIGTERM to make alone (GNU make does not pass
// SIGINT on), and SIGINT to run-local.sh. Every binary must stop, nothing
// of the run may remain, the ports and the socket directory must be free,
// and make must exit 0 unless it was itself the one signalled (then GNU
// make ends by that signal, as it always does).
func TestMakeRunStopsOnSignalFromAScript(t *testing.T) {
	t.Parallel() // its binaries, ports and run dirs are its own
	bin := seededBin(t)
	for _, tc := range []struct {
		name string
		send func(t *testing.T, makePid int)
		// makeSignal: make received the signal itself and dies by it;
		// zero: make must exit 0.
		makeSignal syscall.Signal
	}{
		{"SIGINT to the process group", func(t *testing.T, pid int) { _ = syscall.Kill(-pid, syscall.SIGINT) }, syscall.SIGINT},
		{"SIGINT to make", func(t *testing.T, pid int) { _ = syscall.Kill(pid, syscall.SIGINT) }, syscall.SIGINT},
		{"SIGTERM to make", func(t *testing.T, pid int) { _ = syscall.Kill(pid, syscall.SIGTERM) }, syscall.SIGTERM},
		{"SIGINT to run-local.sh", func(t *testing.T, pid int) { _ = syscall.Kill(runLocalPid(t, pid), syscall.SIGINT) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startMakeRun(t, bin)
			pid := r.cmd.Process.Pid
			tc.send(t, pid)
			ws := r.wait(t)
			out := r.output()
			switch {
			case tc.makeSignal == 0 && !(ws.Exited() && ws.ExitStatus() == 0):
				t.Errorf("make exited with %v, want status 0:\n%s", r.err, out)
			case tc.makeSignal != 0 && !(ws.Signaled() && ws.Signal() == tc.makeSignal) && !(ws.Exited() && ws.ExitStatus() == 0):
				t.Errorf("make exited with %v, want death by %v or status 0:\n%s", r.err, tc.makeSignal, out)
			}
			if !strings.Contains(out, "run-local: stopped") {
				t.Errorf("no \"run-local: stopped\" in the output:\n%s", out)
			}
			if strings.Contains(out, "Error 1") {
				t.Errorf("make reported an error:\n%s", out)
			}
			// Everything of the session is gone; allow a moment for
			// orphans to be reaped by init.
			var left []string
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if left = sessionProcesses(pid); len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			if len(left) > 0 {
				t.Errorf("processes left behind:\n%s\noutput:\n%s", strings.Join(left, "\n"), out)
			}
			for _, a := range []string{r.planner, r.executor, r.pleg} {
				if _, err := os.Stat(strings.TrimPrefix(a, "unix://")); !os.IsNotExist(err) {
					t.Errorf("socket %s left behind (%v)", a, err)
				}
			}
			for _, a := range r.metrics {
				l, err := net.Listen("tcp", a)
				if err != nil {
					t.Errorf("port %s still held: %v", a, err)
					continue
				}
				l.Close()
			}
			if _, err := os.Stat(r.sockDir); !os.IsNotExist(err) {
				t.Errorf("socket directory %s left behind (%v)", r.sockDir, err)
			}
		})
	}
}

// processesWithEnv returns the pids of processes whose environment holds
// the entry kv exactly. A per-test value (a temporary directory) finds
// what one test started and nothing else on the machine.
func processesWithEnv(kv string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range strings.Split(string(env), "\x00") {
			if v == kv {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
