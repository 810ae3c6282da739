package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/events"
	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/podworkers"
	"github.com/syncpod/syncpod/planner/prober"
	"github.com/syncpod/syncpod/planner/status"
	"github.com/syncpod/syncpod/planner/store"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Options configure a Syncer.
type Options struct {
	// Store holds the desired pods. Required.
	Store *store.Store
	// PLEG is the PLEG service. Required.
	PLEG plegv1.PlegServiceClient
	// Executor is the executor service. Required.
	Executor executorv1.ExecutorServiceClient
	// ResyncPeriod resyncs every pod this often (default 10 s).
	ResyncPeriod time.Duration
	// HousekeepingPeriod is how often orphans and dead containers are
	// cleaned up (default 10 s).
	HousekeepingPeriod time.Duration
	// RPCTimeout bounds each call to the PLEG or the executor, including
	// GetPodStatus's wait for a fresh status (default 30 s).
	RPCTimeout time.Duration
	// Logger; default discard.
	Logger *slog.Logger
	// Registerer receives the sync loop's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Syncer runs the sync loop. Create with New, run with Run.
type Syncer struct {
	opts    Options
	log     *slog.Logger
	workers *podworkers.Workers
	probes  *prober.Manager
	m       *metrics

	mu       sync.Mutex
	started  time.Time            // when Run began: no status older than this is acted on
	lastSync map[string]time.Time // uid → when the last executor call for it ended
	seen     map[string]seenPod   // uid → what of the pod last triggered a sync
}

// seenPod is what of a stored pod is worth a sync when it changes.
type seenPod struct {
	generation int64
	deleting   bool
}

// New returns a syncer.
func New(opts Options) (*Syncer, error) {
	if opts.Store == nil || opts.PLEG == nil || opts.Executor == nil {
		return nil, errors.New("syncer: Store, PLEG and Executor are required")
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 10 * time.Second
	}
	if opts.HousekeepingPeriod <= 0 {
		opts.HousekeepingPeriod = 10 * time.Second
	}
	if opts.RPCTimeout <= 0 {
		opts.RPCTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Syncer{
		opts:     opts,
		log:      opts.Logger,
		lastSync: map[string]time.Time{},
		seen:     map[string]seenPod{},
	}
	m, err := newMetrics(opts.Registerer, s)
	if err != nil {
		return nil, err
	}
	s.m = m
	s.workers = podworkers.New(s.sync, podworkers.Options{
		Logger:  opts.Logger,
		Observe: m.observeSync,
	})
	s.probes = prober.New(prober.Options{
		Exec:     executorExec{opts.Executor},
		OnChange: s.workers.Trigger,
		Logger:   opts.Logger,
	})
	return s, nil
}

// Run runs the loop until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	s.mu.Lock()
	s.started = time.Now()
	s.mu.Unlock()
	defer s.probes.Stop()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.workers.Run(ctx) })
	g.Go(func() error { return s.watchStore(ctx) })
	g.Go(func() error { s.watchPLEG(ctx); return nil })
	g.Go(func() error { s.every(ctx, s.opts.ResyncPeriod, s.resyncAll); return nil })
	g.Go(func() error { s.every(ctx, s.opts.HousekeepingPeriod, s.housekeeping); return nil })
	g.Go(func() error { s.watchConfig(ctx); return nil })
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func (s *Syncer) every(ctx context.Context, period time.Duration, fn func(context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

// resyncAll triggers a sync of every stored pod.
func (s *Syncer) resyncAll(ctx context.Context) {
	recs, err := s.opts.Store.List(ctx, store.Filter{})
	if err != nil {
		s.log.Warn("resync: cannot list pods", "err", err)
		return
	}
	for _, r := range recs {
		s.workers.Trigger(r.GetPod().GetUid())
	}
}

// watchStore triggers syncs for new pods and for changes of spec or
// deletion; status and event writes (the syncs' own) trigger nothing.
func (s *Syncer) watchStore(ctx context.Context) error {
	sub, err := s.opts.Store.Subscribe(ctx, store.Filter{})
	if err != nil {
		return fmt.Errorf("watch the pod store: %w", err)
	}
	defer sub.Close()
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch the pod store: %w", err)
		}
		for _, ev := range evs {
			pod := ev.GetRecord().GetPod()
			uid := pod.GetUid()
			switch ev.GetType() {
			case plannerv1.WatchEventType_WATCH_EVENT_TYPE_RESYNC:
				s.resyncAll(ctx)
			case plannerv1.WatchEventType_WATCH_EVENT_TYPE_DELETED:
				s.forget(uid)
			default:
				now := seenPod{generation: pod.GetGeneration(), deleting: pod.GetDeletionTime() != nil}
				s.mu.Lock()
				before, known := s.seen[uid]
				s.seen[uid] = now
				s.mu.Unlock()
				if !known || before != now {
					s.workers.Trigger(uid)
				}
			}
		}
	}
}

