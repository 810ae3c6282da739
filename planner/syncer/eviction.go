package syncer

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/syncpod/syncpod/planner/status"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/timeline"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// EmptyDirMeter measures the disk use of a pod's emptyDir volumes (the
// executor's GetEmptyDirUsage; GRPCExecutor's value implements it).
type EmptyDirMeter interface {
	// EmptyDirUsage returns the bytes used by each volume of names, in
	// order.
	EmptyDirUsage(ctx context.Context, uid string, names []string) ([]int64, error)
}

// eviction is a pod the eviction check found over a limit: it holds for
// the generation it was found at (an update starts afresh).
type eviction struct {
	generation int64
	message    string
	// pressureGrace is set for an eviction under node pressure:
	// the kill's grace period.
	pressureGrace *int64
}

// sizedEmptyDir is a disk emptyDir with a sizeLimit.
type sizedEmptyDir struct {
	name, limit string
	bytes       int64
}

// sizedEmptyDirs lists pod's disk emptyDirs that set a sizeLimit (memory
// ones are bounded by their tmpfs's size).
func sizedEmptyDirs(pod *syncpodv1.Pod) []sizedEmptyDir {
	var out []sizedEmptyDir
	for _, v := range pod.GetSpec().GetVolumes() {
		ed := v.GetEmptyDir()
		if ed == nil || ed.GetSizeLimit() == "" || ed.GetMedium() == syncpodv1.StorageMedium_STORAGE_MEDIUM_MEMORY {
			continue
		}
		q, err := resource.ParseQuantity(ed.GetSizeLimit())
		if err != nil {
			continue // validation refuses it; nothing to enforce
		}
		out = append(out, sizedEmptyDir{name: v.GetName(), limit: ed.GetSizeLimit(), bytes: q.Value()})
	}
	return out
}

// checkEmptyDirs is the eviction manager's local-storage check, off the
// sync path: every running pod's sized disk emptyDirs are measured by the
// executor, and a pod with one over its limit is marked evicted and synced
// (podsync fails it with reason Evicted and kills it). It says whether it
// evicted any.
func (s *Syncer) checkEmptyDirs(ctx context.Context) bool {
	if s.opts.EmptyDirs == nil {
		return false
	}
	recs, err := s.opts.Store.List(ctx, store.Filter{})
	if err != nil {
		s.log.Warn("eviction check: cannot list pods", "err", err)
		return false
	}
	evicted := false
	for _, rec := range recs {
		if ctx.Err() != nil {
			return evicted
		}
		evicted = s.checkPod(ctx, rec) || evicted
	}
	return evicted
}

func (s *Syncer) checkPod(ctx context.Context, rec *plannerv1.PodRecord) bool {
	pod := rec.GetPod()
	switch rec.GetStatus().GetPhase() {
	case syncpodv1.PodPhase_POD_PHASE_RUNNING, syncpodv1.PodPhase_POD_PHASE_PENDING:
	default:
		return false // never started, or finished
	}
	dirs := sizedEmptyDirs(pod)
	if len(dirs) == 0 || pod.GetDeletionTime() != nil || s.evictionOf(pod) != "" {
		return false
	}
	names := make([]string, len(dirs))
	for i, d := range dirs {
		names[i] = d.name
	}
	rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	used, err := s.opts.EmptyDirs.EmptyDirUsage(rctx, pod.GetUid(), names)
	cancel()
	if err != nil || len(used) != len(dirs) {
		s.log.Warn("eviction check: cannot measure emptyDir volumes", "pod_uid", pod.GetUid(), "err", err)
		return false
	}
	for i, d := range dirs {
		if used[i] <= d.bytes {
			continue
		}
		msg := status.EmptyDirOverLimitMessage(d.name, d.limit)
		s.log.Info("evicting pod: emptyDir over its sizeLimit", "pod_uid", pod.GetUid(),
			"pod", pod.GetNamespace()+"/"+pod.GetName(), "volume", d.name, "used_bytes", used[i], "limit_bytes", d.bytes)
		s.mu.Lock()
		s.evictions[pod.GetUid()] = eviction{generation: pod.GetGeneration(), message: msg}
		s.mu.Unlock()
		s.trigger(pod.GetUid(), timeline.SourceEviction, time.Time{})
		return true
	}
	return false
}

// evictionOf is the eviction message for pod's generation, "" when none.
func (s *Syncer) evictionOf(pod *syncpodv1.Pod) string {
	msg, _ := s.evictionAndGraceOf(pod)
	return msg
}

// evictionAndGraceOf is the eviction message for pod's generation ("" when
// none) and, for an eviction under node pressure, its grace period.
func (s *Syncer) evictionAndGraceOf(pod *syncpodv1.Pod) (string, *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.evictions[pod.GetUid()]; ok && e.generation == pod.GetGeneration() {
		return e.message, e.pressureGrace
	}
	return "", nil
}
