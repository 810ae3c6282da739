package logind

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
	"golang.org/x/sys/unix"

	"github.com/syncpod/syncpod/internal/proctest"
)

// envRequireDBus, "1" (set by make as root and in CI, where the set-up
// installs dbus-daemon), makes a D-Bus daemon that cannot start fail the
// test instead of skipping it.
const envRequireDBus = "SYNCPOD_TEST_REQUIRE_DBUS"

// privateBus starts a dbus-daemon of the test's own, configured like a
// system bus (its own policy, a unix socket in a temporary directory,
// this user allowed), and returns its address. The daemon is stopped when
// the test ends.
func privateBus(t *testing.T) string {
	t.Helper()
	cannot := func(format string, args ...any) {
		t.Helper()
		if os.Getenv(envRequireDBus) == "1" {
			t.Fatalf(envRequireDBus+"=1 but "+format, args...)
		}
		t.Skipf("SKIP (loudly): no D-Bus daemon for the logind test: "+format+" (apt-get install dbus-daemon; `make containerd-deps` does as root)", args...)
	}
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		cannot("dbus-daemon is not installed: %v", err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if len(dir) > 90 {
		// A socket's path must fit a socket address.
		if dir, err = os.MkdirTemp("/tmp", "logind-bus"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	config := filepath.Join(dir, "bus.conf")
	conf := fmt.Sprintf(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <!-- As a system bus: deny by default, then what logind's own policy allows. -->
  <policy context="default">
    <allow user="%s"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.login1" send_interface="org.freedesktop.DBus.Properties" send_member="Get"/>
    <allow send_destination="org.freedesktop.login1" send_interface="org.freedesktop.login1.Manager" send_member="Inhibit"/>
  </policy>
  <policy user="%s">
    <allow own="org.freedesktop.login1"/>
  </policy>
</busconfig>
`, filepath.Join(dir, "bus.sock"), u.Username, u.Username)
	if err := os.WriteFile(config, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--config-file="+config, "--nofork", "--nopidfile", "--print-address=1")
	// Gone with the test binary too, when a timeout ends it before its
	// cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cannot("start %s: %v", daemon, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cannot("%s printed no address (%v): %s", daemon, err, stderr.String())
	}
	return strings.TrimSpace(line)
}

// fakeLogind is org.freedesktop.login1 on the private bus: Inhibit hands
// out the write end of a pipe, as logind hands out a FIFO's, and keeps
// the read end, which sees the end of the file once the lock's holder
// closes it; PrepareForShutdown is emitted when the test says.
type fakeLogind struct {
	conn  *dbus.Conn
	props *prop.Properties

	mu    sync.Mutex
	locks []inhibitLock
}

// inhibitLock is one lock handed out: the arguments and the read end.
type inhibitLock struct {
	what, who, why, mode string
	r                    *os.File
	// w is the fake's own copy of the write end, closed once the caller
	// has the lock (closeOwnEnds).
	w *os.File
}

// Inhibit is logind's method.
func (f *fakeLogind) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return -1, dbus.MakeFailedError(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locks = append(f.locks, inhibitLock{what: what, who: who, why: why, mode: mode, r: r, w: w})
	return dbus.UnixFD(w.Fd()), nil
}

func (f *fakeLogind) lockList() []inhibitLock {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]inhibitLock(nil), f.locks...)
}

// closeOwnEnds closes the fake's copies of the write ends it handed out,
// once their holders have them: the holder's copy is then the only one.
func (f *fakeLogind) closeOwnEnds() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.locks {
		if f.locks[i].w != nil {
			_ = f.locks[i].w.Close()
			f.locks[i].w = nil
		}
	}
}

// prepareForShutdown sets PreparingForShutdown and emits the signal, as
// logind does when a shutdown starts (true) or is cancelled (false).
func (f *fakeLogind) prepareForShutdown(t *testing.T, v bool) {
	t.Helper()
	f.props.SetMust(logindInterface, "PreparingForShutdown", v)
	if err := f.conn.Emit(logindPath, logindInterface+".PrepareForShutdown", v); err != nil {
		t.Fatal(err)
	}
}

// serveLogind exports the fake on the bus at addr with InhibitDelayMaxUSec
// set to delay.
func serveLogind(t *testing.T, addr string, delay time.Duration) *fakeLogind {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the private bus: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	f := &fakeLogind{conn: conn}
	t.Cleanup(func() {
		for _, l := range f.lockList() {
			_ = l.r.Close()
		}
		f.closeOwnEnds()
	})
	if err := conn.Export(f, logindPath, logindInterface); err != nil {
		t.Fatal(err)
	}
	f.props, err = prop.Export(conn, logindPath, prop.Map{logindInterface: {
		"InhibitDelayMaxUSec":  {Value: uint64(delay / time.Microsecond), Emit: prop.EmitFalse},
		"PreparingForShutdown": {Value: false, Emit: prop.EmitFalse},
	}})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName(logindService, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s on the private bus: %v (reply %d)", logindService, err, reply)
	}
	return f
}

// released reports whether every write end of the lock's pipe is closed:
// its read end is at the end of the file (poll says hang-up).
func released(t *testing.T, l inhibitLock) bool {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(l.r.Fd()), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds, 0); err != nil {
		t.Fatal(err)
	}
	return fds[0].Revents&unix.POLLHUP != 0
}

// descriptors counts this process's descriptors of the lock's pipe (the
// fake's ends and the holder's, Run being in this process too).
func descriptors(t *testing.T, l inhibitLock) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(l.r.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("pipe:[%d]", st.Ino)
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == want {
			n++
		}
	}
	return n
}

// held waits until the lock's holder has its descriptor (the fake's two
// ends and the holder's), closes the fake's write end, and checks that
// the pipe is still open: through the holder's descriptor only.
func held(t *testing.T, logind *fakeLogind, l inhibitLock) {
	t.Helper()
	eventually(t, "the lock's descriptor reaches its holder", func() bool { return descriptors(t, l) == 3 })
	logind.closeOwnEnds()
	if released(t, l) {
		t.Fatal("the lock is not held: its pipe hung up once logind's own end closed")
	}
}

// eventually waits for cond, failing the test with what after a while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// against a real D-Bus daemon and the production connection
// (ConnectSystemBus, pointed at the private bus by
// DBUS_SYSTEM_BUS_ADDRESS): Run reads InhibitDelayMaxUSec and warns, as
// says, when it is shorter than the grace period; it takes a
// delay lock for shutdown over the bus, a real descriptor it holds; on
// PrepareForShutdown(true) it runs the shutdown with the lock still held
// and releases it once the shutdown is done; on PrepareForShutdown(false)
// it cancels and takes a new lock; when its context ends it lets go.
func TestRunOnARealBus(t *testing.T) {
	addr := privateBus(t)
	logind := serveLogind(t, addr, 30*time.Second)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)

	var logs proctest.Buffer
	shutdownStarted, finishShutdown := make(chan struct{}), make(chan struct{})
	var finish sync.Once
	finished := func() { finish.Do(func() { close(finishShutdown) }) }
	cancelled := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = Run(ctx, Options{
			Connect: ConnectSystemBus, Budget: 40 * time.Second,
			Shutdown: func(context.Context) error {
				close(shutdownStarted)
				<-finishShutdown
				return nil
			},
			Cancel: func(context.Context) error { cancelled <- struct{}{}; return nil },
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
	}()
	defer func() {
		// Also when the test fails in the middle of a shutdown.
		finished()
		cancel()
		<-done
	}()

	eventually(t, "Run holds the lock and watches the signal", func() bool {
		if strings.Contains(logs.String(), "level=WARN msg=\"logind refused") || strings.Contains(logs.String(), "no system bus") {
			t.Fatalf("Run did not get the lock: %s", logs.String())
		}
		return strings.Contains(logs.String(), "holding logind's shutdown inhibitor lock")
	})
	if !strings.Contains(logs.String(), "InhibitDelayMaxSec is shorter than the shutdown grace period") ||
		!strings.Contains(logs.String(), "inhibit_delay_max=30s shutdown_grace_period=40s") {
		t.Errorf("no warning naming logind's 30s InhibitDelayMaxUSec and the 40s grace period: %s", logs.String())
	}
	locks := logind.lockList()
	if len(locks) != 1 {
		t.Fatalf("%d inhibitor locks taken, want 1", len(locks))
	}
	lock := locks[0]
	if lock.what != "shutdown" || lock.mode != "delay" || lock.who != "syncpod" || lock.why == "" {
		t.Fatalf("lock what=%q who=%q why=%q mode=%q, want a delay lock for shutdown by syncpod, with a reason", lock.what, lock.who, lock.why, lock.mode)
	}
	// The planner got a descriptor of its own over the bus.
	held(t, logind, lock)

	logind.prepareForShutdown(t, true)
	select {
	case <-shutdownStarted:
	case <-time.After(20 * time.Second):
		t.Fatalf("PrepareForShutdown(true) did not start the shutdown: %s", logs.String())
	}
	if released(t, lock) {
		t.Fatal("the lock was released before the shutdown was done")
	}
	finished()
	eventually(t, "the lock is released once the shutdown is done", func() bool { return released(t, lock) })

	logind.prepareForShutdown(t, false)
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second):
		t.Fatalf("PrepareForShutdown(false) did not cancel the shutdown: %s", logs.String())
	}
	eventually(t, "a new lock is taken after the cancellation", func() bool { return len(logind.lockList()) == 2 })
	again := logind.lockList()[1]
	held(t, logind, again)

	cancel()
	<-done
	if runErr != nil {
		t.Fatalf("Run: %v", runErr)
	}
	if !released(t, again) {
		t.Fatal("the lock is still held after Run returned")
	}
}
