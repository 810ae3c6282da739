// Package daemon is what syncpod's long-running services have in common
// as libraries: each is a package (plannerd, executord, plegd, noded,
// crisimd) whose Run is the whole service, flags included, so that its
// binary's main is a few lines and several services, and several nodes'
// worth of them, can run in one process (syncpod-all).
//
// A service run through Run keeps everything it owns to itself: its flags
// (its own flag set, parsed from Env.Args and Env.Getenv), logger,
// Prometheus registry, listeners, databases and goroutines. It installs no
// signal handler, never exits the process and changes no process-wide
// setting (the default slog logger, klog's logger, GOMAXPROCS, the memory
// limit, the umask): the process that runs it decides when it stops, by
// ending the context given to Run. The one thing its servers share with the
// others in the process is the Go heap, whose free memory services/server
// returns to the kernel once for the whole process.
package daemon

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/syncpod/syncpod/services/server"
)

// Env is what a service gets from the process it runs in.
type Env struct {
	// Args are the service's command-line arguments, without the
	// program name.
	Args []string
	// Getenv looks up the environment (the SYNCPOD_<FLAG> variables);
	// nil reads none.
	Getenv func(string) string
	// Stdout and Stderr are the service's output: its log goes to
	// Stderr. nil discards.
	Stdout, Stderr io.Writer
	// Ready, when set, is called once the service listens: a client may
	// connect from then on. It is not called when the service fails to
	// start.
	Ready func()
	// Term, when set, closes on the process's SIGTERM for a service that
	// does something before it stops (syncpod-node --shutdown-on-sigterm
	// shuts the node's pods down first, then returns); a service that
	// does nothing of the kind stops on it as on the end of ctx.
	Term <-chan struct{}
	// Local, when set, is shared by the services of the process: crisim,
	// the executor, PLEG and planner offer their services in it and the
	// executor and PLEG (crisim's CRI), the planner and the node agent
	// call them through it, in-process instead of through their sockets
	// (server.Local). nil: sockets only.
	Local *server.Local
}

// Normal fills what e leaves unset: no environment, no output.
func (e Env) Normal() Env {
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	return e
}

// Context is ctx ended also by Term: the context of a service that
// does nothing before it stops. Call stop when done with it.
func (e Env) Context(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	if e.Term != nil {
		go func() {
			select {
			case <-e.Term:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// ReadyNow calls e.Ready if it is set.
func (e Env) ReadyNow() {
	if e.Ready != nil {
		e.Ready()
	}
}

// Main runs one service as a binary's main does: with the process's
// arguments, environment and output, and returns its exit status. SIGINT
// ends the service's context; SIGTERM closes Env.Term, and a second
// SIGTERM ends the context too.
func Main(run func(context.Context, Env) int) int {
	return MainArgs(run, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
}

// MainArgs is Main with the arguments, environment and output given.
func MainArgs(run func(context.Context, Env) int, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, term, stop := Signals()
	defer stop()
	return run(ctx, Env{Args: args, Getenv: getenv, Stdout: stdout, Stderr: stderr, Term: term})
}

// Signals are the process's SIGINT and SIGTERM as services take them: ctx
// ends on SIGINT (or a second SIGTERM), term closes on the first SIGTERM.
// stop ends ctx and stops listening.
func Signals() (ctx context.Context, term <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	t := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		closed := false
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				if s == syscall.SIGTERM && !closed {
					close(t)
					closed = true
					continue
				}
				cancel()
				return
			}
		}
	}()
	return ctx, t, func() { signal.Stop(sigs); cancel() }
}