// watchPLEG follows the PLEG's lifecycle events, reconnecting with back-off;
// after every (re)connection every pod is resynced, since events may have
// been missed meanwhile.
func (s *Syncer) watchPLEG(ctx context.Context) {
	delay := 500 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := s.opts.PLEG.Watch(ctx, &plegv1.WatchRequest{})
		if err == nil {
			s.resyncAll(ctx)
			for {
				var resp *plegv1.WatchResponse
				resp, err = stream.Recv()
				if err != nil {
					break
				}
				delay = 500 * time.Millisecond
				ev := resp.GetEvent()
				switch ev.GetType() {
				case plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_RESYNC:
					s.resyncAll(ctx)
				case plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED:
					// removals trigger no sync.
				default:
					if s.known(ev.GetPodUid()) {
						s.workers.Trigger(ev.GetPodUid())
					}
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.m.plegReconnects.Inc()
		s.log.Warn("PLEG watch lost; reconnecting", "err", err, "retry_in", delay.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 30*time.Second)
	}
}

func (s *Syncer) known(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.seen[uid]
	return ok
}

func (s *Syncer) forget(uid string) {
	s.workers.Forget(uid)
	s.probes.Remove(uid)
	s.mu.Lock()
	delete(s.seen, uid)
	delete(s.lastSync, uid)
	s.mu.Unlock()
}

// sync is one pod's sync. It returns when the pod wants to be synced
// again (an executor back-off expiring), or an error to retry with back-off.
func (s *Syncer) sync(ctx context.Context, uid string) (time.Time, error) {
	rec, err := s.opts.Store.Get(ctx, &plannerv1.PodRef{Uid: uid})
	if errors.Is(err, store.ErrNotFound) {
		s.forget(uid)
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read pod: %w", err)
	}
	pod := rec.GetPod()
	observed, err := s.podStatus(ctx, uid)
	if err != nil {
		return time.Time{}, err
	}
	if pod.GetDeletionTime() != nil {
		return s.terminate(ctx, rec, observed)
	}

	s.probes.Sync(pod, observed)
	probes := s.probes.Results(uid)
	now := time.Now()
	current := status.Compute(status.Input{Pod: pod, Observed: observed, Previous: rec.GetStatus(), Probes: probes, Now: now})

	var actions *syncpodv1.PodActions
	if isTerminal(current.GetPhase()) {
		// Finished pods are not re-planned (computePodActions would keep
		// killing and re-creating the sandbox); stop what still runs.
		if anythingRunning(observed) {
			actions = &syncpodv1.PodActions{KillPod: true, KillPodReason: syncpodv1.KillPodReason_KILL_POD_REASON_NOTHING_TO_RUN,
				Message: "the pod has finished"}
		}
	} else {
		actions = plan.Compute(pod, observed, probes)
	}

	var wake time.Time
	var steps []*executorv1.StepResult
	if actions != nil && !plan.IsEmpty(actions) {
		resp, err := s.apply(ctx, pod, observed, actions)
		if err != nil {
			return time.Time{}, err
		}
		steps = resp.GetSteps()
		if t := resp.GetRetryAt(); t != nil {
			wake = t.AsTime()
		}
		current = status.Compute(status.Input{Pod: pod, Observed: observed, Previous: rec.GetStatus(), Steps: steps, Probes: probes, Now: time.Now()})
	}
	if !isTerminal(current.GetPhase()) {
		// Config-fed volumes follow their ConfigMaps, Secrets and the
		// pod's metadata whatever else this sync did (a pod with a
		// container in back-off has actions on every sync).
		s.refreshVolumes(ctx, pod, observed)
	}
	if _, err := s.opts.Store.UpdateStatus(ctx, uid, current); err != nil && !errors.Is(err, store.ErrNotFound) {
		return time.Time{}, fmt.Errorf("write status: %w", err)
	}
	return wake, nil
}

// podStatus asks the PLEG for a status newer than this pod's last executor
// call (or, for a pod not acted on since Run began, newer than that: the
// PLEG outlives a planner restart and may hold a status older than what a
// previous planner did), so a sync never acts twice on a stale picture.
func (s *Syncer) podStatus(ctx context.Context, uid string) (*syncpodv1.ObservedPod, error) {
	s.mu.Lock()
	newer, ok := s.lastSync[uid]
	if !ok {
		newer = s.started
	}
	s.mu.Unlock()
	req := &plegv1.GetPodStatusRequest{PodUid: uid}
	if !newer.IsZero() {
		req.NewerThan = timestamppb.New(newer)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	resp, err := s.opts.PLEG.GetPodStatus(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("PLEG status: %w", err)
	}
	return resp.GetObserved(), nil
}

// apply hands a change set to the executor and records its events and the
// actions; the next sync then waits for a status newer than this moment.
func (s *Syncer) apply(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions) (*executorv1.ApplyActionsResponse, error) {
	uid := pod.GetUid()
	cms, secs, err := s.configFor(ctx, pod)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout+killTime(pod))
	resp, err := s.opts.Executor.ApplyActions(rctx, &executorv1.ApplyActionsRequest{Pod: pod, Observed: observed, Actions: actions,
		ConfigMaps: cms, Secrets: secs})
	cancel()
	// Whatever the outcome, the runtime may have changed (a call that
	// timed out may still have created containers): the next sync waits
	// for a status taken after this moment.
	done := time.Now()
	s.mu.Lock()
	s.lastSync[uid] = done
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	if evs := events.FromApplyResult(pod, actions, resp, done); len(evs) > 0 {
		if err := s.opts.Store.AppendEvents(ctx, uid, evs); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("write events: %w", err)
		}
	}
	if err := s.opts.Store.SetLastActions(ctx, uid, actions); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("write actions: %w", err)
	}
	return resp, nil
}

