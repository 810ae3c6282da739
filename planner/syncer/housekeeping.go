package syncer

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/store"
)

// housekeeping kills and removes runtime pods nobody wants any more, and
// removes dead containers and sandboxes that desired pods no longer need.
func (s *Syncer) housekeeping(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	list, err := s.opts.PLEG.ListPodStatuses(lctx, &plegv1.ListPodStatusesRequest{})
	cancel()
	if err != nil {
		s.log.Warn("housekeeping: cannot list runtime pods", "err", err)
		return
	}
	for _, o := range list.GetPods() {
		if ctx.Err() != nil {
			return
		}
		rec, err := s.opts.Store.Get(ctx, &plannerv1.PodRef{Uid: o.GetUid()})
		checked := time.Now()
		switch {
		case err == nil && rec.GetPod().GetDeletionTime() == nil:
			containers, sandboxes := garbage(o)
			if err := s.remove(ctx, containers, sandboxes); err != nil {
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
// over from a deletion while the planner was down).
//
// The list housekeeping works from is the PLEG's cache, up to a relist
// old: a pod its own worker has just removed (from the runtime, then from
// the store) is still listed, and no longer desired. So an orphan is acted
// on only as a status read after the store was found without the pod
// shows it: that status already reflects every removal finished before,
// and a pod removed meanwhile shows nothing left to do (issue 10).
func (s *Syncer) removeOrphan(ctx context.Context, uid string, notDesiredAt time.Time) {
	gctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	resp, err := s.opts.PLEG.GetPodStatus(gctx, &plegv1.GetPodStatusRequest{PodUid: uid, NewerThan: timestamppb.New(notDesiredAt)})
	cancel()
	if err != nil {
		s.log.Warn("housekeeping: cannot read the status of a pod that looks orphaned", "pod_uid", uid, "err", err)
		return
	}
	o := resp.GetObserved()
	if len(o.GetContainers())+len(o.GetSandboxes()) == 0 {
		s.log.Debug("housekeeping: pod no longer desired is already gone", "pod_uid", uid)
		return
	}
	log := s.log.With("pod_uid", uid, "pod", o.GetNamespace()+"/"+o.GetName())
	if anythingRunning(o) {
		// The executor needs a pod; only its identity matters for a kill,
		// the grace periods come from the containers' own annotations.
		pod := &syncpodv1.Pod{Uid: o.GetUid(), Name: o.GetName(), Namespace: o.GetNamespace(), Spec: &syncpodv1.PodSpec{}}
		actions := &syncpodv1.PodActions{KillPod: true, Message: "the pod is not desired (orphan)"}
		rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout+killTime(pod))
		_, err := s.opts.Executor.ApplyActions(rctx, &executorv1.ApplyActionsRequest{Pod: pod, Observed: o, Actions: actions})
		cancel()
		if err != nil {
			log.Warn("housekeeping: cannot kill orphaned pod", "err", err)
			return
		}
		log.Info("housekeeping: killed orphaned pod")
		s.m.orphans.Inc()
		return // removed on a later pass, once the PLEG sees it stopped
	}
	if err := s.remove(ctx, containerIDs(o), sandboxIDs(o)); err != nil {
		log.Warn("housekeeping: cannot remove orphaned pod", "err", err)
		return
	}
	if err := s.removeVolumes(ctx, uid); err != nil {
		log.Warn("housekeeping: cannot remove the volumes of an orphaned pod", "err", err)
		return
	}
	log.Info("housekeeping: removed orphaned pod")
}

// garbage lists what a desired pod no longer needs: exited containers
// beyond the newest exited instance of their name, and stopped sandboxes
// that are not the newest sandbox (their containers go with them). The
// newest dead instance is kept, as the kubelet's container GC keeps one
// per container: its exit code and finish time are the container's last
// termination state and drive restart decisions and back-off.
func garbage(o *syncpodv1.ObservedPod) (containers, sandboxes []string) {
	sbs, cs := plan.NewestFirst(o)
	removedSandbox := map[string]bool{}
	for i, sb := range sbs {
		if i > 0 && sb.GetState() != syncpodv1.SandboxState_SANDBOX_STATE_READY {
			sandboxes = append(sandboxes, sb.GetId())
			removedSandbox[sb.GetId()] = true
		}
	}
	keptDead := map[string]bool{}
	for _, c := range cs {
		if removedSandbox[c.GetSandboxId()] || c.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_EXITED {
			continue // goes with its sandbox, or is not dead
		}
		if keptDead[c.GetName()] {
			containers = append(containers, c.GetId())
		}
		keptDead[c.GetName()] = true
	}
	return containers, sandboxes
}
