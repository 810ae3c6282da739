package syncer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/syncpod/syncpod/internal/periodic"
	"github.com/syncpod/syncpod/planner/events"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	"github.com/syncpod/syncpod/planner/podsync"
	"github.com/syncpod/syncpod/planner/podworkers"
	"github.com/syncpod/syncpod/planner/prober"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/timeline"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Options configure a Syncer.
type Options struct {
	// Store holds the desired pods. Required.
	Store *store.Store
	// PLEG is the PLEG (GRPCPLEG adapts its client). Required.
	PLEG PLEG
	// Executor is the executor (GRPCExecutor adapts its client). Required.
	Executor Executor
	// ResyncPeriod syncs each pod again this long after its last sync,
	// plus up to half as much at random, one pod at a time (the kubelet's
	// syncFrequency and its requeue after every sync, R-11.7; default
	// 1 min).
	ResyncPeriod time.Duration
	// HousekeepingPeriod is how often orphans and dead containers are
	// cleaned up (default 10 s).
	HousekeepingPeriod time.Duration
	// RPCTimeout bounds each call to the PLEG or the executor, including
	// GetPodStatus's wait for a fresh status (default 30 s), but
	// ApplyActions.
	RPCTimeout time.Duration
	// ApplyTimeout bounds an ApplyActions call, a kill's grace period
	// added (default DefaultApplyTimeout): long enough for the executor's
	// own bounds of the runtime calls of one pass (an image pull, a
	// sandbox) to end a slow one, rather than the planner abandoning
	// work the executor is still doing.
	ApplyTimeout time.Duration
	// MaxConcurrentSyncs bounds the pod syncs running at once (default
	// podworkers.DefaultMaxConcurrent): a sync that starts containers
	// leaves the bound once its call to the executor returned, a kill at
	// once.
	MaxConcurrentSyncs int
	// Logger; default discard.
	Logger *slog.Logger
	// Registerer receives the sync loop's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Timeline records each sync's stages (GetPod's last_sync); nil makes
	// one registered on Registerer.
	Timeline *timeline.Recorder
	// EmptyDirs measures emptyDir volumes for the eviction check of their
	// sizeLimit; nil: no check.
	EmptyDirs EmptyDirMeter
	// EvictionCheckPeriod is how often the eviction check runs (default
	// 10 s, the kubelet's eviction monitoring interval).
	EvictionCheckPeriod time.Duration
	// Shutdown is the node's graceful shutdown configuration;
	// the zero value turns it off.
	Shutdown nodeshutdown.Config
	// Pressure is eviction under node pressure, checked every
	// EvictionCheckPeriod; the zero value turns it off.
	Pressure Pressure
	// SidecarsStayDown stops terminating pods as the kubelet does: a
	// sidecar that exits before its turn to stop stays down. By default it
	// is started again until its turn (R-30, podsync.Input).
	SidecarsStayDown bool
}

// Syncer runs the sync loop. Create with New, run with Run.
type Syncer struct {
	opts    Options
	log     *slog.Logger
	workers *podworkers.Workers
	probes  *prober.Manager
	m       *metrics
	tl      *timeline.Recorder

	mu       sync.Mutex
	started  time.Time            // when Run began: no status older than this is acted on
	lastSync map[string]time.Time // uid → when the last executor call for it ended
	seen     map[string]seenPod   // uid → what of the pod last triggered a sync
	// evictions are the pods the eviction check found over a limit.
	evictions map[string]eviction
	// pressure is the eviction manager's state between rounds.
	pressure pressureState
	// terminations are the pods the node's shutdown is ending.
	terminations map[string]termination

	ahead sync.WaitGroup // the status requests askAhead made

	shutMu    sync.Mutex
	runCtx    context.Context         // Run's: a shutdown's run outlives its caller
	closed    bool                    // admission is closed
	shutRun   *shutdownRun            // the shutdown under way
	shutState *plannerv1.NodeShutdown // the last stored shutdown
}

// seenPod is what of a stored pod is worth a sync when it changes.
type seenPod struct {
	generation int64
	deleting   bool
	// metadata fingerprints the labels and annotations, which change
	// without a new generation: a change syncs the pod at once, so its
	// downwardAPI volume files follow at that sync, not the next resync.
	metadata uint64
}

