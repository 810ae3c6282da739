package syncer

import (
	"context"
	"strings"
	"time"

	"github.com/syncpod/syncpod/planner/podworkers"
	"github.com/syncpod/syncpod/planner/timeline"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// The syncer's side of the sync timelines (package timeline): triggers are
// noted with their source before the workers are asked, and every sync
// is handed its timeline, in which sync and apply mark their stages.

// timedSync is the workers' SyncFunc: one sync, timed.
func (s *Syncer) timedSync(ctx context.Context, uid string, slot *podworkers.Slot) (time.Time, error) {
	tl := s.tl.Begin(uid)
	wake, err := s.sync(ctx, uid, tl, slot)
	tl.End(err)
	return wake, err
}

// trigger asks for a sync of uid on behalf of source; eventAt is when the
// change a PLEG event reports happened (zero for other sources).
func (s *Syncer) trigger(uid, source string, eventAt time.Time) {
	s.tl.Triggered(uid, source, eventAt)
	s.workers.Trigger(uid)
}

// plegSource names a PLEG trigger: "pleg:CONTAINER_DIED".
func plegSource(t plegv1.PodLifecycleEventType) string {
	return timeline.SourcePLEG + strings.TrimPrefix(t.String(), "POD_LIFECYCLE_EVENT_TYPE_")
}

// Timeline is the recorder of this syncer's sync timelines.
func (s *Syncer) Timeline() *timeline.Recorder { return s.tl }

// storedSince reports whether pod was first stored after t: no planner
// before this one can have acted on it.
func storedSince(pod *syncpodv1.Pod, t time.Time) bool {
	return !t.IsZero() && pod.GetCreationTime() != nil && pod.GetCreationTime().AsTime().After(t)
}