// killTime is the longest a kill of the pod may take: its grace period.
func killTime(pod *syncpodv1.Pod) time.Duration {
	g := int64(store.DefaultGracePeriodSeconds)
	if pod.GetSpec().TerminationGracePeriodSeconds != nil {
		g = pod.GetSpec().GetTerminationGracePeriodSeconds()
	}
	if pod.DeletionGracePeriodSeconds != nil {
		g = pod.GetDeletionGracePeriodSeconds()
	}
	return time.Duration(max(g, 2)) * time.Second
}

// terminate drives a deleted pod to removal: kill what runs, then remove
// every container and sandbox, then drop the pod from the store.
func (s *Syncer) terminate(ctx context.Context, rec *plannerv1.PodRecord, observed *syncpodv1.ObservedPod) (time.Time, error) {
	pod := rec.GetPod()
	uid := pod.GetUid()
	s.probes.Remove(uid)
	if anythingRunning(observed) {
		actions := &syncpodv1.PodActions{KillPod: true, Message: "the pod was deleted"}
		resp, err := s.apply(ctx, pod, observed, actions)
		if err != nil {
			return time.Time{}, err
		}
		if failed := failedSteps(resp); failed != "" {
			// Retried with the pod's error back-off, not at once: a
			// container that cannot be stopped must not make this spin.
			return time.Time{}, fmt.Errorf("killing the deleted pod: %s", failed)
		}
		// Come back at once: the next status must show everything stopped.
		return time.Now(), nil
	}
	if err := s.remove(ctx, containerIDs(observed), sandboxIDs(observed)); err != nil {
		return time.Time{}, err
	}
	if err := s.removeVolumes(ctx, uid); err != nil {
		return time.Time{}, err
	}
	if err := s.opts.Store.Remove(ctx, uid); err != nil && !errors.Is(err, store.ErrNotFound) {
		return time.Time{}, fmt.Errorf("remove pod: %w", err)
	}
	s.log.Info("pod removed", "pod_uid", uid, "pod", pod.GetNamespace()+"/"+pod.GetName())
	s.forget(uid)
	return time.Time{}, nil
}