// metadataFingerprint is FNV-64a over the pod's labels and annotations,
// sorted, each key and value length-prefixed.
func metadataFingerprint(pod *syncpodv1.Pod) uint64 {
	h := fnv.New64a()
	var n [binary.MaxVarintLen64]byte
	put := func(s string) {
		_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		_, _ = h.Write([]byte(s))
	}
	for _, m := range []map[string]string{pod.GetLabels(), pod.GetAnnotations()} {
		keys := slices.Sorted(maps.Keys(m))
		put(strconv.Itoa(len(keys)))
		for _, k := range keys {
			put(k)
			put(m[k])
		}
	}
	return h.Sum64()
}

// New returns a syncer.
func New(opts Options) (*Syncer, error) {
	if opts.Store == nil || opts.PLEG == nil || opts.Executor == nil {
		return nil, errors.New("syncer: Store, PLEG and Executor are required")
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = time.Minute
	}
	if opts.HousekeepingPeriod <= 0 {
		opts.HousekeepingPeriod = 10 * time.Second
	}
	if opts.EvictionCheckPeriod <= 0 {
		opts.EvictionCheckPeriod = 10 * time.Second
	}
	if opts.RPCTimeout <= 0 {
		opts.RPCTimeout = 30 * time.Second
	}
	if opts.ApplyTimeout <= 0 {
		opts.ApplyTimeout = DefaultApplyTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Syncer{
		opts:      opts,
		log:       opts.Logger,
		lastSync:  map[string]time.Time{},
		seen:      map[string]seenPod{},
		evictions: map[string]eviction{},

		terminations: map[string]termination{},
	}
	m, err := newMetrics(opts.Registerer, func() float64 { return float64(s.workers.Known()) })
	if err != nil {
		return nil, err
	}
	s.m = m
	if s.tl = opts.Timeline; s.tl == nil {
		if s.tl, err = timeline.New(opts.Registerer, nil); err != nil {
			return nil, err
		}
	}
	s.workers = podworkers.New(s.timedSync, podworkers.Options{
		Logger:        opts.Logger,
		Observe:       m.observeSync,
		Resync:        opts.ResyncPeriod,
		MaxConcurrent: opts.MaxConcurrentSyncs,
		OnResync:      func(uid string) { s.tl.Triggered(uid, timeline.SourceResync, time.Time{}) },
	})
	s.probes = prober.New(prober.Options{
		Exec:        opts.Executor,
		OnChange:    func(uid string) { s.trigger(uid, timeline.SourceProbe, time.Time{}) },
		Logger:      opts.Logger,
		OnUnhealthy: s.unhealthy,
	})
	return s, nil
}

// Run runs the loop until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	// Before any pod is synced: what a shutdown ended restarts per its
	// restart policy.
	if err := s.recoverShutdown(ctx); err != nil {
		return fmt.Errorf("recover the node shutdown: %w", err)
	}
	s.mu.Lock()
	s.started = time.Now()
	s.mu.Unlock()
	defer s.probes.Stop()
	defer s.ahead.Wait() // after the workers: they end with ctx, and so do these
	g, ctx := errgroup.WithContext(ctx)
	s.shutMu.Lock()
	s.runCtx = ctx
	s.shutMu.Unlock()
	g.Go(func() error { return s.workers.Run(ctx) })
	g.Go(func() error { return s.watchStore(ctx) })
	g.Go(func() error { s.watchPLEG(ctx); return nil })
	g.Go(func() error { periodic.Run(ctx, s.opts.HousekeepingPeriod, func() { s.housekeeping(ctx) }); return nil })
	g.Go(func() error {
		periodic.Run(ctx, s.opts.EvictionCheckPeriod, func() {
			// As the kubelet's round: a local-storage eviction ends it
			// once the signals are observed.
			s.checkPressure(ctx, s.checkEmptyDirs(ctx))
		})
		return nil
	})
	g.Go(func() error { s.watchConfig(ctx); return nil })
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// resyncAll triggers a sync of every stored pod: after the PLEG's or the
// store's stream was lost, when events may have been missed. (The
// periodic resync is each pod's own: podworkers' Resync.)
func (s *Syncer) resyncAll(ctx context.Context) {
	recs, err := s.opts.Store.List(ctx, store.Filter{})
	if err != nil {
		s.log.Warn("resync: cannot list pods", "err", err)
		return
	}
	for _, r := range recs {
		s.trigger(r.GetPod().GetUid(), timeline.SourceResync, time.Time{})
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
				now := seenPod{generation: pod.GetGeneration(), deleting: pod.GetDeletionTime() != nil, metadata: metadataFingerprint(pod)}
				s.mu.Lock()
				before, known := s.seen[uid]
				s.seen[uid] = now
				s.mu.Unlock()
				if !known || before != now {
					s.trigger(uid, timeline.SourceStore, time.Time{})
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
		stream, err := s.opts.PLEG.Watch(ctx)
		if err == nil {
			s.resyncAll(ctx)
			for {
				var ev *plegv1.PodLifecycleEvent
				ev, err = stream.Recv()
				if err != nil {
					break
				}
				delay = 500 * time.Millisecond
				switch ev.GetType() {
				case plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_RESYNC:
					s.resyncAll(ctx)
				case plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED:
					// removals trigger no sync.
				default:
					if s.known(ev.GetPodUid()) {
						s.trigger(ev.GetPodUid(), plegSource(ev.GetType()), ev.GetTime().AsTime())
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
	s.tl.Forget(uid)
	s.mu.Lock()
	delete(s.seen, uid)
	delete(s.lastSync, uid)
	delete(s.evictions, uid)
	s.mu.Unlock()
	s.terminated(uid) // gone: the shutdown waits no more for it
}

// sync is one pod's sync: podsync.Step decides, this carries the work
// out, marking its stages on tl and releasing slot, its place in the
// workers' bound, when it goes on to wait for something that does not
// load the node. It returns when the pod wants to be synced again (an
// executor back-off expiring), or an error to retry with back-off.
func (s *Syncer) sync(ctx context.Context, uid string, tl *timeline.Sync, slot *podworkers.Slot) (time.Time, error) {
	rec, err := s.opts.Store.Get(ctx, &plannerv1.PodRef{Uid: uid})
	if errors.Is(err, store.ErrNotFound) {
		s.forget(uid)
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read pod: %w", err)
	}
	pod := rec.GetPod()
	endRead := tl.Stage(timeline.StageStatusRead)
	observed, err := s.podStatus(ctx, pod)
	endRead()
	if err != nil {
		return time.Time{}, err
	}
	var probes []*syncpodv1.ContainerProbeResults
	if pod.GetDeletionTime() != nil {
		s.probes.Remove(uid)
	} else {
		s.probes.SyncFrom(pod, observed, rec.GetStatus())
		probes = s.probes.Results(uid)
	}
	evicted, pressureGrace := s.evictionAndGraceOf(pod)
	in := podsync.Input{Record: rec, Observed: observed, Probes: probes, Now: time.Now(), Evicted: evicted,
		PressureGracePeriod: pressureGrace, NodeShutdown: s.shutdownGraceOf(pod), SidecarsStayDown: s.opts.SidecarsStayDown}
	endPlan := tl.Stage(timeline.StagePlan)
	w := podsync.Step(in)
	endPlan()
	// a pod the shutdown ends whose sync has nothing to kill
	// has stopped (once its status is committed below).
	stopped := in.NodeShutdown != nil && w.Apply == nil && w.Err == nil
	if w.Apply != nil {
		if w.Apply.GetKillPod() {
			// A kill lasts up to the grace period: it must not hold one of
			// the sync bound's places that other pods' syncs wait for.
			slot.Release()
		}
		resp, err := s.apply(ctx, tl, w.Pod, observed, w.Apply)
		// Whatever the outcome, the runtime may have changed (a call that
		// timed out may still have created containers): the next sync
		// waits for a status taken after this moment.
		done := time.Now()
		s.mu.Lock()
		s.lastSync[uid] = done
		s.mu.Unlock()
		if err != nil {
			return time.Time{}, err
		}
		switch {
		case pod.GetDeletionTime() == nil && changedRuntime(resp):
			// The status stored with this call's events is read after
			// it, so a pod whose containers just started is stored
			// Running now, not by the next sync (see statusAfter). Its
			// CRI work is done: other pods' syncs need not wait on the
			// PLEG's answer for their place in the bound.
			slot.Release()
			if fresh, ok := s.statusAfter(ctx, tl, pod); ok {
				in.Observed = fresh
				s.probes.SyncFrom(pod, fresh, rec.GetStatus())
				in.Probes = s.probes.Results(uid)
			}
		case len(resp.GetSteps()) > 0:
			s.askAhead(ctx, uid, done)
		}
		in.Applied, in.Now = &podsync.Applied{Actions: w.Apply, Result: resp}, done
		w = podsync.Step(in)
	}
	if w.RefreshVolumes {
		s.refreshVolumes(ctx, pod)
	}
	if w.Commits() {
		endWrite := tl.Stage(timeline.StageStatusWritten)
		_, err := s.opts.Store.CommitSync(ctx, uid, store.SyncCommit{Events: w.Events, LastActions: w.LastActions, Status: w.Status})
		endWrite()
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return time.Time{}, fmt.Errorf("write the sync's status and events: %w", err)
		}
	}
	if w.Err != nil {
		return time.Time{}, w.Err
	}
	if stopped {
		s.terminated(uid)
	}
	if err := s.remove(ctx, w.Remove); err != nil {
		return time.Time{}, err
	}
	if w.RemoveVolumes {
		if err := s.removeVolumes(ctx, uid); err != nil {
			return time.Time{}, err
		}
	}
	if w.Drop {
		if err := s.opts.Store.Remove(ctx, uid); err != nil && !errors.Is(err, store.ErrNotFound) {
			return time.Time{}, fmt.Errorf("remove pod: %w", err)
		}
		s.log.Info("pod removed", "pod_uid", uid, "pod", pod.GetNamespace()+"/"+pod.GetName())
		s.forget(uid)
	}
	return w.Wake, nil
}

// podStatus asks the PLEG for a status newer than this pod's last executor
// call (or, for a pod not acted on since Run began, newer than that: the
// PLEG outlives a planner restart and may hold a status older than what a
// previous planner did), so a sync never acts twice on a stale picture.
// A pod first stored after Run began needs neither: nothing has acted on
// it, so any status will do (asking for a newer one cost a new pod an
// on-demand relist, two CRI list calls, before its first CRI call).
func (s *Syncer) podStatus(ctx context.Context, pod *syncpodv1.Pod) (*syncpodv1.ObservedPod, error) {
	uid := pod.GetUid()
	s.mu.Lock()
	newer, ok := s.lastSync[uid]
	if !ok && !storedSince(pod, s.started) {
		newer = s.started
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	o, err := s.opts.PLEG.PodStatus(ctx, uid, newer)
	if err != nil {
		return nil, fmt.Errorf("PLEG status: %w", err)
	}
	return o, nil
}

// statusAfterTimeout bounds statusAfter's wait: past it the sync stores
// the status it planned from, as before the call, and the next sync (the
// PLEG's request stays queued) stores the newer one.
const statusAfterTimeout = 2 * time.Second

// statusAfter reads the pod's status again after an executor call that
// changed the runtime (a status newer than the call: the PLEG relists the
// pod for it, R-13.7, or an event of the call answers it). The kubelet
// stores the status it computed before SyncPod acted, and reports the
// containers it started only at its next sync, when the PLEG's event
// about them is handled; here that next sync had to wait for this one's
// commit of a status already out of date, then read the new status and
// commit again (a second bbolt fsync), all before a watcher (syncpod-node
// patching the API server) heard of the start. Reading it here costs the
// same relist the next sync would have waited for, and the next sync finds
// nothing left to store. ok is false when it could not be read in time.
func (s *Syncer) statusAfter(ctx context.Context, tl *timeline.Sync, pod *syncpodv1.Pod) (*syncpodv1.ObservedPod, bool) {
	end := tl.Stage(timeline.StageStatusAfter)
	defer end()
	ctx, cancel := context.WithTimeout(ctx, min(s.opts.RPCTimeout, statusAfterTimeout))
	defer cancel()
	o, err := s.podStatus(ctx, pod)
	if err != nil {
		s.log.Debug("reading the status after an executor call failed; storing the one from before it",
			"pod_uid", pod.GetUid(), "err", err)
		return nil, false
	}
	return o, true
}

// changedRuntime reports whether an executor call changed the runtime: a
// step of it succeeded (a sandbox or container created and started, a
// container killed, a hook run).
func changedRuntime(resp *executorv1.ApplyActionsResponse) bool {
	for _, st := range resp.GetSteps() {
		if st.GetOutcome() == executorv1.Outcome_OUTCOME_SUCCEEDED {
			return true
		}
	}
	return false
}

// askAhead asks the PLEG, without waiting for the answer, for the status
// the pod's next sync will need: one newer than its executor call that
// ended at done. The PLEG relists the pod for it while this sync
// writes its own status, as the kubelet requests a pod relist in the
// postSync of every SyncPod that did something; the next sync, usually
// already triggered by the runtime's events of that call, then finds the
// status read or being read. (Asked only at the next sync, the relist
// took 7-22 ms of the path from a container's start to its Running
// status on containerd 2.4.)
func (s *Syncer) askAhead(ctx context.Context, uid string, done time.Time) {
	s.ahead.Add(1)
	go func() {
		defer s.ahead.Done()
		ctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
		defer cancel()
		if _, err := s.opts.PLEG.PodStatus(ctx, uid, done); err != nil && ctx.Err() == nil {
			s.log.Debug("asking ahead for a pod's status failed; its next sync asks again", "pod_uid", uid, "err", err)
		}
	}()
}

// apply hands a change set to the executor: the one way anything is
// applied, for desired pods and orphans alike. The call and the CRI calls
// the executor reports are stages of tl (nil: not recorded).
func (s *Syncer) apply(ctx context.Context, tl *timeline.Sync, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions) (*executorv1.ApplyActionsResponse, error) {
	cfg, err := s.configFor(ctx, pod)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.ApplyTimeout+killTime(pod))
	defer cancel()
	endExec := tl.Stage(timeline.StageExecutor)
	resp, err := s.opts.Executor.ApplyActions(ctx, pod, observed, actions, cfg)
	endExec()
	tl.CRICalls(resp.GetCriCalls())
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	return resp, nil
}

// DefaultApplyTimeout is the default bound of an ApplyActions call: the
// executor's default bounds of an image pull (10 min) and of one more
// runtime call (2 min, the kubelet's runtime request timeout). A pass on
// a loaded node can take well over the other calls' 30 s (a burst of
// pods on one runtime); abandoned, its work is redone by the next sync.
const DefaultApplyTimeout = 12 * time.Minute

// killTime is the longest a kill of the pod may take: its grace period.
func killTime(pod *syncpodv1.Pod) time.Duration {
	g := validation.PodGracePeriodSeconds(pod)
	return time.Duration(max(g, validation.MinGracePeriodSeconds)) * time.Second
}

// remove asks the executor to remove containers and sandboxes; any that
// could not be removed is an error (the caller retries).
func (s *Syncer) remove(ctx context.Context, r podsync.Removal) error {
	if r.Empty() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	results, err := s.opts.Executor.RemoveResources(ctx, r)
	if err != nil {
		return fmt.Errorf("executor remove: %w", err)
	}
	var errs []error
	for _, r := range results {
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

// unhealthy records the kubelet's Warning Unhealthy event of a failed
// probe attempt, with the probe's output.
func (s *Syncer) unhealthy(uid, container, message string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.RPCTimeout)
	defer cancel()
	rec, err := s.opts.Store.Get(ctx, &plannerv1.PodRef{Uid: uid})
	if err != nil {
		return // deleted meanwhile
	}
	ev := events.New(rec.GetPod(), syncpodv1.EventType_EVENT_TYPE_WARNING, "Unhealthy", container, message, time.Now())
	if err := s.opts.Store.AppendEvents(ctx, uid, []*syncpodv1.Event{ev}); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.opts.Logger.Warn("cannot record a probe event", "pod_uid", uid, "container", container, "err", err)
	}
}
