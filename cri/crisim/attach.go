package crisim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// Attach, in crisim: a process-mode container created with stdin (and
// tty) gets a standard input crisim keeps open (a pipe, or the master of
// its terminal), and every attach session writes to it; the output an
// attach shows is the process's own, live, as its shim (or crisim) reads
// it from the process's pipes or terminal and fans it out to the CRI log
// and every attach session (output.go), log path or none. So any running
// process container can be attached to for its output; only one created
// with stdin takes input, and only from the crisim that started it (a
// restarted crisim has no end of the pipe: attach then shows output
// only).

// stdinEnd is crisim's end of a container's standard input: the write
// end of its stdin pipe, or (tty) its terminal's master. Safe for
// concurrent use.
type stdinEnd struct {
	mu  sync.Mutex
	f   *os.File // nil once closed
	tty bool
}

func (s *stdinEnd) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return 0, io.ErrClosedPipe
	}
	return s.f.Write(p)
}

// resize sets the terminal's size (tty only).
func (s *stdinEnd) resize(width, height uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil && s.tty {
		_ = pty.Setsize(s.f, &pty.Winsize{Cols: width, Rows: height})
	}
}

// close ends the container's input: the pipe's end, or, on a terminal
// (whose master stays open for its output), an end-of-file character.
func (s *stdinEnd) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		if s.tty {
			_, _ = s.f.Write([]byte{4}) // Ctrl-D: end of input in the terminal's line discipline
		}
		_ = s.f.Close()
		s.f = nil
	}
}

// childStdio is what a container's process gets for its standard
// streams when it has stdin or a terminal, and what crisim keeps.
type childStdio struct {
	// stdin is the process's standard input: the pipe's read end, or the
	// terminal (tty, then also its stdout and stderr).
	stdin *os.File
	// master is the terminal's master, where its output is read (tty).
	master *os.File
	// keep is the pipe's write end, held by a shim so the container's
	// input stays open whatever happens to crisim (not tty).
	keep *os.File
	// end is crisim's side.
	end *stdinEnd
}

// openStdio prepares the standard input of a container with stdin or
// tty; nil, nil for one with neither (it reads /dev/null).
func openStdio(stdin, tty bool) (*childStdio, error) {
	switch {
	case tty:
		master, slave, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("a terminal for the container: %w", err)
		}
		fd, err := unix.Dup(int(master.Fd()))
		if err != nil {
			master.Close()
			slave.Close()
			return nil, err
		}
		unix.CloseOnExec(fd)
		return &childStdio{stdin: slave, master: master, end: &stdinEnd{f: os.NewFile(uintptr(fd), "ptmx"), tty: true}}, nil
	case stdin:
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		fd, err := unix.Dup(int(w.Fd()))
		if err != nil {
			r.Close()
			w.Close()
			return nil, err
		}
		unix.CloseOnExec(fd)
		return &childStdio{stdin: r, keep: w, end: &stdinEnd{f: os.NewFile(uintptr(fd), "stdin")}}, nil
	}
	return nil, nil
}

// closeChild closes the child's files in this process once the child has
// them; crisim's end stays open.
func (s *childStdio) closeChild() {
	if s == nil {
		return
	}
	for _, f := range []*os.File{s.stdin, s.master, s.keep} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// closeAll closes everything, after a failed start.
func (s *childStdio) closeAll() {
	if s == nil {
		return
	}
	s.closeChild()
	s.end.close()
}

// attachTarget is what an attach session needs of a running container.
type attachTarget struct {
	// hub is the output of a container crisim runs itself; socket, the
	// attach socket of one run by a shim.
	hub       *outputHub
	socket    string
	in        *stdinEnd
	tty       bool
	stdinOnce bool
	c         *container
}

func (r *Runtime) attachTarget(id string, withStdin bool) (attachTarget, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return attachTarget{}, fmt.Errorf("%w: container %q", ErrNotFound, id)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || c.run == nil {
		return attachTarget{}, fmt.Errorf("%w: container %q is not running", ErrFailedPrecondition, id)
	}
	t := attachTarget{in: c.in, tty: c.tty, stdinOnce: c.stdinOnce, c: c}
	switch run := c.run.(type) {
	case *procRunner:
		t.hub = run.out
	case *shimRunner:
		t.socket = r.store.attachSocket(id)
	default:
		return attachTarget{}, fmt.Errorf("%w: container %q is simulated: there is no process to attach to", ErrFailedPrecondition, id)
	}
	if withStdin && c.in == nil {
		if !c.stdin && !c.tty {
			return attachTarget{}, fmt.Errorf("%w: container %q was not created with stdin: set stdin: true in its spec to attach to its input", ErrFailedPrecondition, id)
		}
		return attachTarget{}, fmt.Errorf("%w: the standard input of container %q is closed (stdinOnce, or started by an earlier crisim)", ErrFailedPrecondition, id)
	}
	return t, nil
}

// output opens the session's view of the container's output, from now on.
func (t attachTarget) output() (outputStream, error) {
	if t.hub != nil {
		return t.hub.subscribe(), nil
	}
	a, err := dialAttach(t.socket)
	if err != nil {
		return nil, fmt.Errorf("%w: the output of container %q (has it exited?): %v", ErrFailedPrecondition, t.c.id, err)
	}
	return a, nil
}

func (s streamRuntime) Attach(ctx context.Context, id string, in io.Reader, out, errw io.WriteCloser, _ bool, resize <-chan remotecommandserver.TerminalSize) error {
	t, err := s.r.attachTarget(id, in != nil)
	if err != nil {
		return err
	}
	// Subscribed before any input goes in: the output it causes shows.
	src, err := t.output()
	if err != nil {
		return err
	}
	defer src.close()
	stop := context.AfterFunc(ctx, src.close)
	defer stop()
	if t.tty && t.in != nil {
		go func() {
			for size := range resize {
				t.in.resize(size.Width, size.Height)
			}
		}()
	}
	if in != nil {
		go func() {
			_, _ = io.Copy(t.in, in)
			if t.stdinOnce {
				s.r.closeStdin(t.c)
			}
		}()
	}
	for {
		chunk, err := src.next()
		switch {
		case errors.Is(err, io.EOF):
			// The session ends with the container's output. The
			// streaming protocol carries no exit code for attach
			// (ServeAttach reports any error as an internal one), as
			// with containerd.
			return nil
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errAttachBehind):
			s.r.metrics.attachBehind.Inc()
			return err
		case err != nil:
			return err
		}
		// With a terminal everything is stdout; stderr goes only to a
		// session that asked for it.
		w := out
		if chunk.stream == frameStderr {
			w = errw
		}
		if w == nil {
			continue
		}
		if _, err := w.Write(chunk.data); err != nil {
			return err
		}
	}
}

// closeStdin closes a container's standard input (stdinOnce: its first
// attach session ended).
func (r *Runtime) closeStdin(c *container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.in != nil {
		c.in.close()
		c.in = nil
	}
}

// ttyAttr is the SysProcAttr of a container with a terminal: a session
// of its own with the terminal (its standard input) as the controlling
// one.
func ttyAttr(user *processCred) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	a.Credential = sysProcAttr(user).Credential
	return a
}
