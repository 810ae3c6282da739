package syncer

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/timeline"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// termination is a pod the node's shutdown is ending: killed
// with grace seconds at its generation; done is closed once a sync finds
// nothing of it running (or it is gone).
type termination struct {
	generation int64
	grace      int64
	done       chan struct{}
}

// shutdownRun is a shutdown under way; done is closed when it ends.
type shutdownRun struct {
	done chan struct{}
	err  error
}

var (
	errShutdownOff = errgrpc.New(errgrpc.ErrFailedPrecondition,
		"graceful node shutdown is off: start syncpod-planner with --shutdown-grace-period or --shutdown-grace-period-by-pod-priority")
	errNotRunning = errgrpc.New(errgrpc.ErrUnavailable, "the sync loop is not running yet; retry")
)

// Admitting reports whether new pods are admitted: not from the start of
// a shutdown until it is cancelled.
func (s *Syncer) Admitting() bool {
	s.shutMu.Lock()
	defer s.shutMu.Unlock()
	return !s.closed
}

// ShutdownState is the node's shutdown state, nil when none.
func (s *Syncer) ShutdownState() *plannerv1.NodeShutdown {
	s.shutMu.Lock()
	defer s.shutMu.Unlock()
	if s.shutState == nil {
		return nil
	}
	return proto.Clone(s.shutState).(*plannerv1.NodeShutdown)
}

// CancelShutdown reopens admission, as logind's PrepareForShutdown(false)
// does the kubelet's: the pods already ended stay so, and the
// stored shutdown stays for the next start to restart them. A
// shutdown under way goes on to its end.
func (s *Syncer) CancelShutdown(ctx context.Context) (*plannerv1.NodeShutdown, error) {
	if len(s.opts.Shutdown.Periods()) == 0 {
		return nil, errShutdownOff
	}
	s.shutMu.Lock()
	s.closed = false
	st := s.shutState
	s.shutMu.Unlock()
	s.log.Info("node shutdown cancelled: admitting pods again")
	if st != nil && !st.GetCancelled() && s.ShutdownRunning() {
		// The run stores its state as it goes; it reads the flag there.
		return s.stateOrEmpty(), nil
	}
	if st != nil && !st.GetCancelled() {
		st = proto.Clone(st).(*plannerv1.NodeShutdown)
		st.Cancelled = true
		if err := s.saveShutdown(ctx, st); err != nil {
			return nil, errgrpc.Errorf(errgrpc.ErrInternal, "store the node shutdown's cancellation: %v", err)
		}
	}
	return s.stateOrEmpty(), nil
}

// ShutdownRunning reports whether a shutdown is under way.
func (s *Syncer) ShutdownRunning() bool {
	s.shutMu.Lock()
	defer s.shutMu.Unlock()
	return s.shutRun != nil
}

func (s *Syncer) stateOrEmpty() *plannerv1.NodeShutdown {
	if st := s.ShutdownState(); st != nil {
		return st
	}
	return &plannerv1.NodeShutdown{}
}

