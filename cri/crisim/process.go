package crisim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// pipeDrainTimeout bounds how long output is read after a container's
// process group is gone (a daemon that escaped the group may hold a pipe).
const pipeDrainTimeout = 2 * time.Second

// maxExecOutput caps ExecSync's captured stdout and stderr each.
const maxExecOutput = 16 << 20

// procRunner is a container running as a host process group.
type procRunner struct {
	pgid int
	// session: the container leads a session of its own (it has a
	// terminal), which an exec's process cannot join.
	session bool
	sig     syscall.Signal
	lw      *logWriter
	// out fans the output out to the log and attach sessions.
	out     *outputHub
	done    chan struct{}
	stopper stopper
}

func (p *procRunner) reopenLog(context.Context) error { return p.lw.reopen() }

// startProcess execs c's command in its own process group with its output
// going to lw. mu is held by the caller.
func (r *Runtime) startProcess(c *container, lw *logWriter) (*procRunner, error) {
	argv := append(append([]string{}, c.command...), c.args...)
	if len(c.command) == 0 {
		return nil, fmt.Errorf("%w: container %q has no command; crisim runs no image entrypoint, so the command must be set", ErrFailedPrecondition, c.meta.GetName())
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.workingDir
	cmd.Env = c.env
	cmd.SysProcAttr = sysProcAttr(c.user)
	stdio, err := openStdio(c.stdin, c.tty)
	if err != nil {
		return nil, err
	}
	var outR, errR *os.File
	if c.tty {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.stdin, stdio.stdin, stdio.stdin
		cmd.SysProcAttr = ttyAttr(c.user)
		outR = stdio.master
		if err := cmd.Start(); err != nil {
			stdio.closeAll()
			return nil, err
		}
		_ = stdio.stdin.Close()
	} else {
		var outW, errW *os.File
		if outR, outW, err = os.Pipe(); err != nil {
			stdio.closeAll()
			return nil, err
		}
		if errR, errW, err = os.Pipe(); err != nil {
			stdio.closeAll()
			outR.Close()
			outW.Close()
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		if stdio != nil {
			cmd.Stdin = stdio.stdin
		}
		err = cmd.Start()
		outW.Close()
		errW.Close()
		if err != nil {
			stdio.closeAll()
			outR.Close()
			errR.Close()
			return nil, err
		}
		stdio.closeChild()
	}
	if stdio != nil {
		c.in = stdio.end
	}
	hub := newOutputHub(lw)
	p := &procRunner{pgid: cmd.Process.Pid, session: c.tty, sig: stopSignal(c.stopSignal), lw: lw, out: hub, done: make(chan struct{})}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() { defer readers.Done(); hub.pump(frameStdout, outR) }()
	if errR != nil {
		readers.Add(1)
		go func() { defer readers.Done(); hub.pump(frameStderr, errR) }()
	}
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		_ = cmd.Wait()
		code := exitCode(cmd.ProcessState)
		// The first process is gone: end the rest of its group, as the end
		// of a container's PID namespace would.
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		drained := make(chan struct{})
		go func() { readers.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(pipeDrainTimeout):
		}
		outR.Close()
		if errR != nil {
			errR.Close()
		}
		<-drained
		hub.end()
		r.recordExit(c, code, "", "")
		close(p.done)
	}()
	r.log.Debug("container process started", "container_id", c.id, "pid", p.pgid, "argv", argv)
	return p, nil
}

func (p *procRunner) exited() <-chan struct{} { return p.done }

func (p *procRunner) kill() { _ = syscall.Kill(-p.pgid, syscall.SIGKILL) }

func (p *procRunner) stop(ctx context.Context, timeout time.Duration) error {
	return p.stopper.stop(ctx, timeout, p.done, func() { _ = syscall.Kill(-p.pgid, p.sig) }, p.kill)
}

// stopper stops a container that is a process (of its own, or under a
// shim), once per instance. The first stop sends the stop signal (term;
// none with a zero timeout) and sets the kill for the end of its grace
// period; the kill then happens whether or not the caller still waits
// (a client that restarts asks again rather than waiting on). A stop
// that comes while one runs sends no second signal: it waits for the
// same exit, and brings the kill forward when its own timeout ends
// sooner. Every stop returns once the container has exited (done) or its
// ctx ends.
type stopper struct {
	mu       sync.Mutex
	deadline time.Time     // when kill is due; zero before the first stop
	sooner   chan struct{} // a stop brought the deadline forward
}

func (s *stopper) stop(ctx context.Context, timeout time.Duration, done <-chan struct{}, term, kill func()) error {
	s.mu.Lock()
	deadline := time.Now().Add(timeout)
	switch {
	case s.deadline.IsZero():
		s.deadline, s.sooner = deadline, make(chan struct{}, 1)
		if timeout > 0 {
			term()
		}
		go s.killAtDeadline(done, kill)
	case deadline.Before(s.deadline):
		s.deadline = deadline
		select {
		case s.sooner <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// killAtDeadline kills the container when the stop's deadline comes,
// unless it exits first.
func (s *stopper) killAtDeadline(done <-chan struct{}, kill func()) {
	for {
		s.mu.Lock()
		wait := time.Until(s.deadline)
		s.mu.Unlock()
		if wait <= 0 {
			kill()
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			return
		case <-s.sooner:
			t.Stop()
		case <-t.C:
		}
	}
}

// graceWait waits up to timeout for done to close; it reports whether it
// did, or ctx's error when ctx ended first.
func graceWait(ctx context.Context, done <-chan struct{}, timeout time.Duration) (bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// exitCode is the process's exit code, 128+n for a death by signal n.
func exitCode(ps *os.ProcessState) int32 {
	if ps == nil {
		return 255
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ps.ExitCode())
}

// stopSignal maps a CRI stop signal to the host signal crisim sends to
// stop the container's process group, SIGTERM by default (RUNTIME_DEFAULT
// or a value it does not know), as a runtime stops a container with its
// config's stop signal. The real-time signals count from glibc's
// SIGRTMIN (34) and up to SIGRTMAX (64), as runc names them.
func stopSignal(s runtimeapi.Signal) syscall.Signal {
	switch {
	case s >= runtimeapi.Signal_SIGNAL_SIGRTMIN && s <= runtimeapi.Signal_SIGNAL_SIGRTMINPLUS15:
		return sigRTMin + syscall.Signal(s-runtimeapi.Signal_SIGNAL_SIGRTMIN)
	case s >= runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS14 && s <= runtimeapi.Signal_SIGNAL_SIGRTMAX:
		return sigRTMax - syscall.Signal(runtimeapi.Signal_SIGNAL_SIGRTMAX-s)
	}
	if sig, ok := hostSignals[s]; ok {
		return sig
	}
	return syscall.SIGTERM
}

// effectiveStopSignal is the stop signal a container's status reports:
// the one it is stopped with (SIGTERM when its config names none), as
// containerd reports the image's or its default.
func effectiveStopSignal(s runtimeapi.Signal) runtimeapi.Signal {
	if s == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		return runtimeapi.Signal_SIGNAL_SIGTERM
	}
	return s
}

const (
	sigRTMin syscall.Signal = 34
	sigRTMax syscall.Signal = 64
)

// hostSignals are the CRI's named (not real-time) signals.
var hostSignals = map[runtimeapi.Signal]syscall.Signal{
	runtimeapi.Signal_SIGNAL_SIGABRT: unix.SIGABRT, runtimeapi.Signal_SIGNAL_SIGALRM: unix.SIGALRM,
	runtimeapi.Signal_SIGNAL_SIGBUS: unix.SIGBUS, runtimeapi.Signal_SIGNAL_SIGCHLD: unix.SIGCHLD,
	runtimeapi.Signal_SIGNAL_SIGCLD: unix.SIGCLD, runtimeapi.Signal_SIGNAL_SIGCONT: unix.SIGCONT,
	runtimeapi.Signal_SIGNAL_SIGFPE: unix.SIGFPE, runtimeapi.Signal_SIGNAL_SIGHUP: unix.SIGHUP,
	runtimeapi.Signal_SIGNAL_SIGILL: unix.SIGILL, runtimeapi.Signal_SIGNAL_SIGINT: unix.SIGINT,
	runtimeapi.Signal_SIGNAL_SIGIO: unix.SIGIO, runtimeapi.Signal_SIGNAL_SIGIOT: unix.SIGIOT,
	runtimeapi.Signal_SIGNAL_SIGKILL: unix.SIGKILL, runtimeapi.Signal_SIGNAL_SIGPIPE: unix.SIGPIPE,
	runtimeapi.Signal_SIGNAL_SIGPOLL: unix.SIGPOLL, runtimeapi.Signal_SIGNAL_SIGPROF: unix.SIGPROF,
	runtimeapi.Signal_SIGNAL_SIGPWR: unix.SIGPWR, runtimeapi.Signal_SIGNAL_SIGQUIT: unix.SIGQUIT,
	runtimeapi.Signal_SIGNAL_SIGSEGV: unix.SIGSEGV, runtimeapi.Signal_SIGNAL_SIGSTKFLT: unix.SIGSTKFLT,
	runtimeapi.Signal_SIGNAL_SIGSTOP: unix.SIGSTOP, runtimeapi.Signal_SIGNAL_SIGSYS: unix.SIGSYS,
	runtimeapi.Signal_SIGNAL_SIGTERM: unix.SIGTERM, runtimeapi.Signal_SIGNAL_SIGTRAP: unix.SIGTRAP,
	runtimeapi.Signal_SIGNAL_SIGTSTP: unix.SIGTSTP, runtimeapi.Signal_SIGNAL_SIGTTIN: unix.SIGTTIN,
	runtimeapi.Signal_SIGNAL_SIGTTOU: unix.SIGTTOU, runtimeapi.Signal_SIGNAL_SIGURG: unix.SIGURG,
	runtimeapi.Signal_SIGNAL_SIGUSR1: unix.SIGUSR1, runtimeapi.Signal_SIGNAL_SIGUSR2: unix.SIGUSR2,
	runtimeapi.Signal_SIGNAL_SIGVTALRM: unix.SIGVTALRM, runtimeapi.Signal_SIGNAL_SIGWINCH: unix.SIGWINCH,
	runtimeapi.Signal_SIGNAL_SIGXCPU: unix.SIGXCPU, runtimeapi.Signal_SIGNAL_SIGXFSZ: unix.SIGXFSZ,
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// execSync runs argv as a host process group in dir with env, as user
// (nil: crisim's own), killing the group when timeout (if positive)
// passes or ctx ends.
func execSync(ctx context.Context, argv []string, dir string, env []string, user *processCred, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr(user)
	stdout, stderr := &cappedBuffer{max: maxExecOutput}, &cappedBuffer{max: maxExecOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = pipeDrainTimeout
	if err := cmd.Start(); err != nil {
		// Like a runtime's exec of a missing binary: exit code 127 (not
		// found) or 126 (cannot run), with the reason on stderr.
		code := int32(126)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return &runtimeapi.ExecSyncResponse{Stderr: []byte(err.Error() + "\n"), ExitCode: code}, nil
	}
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-waited:
	case <-expire:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
		return nil, fmt.Errorf("%w: command %q did not finish within %s", ErrTimeout, argv, timeout)
	case <-ctx.Done():
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
		return nil, ctx.Err()
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return &runtimeapi.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: exitCode(cmd.ProcessState)}, nil
}
