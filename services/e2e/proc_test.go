package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a running syncpod binary.
type proc struct {
	name    string
	cmd     *exec.Cmd
	grpc    string // host:port, or the socket path of a unix listener
	metrics string // http URL of /metrics
	done    chan error
	exited  chan struct{} // closed when the process has been waited for
	logs    *strings.Builder
	mu      sync.Mutex
	err     error // exit error, valid once exited is closed
	checked bool  // its output has been searched for a race report
	opts    procOptions
}

// procOptions says how to run a binary.
type procOptions struct {
	// args come after the defaults (a unix socket of its own for gRPC, a
	// loopback port for metrics, JSON logs), so they override them.
	args []string
	// dir is the working directory; empty means the test's.
	dir string
	// env is added to the test's environment.
	env []string
	// managed: the caller stops the process (a node's ordered shutdown);
	// otherwise the test's cleanup kills it.
	managed bool
}

// start runs a binary on a unix socket of its own (the services' default
// kind of listener; a TCP one needs mutual TLS or --insecure-tcp, which
// the tests that want TCP pass explicitly) and a random loopback metrics
// port, and waits for its "serving" log line, which carries the bound
// addresses. The process is killed by
// the test's cleanup if it still runs.
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startProc(t, name, procOptions{args: args, env: []string{"SYNCPOD_DATA_DIR=" + t.TempDir()}})
}

// startProc is start with a working directory and environment.
func startProc(t *testing.T, name string, o procOptions) *proc {
	t.Helper()
	// Removed by a cleanup that runs after the process is stopped.
	listen := "--listen=unix://" + filepath.Join(shortTempDir(t), strings.TrimPrefix(name, "syncpod-")+".sock")
	args := append([]string{listen, "--metrics-listen=127.0.0.1:0", "--log-format=json"}, o.args...)
	cmd := exec.Command(binary(t, name), args...)
	cmd.Env = append(os.Environ(), o.env...)
	cmd.Dir = o.dir
	// A test binary that dies without its cleanups (a -timeout panic, a
	// SIGKILL) must not leave services and crisim's containers running
	// and holding their ports: the kernel sends them SIGTERM, on which
	// every binary stops cleanly (crisim with its containers), when the
	// thread that started them ends. Go ends a thread only with the
	// process, or when a goroutine locked to it returns, which no test
	// goroutine here does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1), exited: make(chan struct{}), logs: &strings.Builder{}, opts: o}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		closed := false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct {
				Msg     string `json:"msg"`
				GRPC    string `json:"grpc"`
				Metrics string `json:"metrics"`
			}
			if !closed && json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" {
				p.grpc, p.metrics = rec.GRPC, rec.Metrics
				closed = true
				close(ready)
			}
		}
		err := cmd.Wait()
		p.err = err
		close(p.exited)
		p.done <- err
	}()
	// A data race a -race service met (binaries_test.go) is reported on
	// its stderr, and fails the test: checkRace looks once the process has
	// exited. A managed process is ended by its owner's cleanup, which was
	// registered before this one and so runs after it: signal checks it
	// then, and this cleanup must not wait for it. An unmanaged one is
	// killed by the cleanup below, which runs first.
	t.Cleanup(func() {
		if o.managed && p.running() {
			return
		}
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
		p.checkRace(t)
	})
	if !o.managed {
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
		})
	}
	select {
	case <-ready:
	case err := <-p.done:
		t.Fatalf("%s exited before serving: %v\n%s", name, err, p.output())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("%s did not start serving:\n%s", name, p.output())
	}
	return p
}

// checkRace fails t if the exited process reported a data race; once per
// process, and not before it has exited (its report may be incomplete).
func (p *proc) checkRace(t *testing.T) {
	t.Helper()
	if p.running() {
		return
	}
	p.mu.Lock()
	done := p.checked
	p.checked = true
	p.mu.Unlock()
	if done {
		return
	}
	if out := p.output(); strings.Contains(out, raceBanner) {
		i := strings.Index(out, raceBanner)
		t.Errorf("%s reported a data race:\n%s", p.name, out[i:min(len(out), i+6000)])
	}
}

// raceBanner starts the race detector's report.
const raceBanner = "WARNING: DATA RACE"

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// tail is the last n lines of the process's log.
func (p *proc) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.output(), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"... (" + itoa(len(lines)-n) + " earlier lines)"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// running reports whether the process has not exited yet.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and returns the exit error.
func (p *proc) stop(t *testing.T) error {
	t.Helper()
	return p.signal(t, syscall.SIGTERM)
}

// signal sends sig and waits (at most 30 s) for the process to exit.
func (p *proc) signal(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	defer p.checkRace(t)
	if !p.running() {
		return p.err
	}
	if err := p.cmd.Process.Signal(sig); err != nil && p.running() {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		return p.err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("no exit 30 s after %v (killed)", sig)
	}
}

// envOrphanHelper makes TestOrphanHelper start crisim and end its
// process without cleanups.
const envOrphanHelper = "SYNCPOD_E2E_ORPHAN_HELPER"

// TestOrphanHelper is run by TestServicesEndWithTheTestProcess in a test
// process of its own; it skips anywhere else.
func TestOrphanHelper(t *testing.T) {
	if os.Getenv(envOrphanHelper) != "1" {
		t.Skip("a helper process of TestServicesEndWithTheTestProcess")
	}
	p := start(t, "syncpod-crisim", "--mode=simulated", "--listen=unix://"+filepath.Join(t.TempDir(), "cri.sock"))
	fmt.Printf("crisim pid %d\n", p.cmd.Process.Pid)
	// No cleanups run, as when a -timeout panic or a SIGKILL ends a test
	// binary.
	os.Exit(3)
}

// A test process that dies without its cleanups leaves no service behind
// (the crisim it started is idle, so it would never meet the closed pipe
// of its log either).
func TestServicesEndWithTheTestProcess(t *testing.T) {
	t.Parallel()
	binary(t, "syncpod-crisim") // built once, for the helper too
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$", "-test.count=1")
	// Its temporary dirs (crisim's socket and data) under this test's,
	// which its own cleanup would have removed.
	cmd.Env = append(os.Environ(), envOrphanHelper+"=1", envBinDir+"="+binDir, "TMPDIR="+t.TempDir())
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("helper: %v, want exit status 3:\n%s", err, out)
	}
	var pid int
	if _, err := fmt.Sscanf(string(out), "crisim pid %d", &pid); err != nil || pid <= 0 {
		t.Fatalf("no crisim pid in the helper's output: %v:\n%s", err, out)
	}
	for deadline := time.Now().Add(15 * time.Second); running(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("crisim %d still running 15 s after its test process ended", pid)
		}
	}
}

// running says whether pid runs: readHostProc finds neither an ended
// process nor a zombie waiting for init.
func running(pid int) bool {
	_, ok := readHostProc(pid)
	return ok
}
