package crisim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ShimArg, as the first argument of a binary that calls RunShim, makes it
// a container shim (see Shim).
const ShimArg = "crisim-shim"

// Shim is how crisim starts a container shim: a small process that
// starts the container, owns its output pipes and log file, waits for it
// and writes its exit code into the state directory. Like containerd's
// shims, it lets a container outlive crisim (a restart, a crash) with its
// logs still written and its exit code still known: the new crisim finds
// the shim by PID and start time and waits for it to end.
type Shim struct {
	// Path is the binary, usually the running syncpod-crisim itself.
	Path string
	// Args come before nothing else: the binary must call RunShim when it
	// sees them (syncpod-crisim: ShimArg).
	Args []string
	// Env is added to crisim's environment for the shim (not for the
	// container, whose environment is its own).
	Env []string
}

// shimSpec is what crisim tells a shim, as JSON on its stdin.
type shimSpec struct {
	Argv     []string `json:"argv"`
	Dir      string   `json:"dir"`
	Env      []string `json:"env"`
	LogPath  string   `json:"log_path"`
	ExitFile string   `json:"exit_file"`
	// User is the container process's user, nil for the shim's own.
	User *processCred `json:"user,omitempty"`
	// StartedFile receives the container's procRecord once it runs, so a
	// crisim that dies before recording the start still finds it.
	StartedFile string `json:"started_file"`
	BootID      string `json:"boot_id"`
	// StartLockFD is the shim's inherited descriptor of the container's
	// start lock (see startLock); 0 when there is none. The shim keeps it
	// open for its whole life.
	StartLockFD int `json:"start_lock_fd,omitempty"`
	// StdinFD is the inherited descriptor of the container's standard
	// input (a pipe's read end, or its terminal with TTY); 0 for none.
	StdinFD int `json:"stdin_fd,omitempty"`
	// StdinKeepFD is the pipe's write end, which the shim holds (and never
	// writes) so the input stays open while crisim restarts.
	StdinKeepFD int `json:"stdin_keep_fd,omitempty"`
	// TTY: StdinFD is a terminal, also the container's stdout and stderr,
	// whose output is read from TTYMasterFD.
	TTY         bool `json:"tty,omitempty"`
	TTYMasterFD int  `json:"tty_master_fd,omitempty"`
	// AttachSocket is where the shim serves the container's live output
	// to attach sessions (output.go); "" for none.
	AttachSocket string `json:"attach_socket,omitempty"`
}

// shimReply is the shim's one line on its stdout.
type shimReply struct {
	PID   int    `json:"pid"`
	Error string `json:"error,omitempty"`
}

