package syncer

import (
	"context"
	"errors"
	"time"

	"github.com/syncpod/syncpod/planner/podsync"
	"github.com/syncpod/syncpod/planner/store"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// housekeeping kills and removes runtime pods nobody wants any more, and
// removes dead containers and sandboxes that desired pods no longer need.
func (s *Syncer) housekeeping(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	list, err := s.opts.PLEG.PodStatuses(lctx)
	cancel()
	if err != nil {
		s.log.Warn("housekeeping: cannot list runtime pods", "err", err)
		return
	}
	for _, o := range list {
		if ctx.Err() != nil {
			return
		}
		rec, err := s.opts.Store.Get(ctx, &plannerv1.PodRef{Uid: o.GetUid()})
		checked := time.Now()
		switch {
		case err == nil && rec.GetPod().GetDeletionTime() == nil:
			if err := s.remove(ctx, podsync.Garbage(o, rec.GetPod())); err != nil {
				s.log.Warn("housekeeping: cannot remove dead containers", "pod_uid", o.GetUid(), "err", err)
			}
		case err == nil:
			// Terminating: its own sync removes everything.
		case errors.Is(err, store.ErrNotFound):
			s.removeOrphan(ctx, o.GetUid(), checked)
		default:
			s.log.Warn("housekeeping: cannot read pod", "pod_uid", o.GetUid(), "err", err)
		}
	}
}

// removeOrphan kills and removes a runtime pod that is not desired (left
// over from a deletion while the planner was down): podsync.Step with no
// record decides, the kill goes through the same apply path as any sync.
//
// The list housekeeping works from is the PLEG's cache, up to a relist
// old: a pod its own worker has just removed (from the runtime, then from
// the store) is still listed, and no longer desired. So an orphan is acted
// on only as a status read after the store was found without the pod
// shows it: that status already reflects every removal finished before,
// and a pod removed meanwhile shows nothing left to do, so it is not
// removed a second time.
func (s *Syncer) removeOrphan(ctx context.Context, uid string, notDesiredAt time.Time) {
	gctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	o, err := s.opts.PLEG.PodStatus(gctx, uid, notDesiredAt)
	cancel()
	if err != nil {
		s.log.Warn("housekeeping: cannot read the status of a pod that looks orphaned", "pod_uid", uid, "err", err)
		return
	}
	log := s.log.With("pod_uid", uid, "pod", o.GetNamespace()+"/"+o.GetName())
	w := podsync.Step(podsync.Input{Observed: o, Now: time.Now()})
	switch {
	case w.Apply != nil:
		// An orphan's kill is no pod's sync: no timeline to mark.
		if _, err := s.apply(ctx, nil, w.Pod, o, w.Apply); err != nil {
			log.Warn("housekeeping: cannot kill orphaned pod", "err", err)
			return
		}
		log.Info("housekeeping: killed orphaned pod")
		s.m.orphans.Inc()
		// Removed on a later pass, once the PLEG sees it stopped.
	case w.Remove.Empty():
		log.Debug("housekeeping: pod no longer desired is already gone")
	default:
		if err := s.remove(ctx, w.Remove); err != nil {
			log.Warn("housekeeping: cannot remove orphaned pod", "err", err)
			return
		}
		if w.RemoveVolumes {
			if err := s.removeVolumes(ctx, uid); err != nil {
				log.Warn("housekeeping: cannot remove the volumes of an orphaned pod", "err", err)
				return
			}
		}
		log.Info("housekeeping: removed orphaned pod")
	}
}
