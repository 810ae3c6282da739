package syncer

import (
	"context"
	"time"

	"github.com/syncpod/syncpod/planner/evictionplan"
	"github.com/syncpod/syncpod/planner/hostsignals"
	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/timeline"
	"github.com/syncpod/syncpod/proto/podresources"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// PodStatsReader reads the resource use of pods (the executor's
// ListPodStats, from the runtime's CRI stats; GRPCPodStats adapts its
// client).
type PodStatsReader interface {
	PodStats(ctx context.Context, uids []string) ([]*syncpodv1.PodStats, error)
}

// ImageReclaimer removes the images no container uses (the executor's
// RemoveUnusedImages).
type ImageReclaimer interface {
	RemoveUnusedImages(ctx context.Context) (removed int, freedBytes uint64, err error)
}

// Pressure configures eviction under node pressure. With no Host
// nothing is evicted for pressure.
type Pressure struct {
	// Thresholds are the hard and soft thresholds (evictionplan.Parse).
	Thresholds []evictionplan.Threshold
	// Host reads the node's signals.
	Host hostsignals.HostReader
	// Stats reads the pods' usage.
	Stats PodStatsReader
	// Images removes the unused images (GRPCImageReclaimer); nil: none
	// are.
	Images ImageReclaimer
	// TransitionPeriod is --eviction-pressure-transition-period.
	TransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds is --eviction-max-pod-grace-period, the
	// longest grace of an eviction for a soft threshold.
	MaxPodGracePeriodSeconds int64
}

// podCleanupTimeout is how long the loop waits for the pod it evicted to
// stop before it may evict another (the kubelet's podCleanupTimeout).
const podCleanupTimeout = 30 * time.Second

// pressureState is what the pressure loop keeps between rounds.
type pressureState struct {
	plan       evictionplan.State
	conditions []string
	// last is the pod the loop evicted last, and when.
	last   string
	lastAt time.Time
}

// PressureConditions are the pressure conditions the last round found
// (MemoryPressure, DiskPressure, PIDPressure), sorted.
func (s *Syncer) PressureConditions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.pressure.conditions...)
}

// NodeConditions are the three pressure conditions as the last round
// found them, with their reasons and the signals that caused them
// and whether the eviction manager runs at all (with none, all
// three are false).
func (s *Syncer) NodeConditions() ([]evictionplan.NodeCondition, bool) {
	p := s.opts.Pressure
	on := p.Host != nil && len(p.Thresholds) > 0
	s.mu.Lock()
	defer s.mu.Unlock()
	return evictionplan.NodeConditions(s.pressure.plan, s.pressure.conditions), on
}

// checkPressure is one round of the eviction manager: measure the
// node, decide, and evict at most one pod, after what the node can free
// by itself for a disk signal; when the round's emptyDir check evicted
// one (evictedLocally), only the observing is done.
func (s *Syncer) checkPressure(ctx context.Context, evictedLocally bool) {
	p := s.opts.Pressure
	if p.Host == nil || len(p.Thresholds) == 0 {
		return
	}
	sig, err := p.Host.Signals()
	if err != nil {
		s.log.Warn("eviction manager: cannot read the node's signals", "err", err)
	}
	now := time.Now()
	s.mu.Lock()
	prev := s.pressure
	s.mu.Unlock()
	o := evictionplan.Observe(prev.plan, evictionplan.Round{
		Thresholds: p.Thresholds, Signals: sig, Now: now, PressureTransitionPeriod: p.TransitionPeriod})
	s.mu.Lock()
	s.pressure.plan, s.pressure.conditions = o.State, o.Conditions
	s.mu.Unlock()
	th, ok := o.Reclaim()
	if !ok || evictedLocally {
		return
	}
	res := th.Signal.Resource()
	// The kubelet waits for the pod it evicted to stop before it looks
	// again; a round comes every check period instead.
	if prev.last != "" && now.Sub(prev.lastAt) < podCleanupTimeout && s.stillRunning(ctx, prev.last) {
		s.log.Debug("eviction manager: waiting for the last evicted pod to stop", "pod_uid", prev.last)
		return
	}
	s.log.Info("eviction manager: attempting to reclaim", "resource", res, "signal", string(th.Signal))
	if containers, images := evictionplan.NodeReclaim(th.Signal); containers || images {
		// the node's dead containers go first, then the images
		// nothing uses any more.
		if containers {
			s.housekeeping(ctx)
		}
		if images && p.Images != nil {
			rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
			n, freed, err := p.Images.RemoveUnusedImages(rctx)
			cancel()
			if err != nil {
				s.log.Warn("eviction manager: cannot remove the unused images", "err", err)
			} else {
				s.log.Info("eviction manager: removed unused images", "images", n, "freed_bytes", freed)
			}
		}
		if after, err := p.Host.Signals(); err == nil && len(evictionplan.Met(p.Thresholds, after, true)) == 0 {
			s.log.Info("eviction manager: reclaimed without evicting a pod", "resource", res)
			return
		}
	}
	pods, recs := s.evictionCandidates(ctx)
	if len(pods) == 0 {
		s.log.Warn("eviction manager: thresholds met but no pod to evict", "resource", res)
		return
	}
	ev, ok := evictionplan.Choose(o, sig, pods, p.MaxPodGracePeriodSeconds)
	if !ok {
		s.log.Warn("eviction manager: no pod can be evicted (only critical pods)", "resource", res)
		return
	}
	rec := recs[ev.Pod.UID]
	s.log.Info("evicting pod under node pressure", "pod_uid", ev.Pod.UID, "pod", ev.Pod.Namespace+"/"+ev.Pod.Name,
		"signal", string(ev.Signal), "grace_period_seconds", ev.GracePeriodSeconds, "message", ev.Message)
	grace := ev.GracePeriodSeconds
	s.mu.Lock()
	s.evictions[ev.Pod.UID] = eviction{generation: rec.GetPod().GetGeneration(), message: ev.Message, pressureGrace: &grace}
	s.pressure.last, s.pressure.lastAt = ev.Pod.UID, now
	s.mu.Unlock()
	s.m.evictions.WithLabelValues(string(ev.Signal)).Inc()
	s.trigger(ev.Pod.UID, timeline.SourceEviction, time.Time{})
}