// remove asks the executor to remove containers and sandboxes; any that
// could not be removed is an error (the caller retries).
func (s *Syncer) remove(ctx context.Context, containers, sandboxes []string) error {
	if len(containers)+len(sandboxes) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	resp, err := s.opts.Executor.RemoveResources(ctx, &executorv1.RemoveResourcesRequest{ContainerIds: containers, SandboxIds: sandboxes})
	if err != nil {
		return fmt.Errorf("executor remove: %w", err)
	}
	var errs []error
	for _, r := range resp.GetResults() {
		kind := "container"
		if r.GetSandbox() {
			kind = "sandbox"
		}
		if r.GetOutcome() != executorv1.Outcome_OUTCOME_SUCCEEDED {
			errs = append(errs, fmt.Errorf("remove %s %s: %s", kind, r.GetId(), r.GetMessage()))
			continue
		}
		s.m.removed.WithLabelValues(kind).Inc()
	}
	return errors.Join(errs...)
}

// failedSteps describes the steps of resp that failed, "" when none did.
func failedSteps(resp *executorv1.ApplyActionsResponse) string {
	var out []string
	for _, st := range resp.GetSteps() {
		if st.GetOutcome() == executorv1.Outcome_OUTCOME_FAILED {
			out = append(out, fmt.Sprintf("%s %s: %s %s", st.GetStep(), st.GetTarget(), st.GetReason(), st.GetMessage()))
		}
	}
	return strings.Join(out, "; ")
}

func isTerminal(p syncpodv1.PodPhase) bool {
	return p == syncpodv1.PodPhase_POD_PHASE_SUCCEEDED || p == syncpodv1.PodPhase_POD_PHASE_FAILED
}

func anythingRunning(o *syncpodv1.ObservedPod) bool {
	for _, c := range o.GetContainers() {
		if c.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
			return true
		}
	}
	for _, sb := range o.GetSandboxes() {
		if sb.GetState() == syncpodv1.SandboxState_SANDBOX_STATE_READY {
			return true
		}
	}
	return false
}

func containerIDs(o *syncpodv1.ObservedPod) []string {
	ids := make([]string, 0, len(o.GetContainers()))
	for _, c := range o.GetContainers() {
		ids = append(ids, c.GetId())
	}
	return ids
}

func sandboxIDs(o *syncpodv1.ObservedPod) []string {
	ids := make([]string, 0, len(o.GetSandboxes()))
	for _, sb := range o.GetSandboxes() {
		ids = append(ids, sb.GetId())
	}
	return ids
}

// executorExec runs exec probes through the executor's ExecSync.
type executorExec struct {
	c executorv1.ExecutorServiceClient
}

func (e executorExec) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (int32, error) {
	resp, err := e.c.ExecSync(ctx, &executorv1.ExecSyncRequest{ContainerId: containerID, Command: cmd, Timeout: durationpb.New(timeout)})
	if grpcstatus.Code(err) == codes.DeadlineExceeded {
		return 0, context.DeadlineExceeded
	}
	return resp.GetExitCode(), err
}
