package crisim

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/syncpod/syncpod/proto/fielderr"
)

// simSpec is what a simulated container's annotations ask for.
type simSpec struct {
	exitAfter  time.Duration
	hasExit    bool
	exitCode   int32
	ignoreTerm bool
}

// parseSimSpec reads the simulated-mode annotations, reporting every bad
// value at once.
func parseSimSpec(ann map[string]string) (simSpec, error) {
	var s simSpec
	var l fielderr.List
	if v, ok := ann[AnnotationExitAfter]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			l.Add(fmt.Sprintf("config.annotations[%q]", AnnotationExitAfter), "%s is not a non-negative Go duration", fielderr.Quote(v))
		}
		s.exitAfter, s.hasExit = d, true
	}
	if v, ok := ann[AnnotationExitCode]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 || n > 255 {
			l.Add(fmt.Sprintf("config.annotations[%q]", AnnotationExitCode), "%s is not an exit code 0-255", fielderr.Quote(v))
		}
		s.exitCode = int32(n)
	}
	if v, ok := ann[AnnotationIgnoreSIGTERM]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			l.Add(fmt.Sprintf("config.annotations[%q]", AnnotationIgnoreSIGTERM), "%s is not a boolean", fielderr.Quote(v))
		}
		s.ignoreTerm = b
	}
	return s, l.Err()
}

// simRunner is a simulated container: a timer at most.
type simRunner struct {
	r    *Runtime
	c    *container
	spec simSpec
	done chan struct{}
	once sync.Once

	mu    sync.Mutex
	timer *time.Timer
}

// startSimulated starts c, to exit on its own after exitAfter if its
// annotations ask for that; mu is held by the caller.
func (r *Runtime) startSimulated(c *container, exitAfter time.Duration) *simRunner {
	s := &simRunner{r: r, c: c, spec: c.sim, done: make(chan struct{})}
	if s.spec.hasExit {
		s.mu.Lock()
		s.timer = time.AfterFunc(max(exitAfter, 0), func() { s.exit(s.spec.exitCode) })
		s.mu.Unlock()
	}
	return s
}

func (s *simRunner) reopenLog(context.Context) error {
	if s.c.log == nil {
		return nil
	}
	return s.c.log.reopen()
}

func (s *simRunner) exit(code int32) {
	s.once.Do(func() {
		s.mu.Lock()
		t := s.timer
		s.mu.Unlock()
		if t != nil {
			t.Stop()
		}
		s.r.recordExit(s.c, code, "", "")
		close(s.done)
	})
}

// stopTimer cancels an exit-after that has not fired (seed.go).
func (s *simRunner) stopTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}

func (s *simRunner) exited() <-chan struct{} { return s.done }

func (s *simRunner) kill() { s.exit(137) }

func (s *simRunner) stop(ctx context.Context, timeout time.Duration) error {
	if !s.spec.ignoreTerm {
		s.exit(143)
		return nil
	}
	if timeout > 0 {
		if exited, err := graceWait(ctx, s.done, timeout); exited || err != nil {
			return err
		}
	}
	s.exit(137)
	return nil
}
