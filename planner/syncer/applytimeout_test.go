package syncer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// slowExec is the fake executor with every ApplyActions taking took, or
// ending early with its context.
type slowExec struct {
	execClient
	took time.Duration

	mu    sync.Mutex
	ended []error // each call's outcome: nil, or why it was cut short
}

func (s *slowExec) ApplyActions(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions, cfg Config) (*executorv1.ApplyActionsResponse, error) {
	t := time.NewTimer(s.took)
	defer t.Stop()
	var err error
	select {
	case <-t.C:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	s.ended = append(s.ended, err)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.execClient.ApplyActions(ctx, pod, observed, actions, cfg)
}

func (s *slowExec) outcomes() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.ended...)
}

// A pass the executor takes a minute over (a burst of pods on one
// runtime, a slow pull) runs to its end under the apply bound, where the
// other calls' bound (RPCTimeout, 5 s here) would have abandoned it; a
// bound shorter than the pass still ends it.
func TestASlowExecutorPassIsNotAbandonedAtTheOtherCallsTimeout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bound time.Duration
		want  error
	}{
		{name: "the default apply bound", want: nil},
		{name: "a bound shorter than the pass", bound: 30 * time.Second, want: context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := &slowExec{took: time.Minute}
				e := newEnvWith(t, func(o *Options) {
					slow.execClient = o.Executor.(execClient)
					o.Executor = slow
					o.ApplyTimeout = tc.bound
				})
				e.apply(t, webPod())
				time.Sleep(2 * time.Minute) // the bubble's clock: the pass's minute, and more
				settled(t, "the first ApplyActions ended", func() bool { return len(slow.outcomes()) >= 1 })
				if got := slow.outcomes()[0]; got != tc.want {
					t.Fatalf("the first pass ended with %v, want %v", got, tc.want)
				}
			})
		})
	}
}
