package syncer

import (
	"context"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func (c execClient) UpdatePodVolumes(_ context.Context, pod *syncpodv1.Pod, cfg Config) ([]string, []string, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.volumeUpdates = append(c.f.volumeUpdates, &executorv1.UpdatePodVolumesRequest{Pod: pod, ConfigMaps: cfg.ConfigMaps, Secrets: cfg.Secrets})
	return nil, nil, nil
}

func (c execClient) RemovePodVolumes(_ context.Context, uid string) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.volumeRemovals = append(c.f.volumeRemovals, uid)
	return nil
}
