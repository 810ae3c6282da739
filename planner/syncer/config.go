package syncer

import (
	"context"
	"fmt"

	"github.com/syncpod/syncpod/planner/podsync"
	"github.com/syncpod/syncpod/planner/store"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// configFor reads the config objects pod references, in one transaction.
func (s *Syncer) configFor(ctx context.Context, pod *syncpodv1.Pod) (Config, error) {
	cms, secs := podsync.ConfigReferences(pod)
	if len(cms)+len(secs) == 0 {
		return Config{}, nil
	}
	c, x, err := s.opts.Store.ConfigFor(ctx, pod.GetNamespace(), cms, secs)
	if err != nil {
		return Config{}, fmt.Errorf("read config objects: %w", err)
	}
	return Config{ConfigMaps: c, Secrets: x}, nil
}

// refreshVolumes asks the executor to bring the pod's config-fed volumes
// up to date (nothing restarts; podsync.Work.RefreshVolumes decides when).
// Failures are logged: the files stay as they were and the next sync
// tries again.
func (s *Syncer) refreshVolumes(ctx context.Context, pod *syncpodv1.Pod) {
	cfg, err := s.configFor(ctx, pod)
	if err != nil {
		s.log.Warn("cannot read config objects for volume refresh", "pod_uid", pod.GetUid(), "err", err)
		return
	}
	rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	updated, errs, err := s.opts.Executor.UpdatePodVolumes(rctx, pod, cfg)
	if err != nil {
		s.log.Warn("volume refresh failed", "pod_uid", pod.GetUid(), "err", err)
		return
	}
	for _, v := range updated {
		s.log.Info("volume files updated in place", "pod_uid", pod.GetUid(), "volume", v)
	}
	for _, e := range errs {
		s.log.Warn("volume not refreshed", "pod_uid", pod.GetUid(), "err", e)
	}
}

// removeVolumes asks the executor to remove a gone pod's volume directory.
func (s *Syncer) removeVolumes(ctx context.Context, uid string) error {
	rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	if err := s.opts.Executor.RemovePodVolumes(rctx, uid); err != nil {
		return fmt.Errorf("executor remove volumes: %w", err)
	}
	return nil
}

// watchConfig syncs, after every ConfigMap or Secret change, the pods
// that reference config objects, so their volumes follow at once.
func (s *Syncer) watchConfig(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.opts.Store.ConfigChanged():
		}
		recs, err := s.opts.Store.List(ctx, store.Filter{})
		if err != nil {
			s.log.Warn("cannot list pods after a config change", "err", err)
			continue
		}
		for _, r := range recs {
			cms, secs := podsync.ConfigReferences(r.GetPod())
			if len(cms)+len(secs) > 0 {
				s.workers.Trigger(r.GetPod().GetUid())
			}
		}
	}
}
