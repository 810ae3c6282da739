package runner

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/volumes"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ApplyActionsWithSources is ApplyActions for a pod that reads ConfigMaps
// and Secrets: src holds the ones the planner found (volumes, env,
// envFrom); one missing from src is missing for the pod.
func (r *Runner) ApplyActionsWithSources(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions, src volumes.Sources) (*executorv1.ApplyActionsResponse, error) {
	return r.applyActions(ctx, pod, observed, actions, src)
}

// UpdateVolumes rewrites pod's configMap, secret, projected and
// downwardAPI volumes whose content changed (an atomic swap; nothing
// restarts). It returns the rewritten volumes and per-volume errors.
func (r *Runner) UpdateVolumes(ctx context.Context, pod *syncpodv1.Pod, src volumes.Sources) ([]string, []error, error) {
	if r.volumes == nil {
		return nil, nil, nil
	}
	release, err := r.lockPod(ctx, pod.GetUid())
	if err != nil {
		return nil, nil, err
	}
	defer release()
	updated, errs := r.volumes.Update(pod, src)
	for _, v := range updated {
		r.log.Info("volume content updated", "pod_uid", pod.GetUid(), "volume", v)
	}
	return updated, errs, nil
}

// RemoveVolumes removes the pod's volume directory (once the pod is gone).
func (r *Runner) RemoveVolumes(ctx context.Context, uid string) error {
	if r.volumes == nil {
		return nil
	}
	release, err := r.lockPod(ctx, uid)
	if err != nil {
		return err
	}
	defer release()
	return r.volumes.Remove(uid)
}

// containerVolumesAndEnv sets up the pod's volumes, then resolves c's
// environment and its mounts. The error is the kubelet's
// CreateContainerConfigError message (a *volumes.MountError for a volume
// that could not be set up).
func (p *pass) containerVolumesAndEnv(ctx context.Context, c *syncpodv1.Container) ([]*runtimeapi.Mount, []*runtimeapi.KeyValue, error) {
	paths := volumes.Paths{}
	if hasHostVolumes(p.pod) {
		if p.r.volumes == nil {
			return nil, nil, errors.New("the executor has no pod directory (--pod-dir) for volumes")
		}
		var err error
		if paths, err = p.r.volumes.Setup(p.pod, p.src); err != nil {
			return nil, nil, err
		}
	}
	info := volumes.PodInfo{NodeName: p.r.nodeName, HostIP: p.r.hostIP, Volumes: paths}
	if needsPodIP(c) {
		st, err := p.rt.PodSandboxStatus(ctx, p.sandboxID, false)
		if err != nil {
			return nil, nil, fmt.Errorf("read the sandbox's IP: %w", err)
		}
		info.PodIP = st.GetStatus().GetNetwork().GetIp()
		if info.PodIP == "" && p.pod.GetSpec().GetHostNetwork() {
			info.PodIP = p.r.hostIP
		}
	}
	env, err := volumes.Env(p.pod, c, p.src, info)
	if err != nil {
		return nil, nil, err
	}
	// The mounts come after the environment, which subPathExpr reads
	//
	mounts, err := volumes.Mounts(p.pod, c, paths, p.imageVolumeSpecs(), env)
	if err != nil {
		return nil, nil, err
	}
	return mounts, env, nil
}

func needsPodIP(c *syncpodv1.Container) bool {
	for _, e := range c.GetEnv() {
		switch e.GetValueFrom().GetFieldRef().GetFieldPath() {
		case "status.podIP", "status.podIPs":
			return true
		}
	}
	return false
}

// EmptyDirUsage measures the disk use of the pod's emptyDir volumes names
// (0 for one never set up; all 0 when the runner has no volume manager).
// It takes no pod lock: a measure racing a write is as good as du's.
func (r *Runner) EmptyDirUsage(uid string, names []string) ([]int64, error) {
	out := make([]int64, len(names))
	if r.volumes == nil {
		return out, nil
	}
	for i, n := range names {
		b, err := r.volumes.EmptyDirUsage(uid, n)
		if err != nil {
			return nil, fmt.Errorf("measure emptyDir %q: %w", n, err)
		}
		out[i] = b
	}
	return out, nil
}