// RunShim is a container shim's main: it reads a shimSpec from in,
// starts the container in its own process group, answers its PID on out
// (then closes out), copies its output into the CRI log, reopens the log
// on SIGUSR1, and when the container's first process exits kills the rest
// of its group and writes the exit record. It returns the shim's exit
// code.
func RunShim(in io.Reader, out *os.File) int {
	reply := func(r shimReply) {
		b, _ := json.Marshal(r)
		_, _ = out.Write(append(b, '\n'))
		_ = out.Close()
	}
	// A crisim that dies before reading the reply must not take the shim
	// (and so the container's exit record) with it: a write to the closed
	// pipe fails instead of killing the shim.
	signal.Ignore(syscall.SIGPIPE)
	var spec shimSpec
	if err := json.NewDecoder(in).Decode(&spec); err != nil {
		reply(shimReply{Error: "shim: bad spec: " + err.Error()})
		return 2
	}
	if spec.StartLockFD > 0 {
		// Held (never closed) while the shim lives; not passed on to the
		// container.
		syscall.CloseOnExec(spec.StartLockFD)
	}
	if len(spec.Argv) == 0 || spec.ExitFile == "" {
		reply(shimReply{Error: "shim: spec lacks argv or exit_file"})
		return 2
	}
	// Terminal signals are not the shim's business; SIGUSR1 reopens the
	// log. (Caught, not ignored: the container gets default handlers.)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1)
	lw, err := openLog(spec.LogPath, time.Now)
	if err != nil {
		reply(shimReply{Error: err.Error()})
		return 1
	}
	for _, fd := range []int{spec.StdinFD, spec.StdinKeepFD, spec.TTYMasterFD} {
		if fd > 0 {
			syscall.CloseOnExec(fd) // the container gets only 0, 1 and 2
		}
	}
	var stdio *shimStdio
	if spec.StdinFD > 0 {
		stdio = &shimStdio{in: os.NewFile(uintptr(spec.StdinFD), "stdin"), tty: spec.TTY}
		if spec.TTY {
			stdio.master = os.NewFile(uintptr(spec.TTYMasterFD), "ptmx")
		}
		// StdinKeepFD stays open, unused, for the shim's life.
	}
	hub := newOutputHub(lw)
	var attach *attachServer
	if spec.AttachSocket != "" {
		// Listening before the container starts: an attach right after
		// StartContainer finds the socket.
		if attach, err = listenAttach(spec.AttachSocket, hub); err != nil {
			reply(shimReply{Error: err.Error()})
			return 1
		}
	}
	p, err := startGroup(spec.Argv, spec.Dir, spec.Env, spec.User, hub, stdio)
	if err != nil {
		if attach != nil {
			attach.close(0)
		}
		reply(shimReply{Error: err.Error()})
		return 1
	}
	if spec.StartedFile != "" {
		rec := procRecord{BootID: spec.BootID, PID: p.pid, ShimPID: os.Getpid(), StartedAt: time.Now().UnixNano()}
		rec.Start, _, _ = procStart(p.pid)
		rec.ShimStart, _, _ = procStart(os.Getpid())
		if b, err := json.Marshal(rec); err == nil {
			_ = writeAtomic(spec.StartedFile, b)
		}
	}
	reply(shimReply{PID: p.pid})
	go func() {
		for s := range sigs {
			if s == syscall.SIGUSR1 {
				_ = lw.reopen()
			}
		}
	}()
	code := p.wait()
	hub.end()
	if attach != nil {
		attach.close(pipeDrainTimeout)
	}
	lw.close()
	b, _ := json.Marshal(exitRecord{ExitCode: code, FinishedAt: time.Now().UnixNano()})
	if err := writeAtomic(spec.ExitFile, b); err != nil {
		return 1
	}
	return 0
}