// stillRunning says whether anything of pod uid still runs, as far as the
// PLEG knows.
func (s *Syncer) stillRunning(ctx context.Context, uid string) bool {
	rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	list, err := s.opts.PLEG.PodStatuses(rctx)
	if err != nil {
		return false
	}
	for _, o := range list {
		if o.GetUid() == uid {
			return anythingRunning(o)
		}
	}
	return false
}

func anythingRunning(o *syncpodv1.ObservedPod) bool {
	for _, c := range o.GetContainers() {
		if c.GetState() == syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
			return true
		}
	}
	return false
}

// evictionCandidates are the active pods (running or pending, not being
// deleted, not already evicted) with their usage, and their records.
func (s *Syncer) evictionCandidates(ctx context.Context) ([]evictionplan.Pod, map[string]*plannerv1.PodRecord) {
	all, err := s.opts.Store.List(ctx, store.Filter{})
	if err != nil {
		s.log.Warn("eviction manager: cannot list pods", "err", err)
		return nil, nil
	}
	recs := map[string]*plannerv1.PodRecord{}
	var uids []string
	for _, rec := range all {
		pod := rec.GetPod()
		switch rec.GetStatus().GetPhase() {
		case syncpodv1.PodPhase_POD_PHASE_RUNNING, syncpodv1.PodPhase_POD_PHASE_PENDING:
		default:
			continue
		}
		if pod.GetDeletionTime() != nil || s.evictionOf(pod) != "" {
			continue
		}
		recs[pod.GetUid()] = rec
		uids = append(uids, pod.GetUid())
	}
	if len(uids) == 0 {
		return nil, recs
	}
	stats := map[string]*syncpodv1.PodStats{}
	if s.opts.Pressure.Stats != nil {
		rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
		got, err := s.opts.Pressure.Stats.PodStats(rctx, uids)
		cancel()
		if err != nil {
			s.log.Warn("eviction manager: cannot read the pods' usage", "err", err)
		}
		for _, st := range got {
			stats[st.GetPodUid()] = st
		}
	}
	out := make([]evictionplan.Pod, 0, len(uids))
	for _, uid := range uids {
		out = append(out, candidate(recs[uid].GetPod(), stats[uid]))
	}
	return out, recs
}

// candidate is pod with its usage st (nil: not measured) as ranking
// sees it.
func candidate(pod *syncpodv1.Pod, st *syncpodv1.PodStats) evictionplan.Pod {
	prio := nodeshutdown.PriorityOf(pod)
	source := pod.GetAnnotations()[manifest.SourceAnnotation]
	c := evictionplan.Pod{
		UID: pod.GetUid(), Namespace: pod.GetNamespace(), Name: pod.GetName(), Priority: prio,
		Critical:                      prio >= nodeshutdown.SystemCriticalPriority || source == manifest.SourceFile,
		Measured:                      st != nil,
		MemoryBytes:                   int64(st.GetMemoryWorkingSetBytes()),
		MemoryRequest:                 podresources.PodRequests(pod, podresources.Options{}).Memory,
		TerminationGracePeriodSeconds: pod.GetSpec().TerminationGracePeriodSeconds,
	}
	if podresources.PodLevelSet(pod) {
		c.PodLevelMemoryRequest = pod.GetSpec().GetResources().GetRequests().GetMemory()
	}
	used := map[string]*syncpodv1.ContainerStats{}
	for _, cs := range st.GetContainers() {
		used[cs.GetName()] = cs
	}
	for _, ct := range append(append([]*syncpodv1.Container(nil), pod.GetSpec().GetContainers()...), pod.GetSpec().GetInitContainers()...) {
		req := ct.GetResources().GetRequests().GetMemory()
		if req == "" {
			req = ct.GetResources().GetLimits().GetMemory()
		}
		cs, ok := used[ct.GetName()]
		c.Containers = append(c.Containers, evictionplan.Container{
			Name: ct.GetName(), Measured: ok, MemoryBytes: int64(cs.GetMemoryWorkingSetBytes()),
			MemoryRequest: req, MemoryRequestBytes: podresources.Container(ct).Requests.Memory,
		})
	}
	return c
}
