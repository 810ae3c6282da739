package syncer

import (
	"context"
	"fmt"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"

	"github.com/syncpod/syncpod/planner/store"
)

// configReferences lists the ConfigMaps and Secrets pod names (volumes,
// projected sources, env and envFrom of every container).
func configReferences(pod *syncpodv1.Pod) (configMaps, secrets []string) {
	for _, v := range pod.GetSpec().GetVolumes() {
		configMaps = appendName(configMaps, v.GetConfigMap().GetName())
		secrets = appendName(secrets, v.GetSecret().GetSecretName())
		for _, p := range v.GetProjected().GetSources() {
			configMaps = appendName(configMaps, p.GetConfigMap().GetName())
			secrets = appendName(secrets, p.GetSecret().GetName())
		}
	}
	all := append(append([]*syncpodv1.Container(nil), pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...)
	for _, c := range all {
		for _, e := range c.GetEnvFrom() {
			configMaps = appendName(configMaps, e.GetConfigMapRef().GetName())
			secrets = appendName(secrets, e.GetSecretRef().GetName())
		}
		for _, e := range c.GetEnv() {
			configMaps = appendName(configMaps, e.GetValueFrom().GetConfigMapKeyRef().GetName())
			secrets = appendName(secrets, e.GetValueFrom().GetSecretKeyRef().GetName())
		}
	}
	return configMaps, secrets
}

func appendName(list []string, n string) []string {
	if n == "" {
		return list
	}
	for _, x := range list {
		if x == n {
			return list
		}
	}
	return append(list, n)
}

// hasUpdatableVolumes reports whether pod has volumes whose files follow
// config objects or the pod's metadata.
func hasUpdatableVolumes(pod *syncpodv1.Pod) bool {
	for _, v := range pod.GetSpec().GetVolumes() {
		if v.GetConfigMap() != nil || v.GetSecret() != nil || v.GetProjected() != nil || v.GetDownwardApi() != nil {
			return true
		}
	}
	return false
}

// configFor reads the config objects pod references, in one transaction.
func (s *Syncer) configFor(ctx context.Context, pod *syncpodv1.Pod) ([]*syncpodv1.ConfigMap, []*syncpodv1.Secret, error) {
	cms, secs := configReferences(pod)
	if len(cms)+len(secs) == 0 {
		return nil, nil, nil
	}
	c, x, err := s.opts.Store.ConfigFor(ctx, pod.GetNamespace(), cms, secs)
	if err != nil {
		return nil, nil, fmt.Errorf("read config objects: %w", err)
	}
	return c, x, nil
}

// refreshVolumes asks the executor to bring the pod's config-fed volumes
// up to date (nothing restarts). Failures are logged: the files stay as
// they were and the next sync tries again.
func (s *Syncer) refreshVolumes(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod) {
	if !hasUpdatableVolumes(pod) || !hasReadySandbox(observed) {
		return
	}
	cms, secs, err := s.configFor(ctx, pod)
	if err != nil {
		s.log.Warn("cannot read config objects for volume refresh", "pod_uid", pod.GetUid(), "err", err)
		return
	}
	rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	resp, err := s.opts.Executor.UpdatePodVolumes(rctx, &executorv1.UpdatePodVolumesRequest{Pod: pod, ConfigMaps: cms, Secrets: secs})
	if err != nil {
		s.log.Warn("volume refresh failed", "pod_uid", pod.GetUid(), "err", err)
		return
	}
	for _, v := range resp.GetUpdated() {
		s.log.Info("volume files updated in place", "pod_uid", pod.GetUid(), "volume", v)
	}
	for _, e := range resp.GetErrors() {
		s.log.Warn("volume not refreshed", "pod_uid", pod.GetUid(), "err", e)
	}
}

func hasReadySandbox(o *syncpodv1.ObservedPod) bool {
	for _, sb := range o.GetSandboxes() {
		if sb.GetState() == syncpodv1.SandboxState_SANDBOX_STATE_READY {
			return true
		}
	}
	return false
}

// removeVolumes asks the executor to remove a gone pod's volume directory.
func (s *Syncer) removeVolumes(ctx context.Context, uid string) error {
	rctx, cancel := context.WithTimeout(ctx, s.opts.RPCTimeout)
	defer cancel()
	if _, err := s.opts.Executor.RemovePodVolumes(rctx, &executorv1.RemovePodVolumesRequest{PodUid: uid}); err != nil {
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
			cms, secs := configReferences(r.GetPod())
			if len(cms)+len(secs) > 0 {
				s.workers.Trigger(r.GetPod().GetUid())
			}
		}
	}
}