// writeAtomic replaces path with data through a temporary file and a
// rename, so a reader sees the old or the new content, never a part.
func writeAtomic(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// shimStdio is a container's standard input, as a shim inherits it.
type shimStdio struct {
	in     *os.File // pipe read end, or the terminal
	master *os.File // the terminal's master (tty)
	tty    bool
}

// group is a started process group whose output is copied into a log.
type group struct {
	pid  int
	cmd  *exec.Cmd
	outR *os.File
	errR *os.File
	read sync.WaitGroup
}

// startGroup execs argv in its own process group with stdout and stderr
// going to out, and standard input from stdio (nil: none). A container
// with a terminal leads a session of its own, the terminal its
// controlling one, and its output is all stdout.
func startGroup(argv []string, dir string, env []string, user *processCred, out *outputHub, stdio *shimStdio) (*group, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr(user)
	if stdio != nil && stdio.tty {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.in, stdio.in, stdio.in
		cmd.SysProcAttr = ttyAttr(user)
		err := cmd.Start()
		_ = stdio.in.Close()
		if err != nil {
			_ = stdio.master.Close()
			return nil, err
		}
		g := &group{pid: cmd.Process.Pid, cmd: cmd, outR: stdio.master}
		g.read.Add(1)
		go func() { defer g.read.Done(); out.pump(frameStdout, stdio.master) }()
		return g, nil
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if stdio != nil {
		cmd.Stdin = stdio.in
	}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if stdio != nil {
		_ = stdio.in.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	g := &group{pid: cmd.Process.Pid, cmd: cmd, outR: outR, errR: errR}
	g.read.Add(2)
	go func() { defer g.read.Done(); out.pump(frameStdout, outR) }()
	go func() { defer g.read.Done(); out.pump(frameStderr, errR) }()
	return g, nil
}

// wait waits for the group's first process, kills the rest of the group
// (as the end of a container's PID namespace would), drains the output
// for a bounded time and returns the exit code.
func (g *group) wait() int32 {
	_ = g.cmd.Wait()
	code := exitCode(g.cmd.ProcessState)
	_ = syscall.Kill(-g.pid, syscall.SIGKILL)
	drained := make(chan struct{})
	go func() { g.read.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(pipeDrainTimeout):
	}
	g.outR.Close()
	if g.errR != nil {
		g.errR.Close()
	}
	<-drained
	return code
}

// shimRunner is a container run by a shim, started by this crisim or
// adopted from an earlier one.
type shimRunner struct {
	r    *Runtime
	c    *container
	rec  procRecord
	sig  syscall.Signal
	done chan struct{}
	wait func() error // reaps the shim crisim started; nil when adopted
	// stopper: one stop per instance (process.go).
	stopper stopper
}

func (s *shimRunner) proc() *procRecord { rec := s.rec; return &rec }

func (s *shimRunner) exited() <-chan struct{} { return s.done }

// signal sends sig to the container's process group, if its first process
// is still the one crisim started (a PID may be reused once it is gone).
func (s *shimRunner) signal(sig syscall.Signal) {
	if sameProcess(s.r.boot, s.rec.BootID, s.rec.PID, s.rec.Start) {
		_ = syscall.Kill(-s.rec.PID, sig)
	}
}

func (s *shimRunner) kill() { s.signal(syscall.SIGKILL) }

func (s *shimRunner) stop(ctx context.Context, timeout time.Duration) error {
	return s.stopper.stop(ctx, timeout, s.done, func() { s.signal(s.sig) }, s.kill)
}

// reopenLog asks the shim, which owns the log file, to reopen it, and
// waits until the file exists again: a caller that renamed the log away
// (a rotation) reads the new one as soon as the call returns, as CRI
// runtimes answer once the file is reopened.
func (s *shimRunner) reopenLog(ctx context.Context) error {
	if !sameProcess(s.r.boot, s.rec.BootID, s.rec.ShimPID, s.rec.ShimStart) {
		return fmt.Errorf("%w: the shim of container %q is gone", ErrFailedPrecondition, s.c.id)
	}
	if err := syscall.Kill(s.rec.ShimPID, syscall.SIGUSR1); err != nil {
		return err
	}
	if s.c.logPath == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, reopenWait)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(s.c.logPath); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the shim of container %q did not reopen its log %s: %w", s.c.id, s.c.logPath, ctx.Err())
		case <-t.C:
		case <-s.done:
			return fmt.Errorf("%w: container %q exited", ErrFailedPrecondition, s.c.id)
		}
	}
}

// reopenWait bounds how long ReopenContainerLog waits for a shim to
// reopen its container's log.
const reopenWait = 10 * time.Second

// startShim starts c under a shim; mu is held by the caller.
func (r *Runtime) startShim(c *container) (*shimRunner, error) {
	if len(c.command) == 0 {
		return nil, fmt.Errorf("%w: container %q has no command; crisim runs no image entrypoint, so the command must be set", ErrFailedPrecondition, c.meta.GetName())
	}
	dir := c.workingDir
	if dir == "" {
		dir = r.cwd
	}
	lock, err := takeStartLock(r.store.startLockFile(c.id))
	if err != nil {
		return nil, err
	}
	// The shim inherits the lock (as its fd 3, the first of ExtraFiles)
	// and holds it while it lives; this copy goes once the shim has
	// started, or failed to.
	defer lock.Close()
	spec := shimSpec{Argv: append(append([]string{}, c.command...), c.args...), Dir: dir, Env: c.env, LogPath: c.logPath, User: c.user,
		ExitFile: r.store.exitFile(c.id), StartedFile: r.store.startedFile(c.id), BootID: r.boot, StartLockFD: 3,
		AttachSocket: r.store.attachSocket(c.id)}
	stdio, err := openStdio(c.stdin, c.tty)
	if err != nil {
		return nil, err
	}
	extra := []*os.File{lock}
	if stdio != nil {
		// Inherited as 4, and 5: the terminal's master or the pipe's
		// write end.
		spec.StdinFD, spec.TTY = 4, c.tty
		extra = append(extra, stdio.stdin)
		if c.tty {
			spec.TTYMasterFD = 5
			extra = append(extra, stdio.master)
		} else if !c.stdinOnce {
			// The shim holds the write end too, so the input stays open
			// while crisim restarts; not for stdinOnce, whose input must
			// end when crisim closes its end.
			spec.StdinKeepFD = 5
			extra = append(extra, stdio.keep)
		}
	}
	started := false
	defer func() {
		if started {
			stdio.closeChild()
		} else {
			stdio.closeAll()
		}
	}()
	_ = os.Remove(spec.ExitFile)
	in, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	sh := r.opts.Shim
	cmd := exec.Command(sh.Path, sh.Args...)
	cmd.ExtraFiles = extra
	cmd.Env = append(os.Environ(), sh.Env...)
	cmd.Dir = "/"
	// Its own session: a terminal's Ctrl-C or a kill of crisim's process
	// group does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = bytes.NewReader(in)
	outR, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start shim %s: %w", sh.Path, err)
	}
	line, rerr := bufio.NewReader(outR).ReadBytes('\n')
	var rep shimReply
	if rerr == nil {
		rerr = json.Unmarshal(line, &rep)
	}
	if rerr != nil || rep.Error != "" || rep.PID <= 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if rep.Error != "" {
			return nil, errors.New(rep.Error)
		}
		return nil, fmt.Errorf("shim %s gave no container pid: %v", sh.Path, rerr)
	}
	started = true
	if stdio != nil {
		c.in = stdio.end
	}
	s := &shimRunner{r: r, c: c, sig: stopSignal(c.stopSignal), done: make(chan struct{})}
	s.rec = procRecord{BootID: r.boot, PID: rep.PID, ShimPID: cmd.Process.Pid, StopSignal: int32(c.stopSignal)}
	s.rec.ShimStart, _, _ = procStart(cmd.Process.Pid)
	s.rec.Start, _, _ = procStart(rep.PID)
	s.wait = cmd.Wait
	r.log.Debug("container started under a shim", "container_id", c.id, "pid", rep.PID, "shim_pid", cmd.Process.Pid)
	return s, nil
}