// Shutdown runs a graceful node shutdown, or waits for the one
// under way: admission closes, the shutdown is stored, then the pods still
// running are ended group by group, lowest priority first, each group
// waited for until its pods have stopped or its grace period has passed.
// The run belongs to the sync loop, not to ctx: a caller that gives up
// leaves it going. It returns the state once the shutdown is done.
func (s *Syncer) Shutdown(ctx context.Context, trigger string) (*plannerv1.NodeShutdown, error) {
	periods := s.opts.Shutdown.Periods()
	if len(periods) == 0 {
		return nil, errShutdownOff
	}
	s.shutMu.Lock()
	runCtx := s.runCtx
	if runCtx == nil {
		s.shutMu.Unlock()
		return nil, errNotRunning
	}
	if st := s.shutState; s.shutRun == nil && st.GetPhase() == plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE && !st.GetCancelled() {
		// Done and not cancelled: there is nothing left to end.
		s.shutMu.Unlock()
		return s.stateOrEmpty(), nil
	}
	run := s.shutRun
	if run == nil {
		run = &shutdownRun{done: make(chan struct{})}
		s.shutRun = run
		s.closed = true
		go func() {
			run.err = s.runShutdown(runCtx, periods, trigger)
			s.shutMu.Lock()
			s.shutRun = nil
			s.shutMu.Unlock()
			close(run.done)
		}()
	}
	s.shutMu.Unlock()
	select {
	case <-run.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if run.err != nil {
		return nil, run.err
	}
	return s.stateOrEmpty(), nil
}

// activePods are the pods a shutdown ends: stored, not terminal, not
// being deleted, sorted by namespace and name.
func (s *Syncer) activePods(ctx context.Context) ([]*syncpodv1.Pod, error) {
	recs, err := s.opts.Store.List(ctx, store.Filter{})
	if err != nil {
		return nil, err
	}
	var out []*syncpodv1.Pod
	for _, r := range recs {
		switch r.GetStatus().GetPhase() {
		case syncpodv1.PodPhase_POD_PHASE_SUCCEEDED, syncpodv1.PodPhase_POD_PHASE_FAILED:
			continue
		}
		if r.GetPod().GetDeletionTime() != nil {
			continue
		}
		out = append(out, r.GetPod())
	}
	return out, nil
}

// runShutdown is one shutdown: see Shutdown.
func (s *Syncer) runShutdown(ctx context.Context, periods []nodeshutdown.Period, trigger string) error {
	pods, err := s.activePods(ctx)
	if err != nil {
		return errgrpc.Errorf(errgrpc.ErrUnavailable, "list the pods to shut down: %v", err)
	}
	groups := nodeshutdown.Groups(periods, pods)
	s.shutMu.Lock()
	st := &plannerv1.NodeShutdown{}
	if s.shutState != nil {
		// An earlier shutdown, cancelled: its pods stay listed for the
		// next start to restart.
		st = proto.Clone(s.shutState).(*plannerv1.NodeShutdown)
	}
	s.shutMu.Unlock()
	st.Phase = plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_SHUTTING_DOWN
	st.StartedAt, st.EndedAt, st.Trigger, st.Cancelled = timestamppb.Now(), nil, trigger, false
	first := len(st.Groups)
	for _, g := range groups {
		pg := &plannerv1.NodeShutdownGroup{Priority: g.Priority, GracePeriodSeconds: g.GracePeriodSeconds}
		for _, m := range g.Members {
			p := m.Pod
			pg.Pods = append(pg.Pods, &plannerv1.NodeShutdownPod{Uid: p.GetUid(), Namespace: p.GetNamespace(), Name: p.GetName(),
				Generation: p.GetGeneration(), GracePeriodSeconds: m.GracePeriodSeconds})
		}
		st.Groups = append(st.Groups, pg)
	}
	// Stored before anything is killed.
	if err := s.saveShutdown(ctx, st); err != nil {
		s.shutMu.Lock()
		s.closed = false
		s.shutMu.Unlock()
		return errgrpc.Errorf(errgrpc.ErrInternal, "store the node shutdown: %v", err)
	}
	s.log.Info("node shutdown: ending pods by priority", "trigger", trigger, "pods", len(pods), "groups", len(groups),
		"budget", nodeshutdown.Total(periods).String())
	for i, g := range groups {
		pg := st.Groups[first+i]
		if len(g.Members) == 0 {
			continue // an empty group is not waited for
		}
		pg.StartedAt = timestamppb.Now()
		dones := make([]chan struct{}, 0, len(g.Members))
		for _, m := range g.Members {
			dones = append(dones, s.terminate(m.Pod, m.GracePeriodSeconds))
		}
		pg.TimedOut = !waitAll(ctx, dones, time.Duration(g.GracePeriodSeconds)*time.Second)
		pg.EndedAt = timestamppb.Now()
		s.log.Info("node shutdown: group done", "priority", g.Priority, "grace_period_seconds", g.GracePeriodSeconds,
			"pods", len(g.Members), "timed_out", pg.TimedOut)
		if err := s.saveShutdown(ctx, st); err != nil {
			s.log.Warn("node shutdown: cannot store its progress", "err", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	st.Phase, st.EndedAt = plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_DONE, timestamppb.Now()
	if err := s.saveShutdown(ctx, st); err != nil {
		return errgrpc.Errorf(errgrpc.ErrInternal, "store the node shutdown: %v", err)
	}
	s.m.shutdownEnd.Set(float64(st.GetEndedAt().AsTime().UnixNano()) / 1e9)
	s.log.Info("node shutdown done", "took", st.GetEndedAt().AsTime().Sub(st.GetStartedAt().AsTime()).String())
	return nil
}

// saveShutdown stores st and makes it the current state.
func (s *Syncer) saveShutdown(ctx context.Context, st *plannerv1.NodeShutdown) error {
	s.shutMu.Lock()
	st.Cancelled = !s.closed // a cancel during the run
	s.shutMu.Unlock()
	if err := s.opts.Store.SetNodeShutdown(ctx, st); err != nil {
		return err
	}
	s.shutMu.Lock()
	s.shutState = proto.Clone(st).(*plannerv1.NodeShutdown)
	s.shutMu.Unlock()
	if st.GetPhase() == plannerv1.NodeShutdownPhase_NODE_SHUTDOWN_PHASE_SHUTTING_DOWN && st.GetEndedAt() == nil {
		s.m.shutdownStart.Set(float64(st.GetStartedAt().AsTime().UnixNano()) / 1e9)
	}
	return nil
}

// waitAll waits for every channel of dones to close, at most d; it
// reports whether they all did.
func waitAll(ctx context.Context, dones []chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, done := range dones {
		select {
		case <-done:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// terminate marks pod for the shutdown with grace and syncs it; the
// returned channel closes once nothing of it runs.
func (s *Syncer) terminate(pod *syncpodv1.Pod, grace int64) chan struct{} {
	s.mu.Lock()
	t, ok := s.terminations[pod.GetUid()]
	if !ok {
		t = termination{generation: pod.GetGeneration(), grace: grace, done: make(chan struct{})}
		s.terminations[pod.GetUid()] = t
	}
	s.mu.Unlock()
	s.log.Debug("node shutdown: ending pod", "pod_uid", pod.GetUid(), "pod", pod.GetNamespace()+"/"+pod.GetName(), "grace_period_seconds", grace)
	s.trigger(pod.GetUid(), timeline.SourceShutdown, time.Time{})
	return t.done
}

// shutdownGraceOf is the grace the shutdown kills pod with, nil when the
// shutdown is not ending it (at this generation).
func (s *Syncer) shutdownGraceOf(pod *syncpodv1.Pod) *int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.terminations[pod.GetUid()]
	if !ok || t.generation != pod.GetGeneration() {
		return nil
	}
	g := t.grace
	return &g
}

// terminated records that nothing of the pod runs any more: the shutdown
// stops waiting for it.
func (s *Syncer) terminated(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.terminations[uid]
	if !ok {
		return
	}
	select {
	case <-t.done:
	default:
		close(t.done)
	}
}

// recoverShutdown runs when the sync loop starts, before any pod is
// synced: a stored shutdown means the node went down (or the
// planner was restarted) after it; the pods it ended at their current
// generation restart per their restart policy: Always and OnFailure have
// their status cleared, Never stay Failed. One transaction clears those
// statuses and the shutdown, so a crash meanwhile redoes it whole and no
// pod starts twice.
func (s *Syncer) recoverShutdown(ctx context.Context) error {
	st, err := s.opts.Store.NodeShutdown(ctx)
	if err != nil || st == nil {
		return err
	}
	restart := map[string]func(*plannerv1.PodRecord) bool{}
	for _, g := range st.GetGroups() {
		for _, p := range g.GetPods() {
			gen := p.GetGeneration()
			restart[p.GetUid()] = func(rec *plannerv1.PodRecord) bool { return restartsAfterShutdown(rec, gen) }
		}
	}
	cleared, err := s.opts.Store.EndNodeShutdown(ctx, restart)
	if err != nil {
		return err
	}
	s.log.Info("node shutdown found at start: restarting the pods it ended per their restart policy",
		"shutdown_phase", st.GetPhase().String(), "ended_pods", len(restart), "restarted", len(cleared))
	return nil
}

// restartsAfterShutdown reports whether rec, ended by a shutdown at
// generation gen, starts again.
func restartsAfterShutdown(rec *plannerv1.PodRecord, gen int64) bool {
	st, pod := rec.GetStatus(), rec.GetPod()
	if pod.GetGeneration() != gen || pod.GetDeletionTime() != nil || st.GetReason() != nodeshutdown.Reason ||
		st.GetPhase() != syncpodv1.PodPhase_POD_PHASE_FAILED {
		return false
	}
	return pod.GetSpec().GetRestartPolicy() != syncpodv1.RestartPolicy_RESTART_POLICY_NEVER
}