// watch waits for the shim crisim started and records the exit. The
// caller starts it once the container's state says RUNNING (an exit seen
// earlier would be dropped as the exit of a container not running).
func (s *shimRunner) watch() {
	s.r.running.Add(1)
	go func() {
		defer s.r.running.Done()
		_ = s.wait()
		s.finish()
	}()
}

// adoptShim takes over a running container whose shim an earlier crisim
// started, waiting for the shim to end; mu is held by the caller.
func (r *Runtime) adoptShim(c *container, rec procRecord) *shimRunner {
	s := &shimRunner{r: r, c: c, rec: rec, sig: stopSignal(c.stopSignal), done: make(chan struct{})}
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		if err := waitForeign(r.closing, rec.ShimPID, func() bool { return sameProcess(r.boot, rec.BootID, rec.ShimPID, rec.ShimStart) }); err != nil {
			return // crisim is shutting down and leaves the container running
		}
		s.finish()
	}()
	return s
}

// finish records the container's exit once its shim is gone: the code the
// shim wrote, or 255 "Unknown" (as containerd reports an exit it could
// not see) when the shim died without writing one, after making sure no
// process of the container is left.
func (s *shimRunner) finish() {
	if e, ok := s.r.store.readExit(s.c.id); ok {
		s.r.recordExitAt(s.c, e.ExitCode, "", "", e.FinishedAt)
	} else {
		s.kill()
		s.r.recordExitAt(s.c, unknownExitCode, unknownExitReason, "the container's shim ended without recording its exit", 0)
	}
	close(s.done)
}

// waitForeign waits until the process pid, not a child of crisim, ends
// (alive reports whether it is still the same process), or closing is
// closed (then it returns an error). It watches a pidfd through the Go
// poller, or polls /proc every second where pidfds are not available.
func waitForeign(closing <-chan struct{}, pid int, alive func() bool) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err == nil {
		// Opened after the check below could race a PID reuse: check the
		// identity once the pidfd pins the process.
		f := os.NewFile(uintptr(fd), "pidfd")
		defer f.Close()
		if !alive() {
			return nil
		}
		rc, err := f.SyscallConn()
		if err == nil {
			ended := make(chan struct{})
			go func() {
				_ = rc.Read(func(fd uintptr) bool {
					n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
					return n > 0
				})
				close(ended)
			}()
			select {
			case <-ended:
				// Also when the poller could not watch the pidfd: the
				// loop below then finds the process still alive.
			case <-closing:
				_ = f.Close() // ends the Read
				return errors.New("closing")
			}
		}
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for alive() {
		select {
		case <-t.C:
		case <-closing:
			return errors.New("closing")
		}
	}
	return nil
}
