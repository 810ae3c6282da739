package syncer

import (
	"context"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func (c execClient) UpdatePodVolumes(ctx context.Context, pod *syncpodv1.Pod, cfg Config) ([]string, []string, error) {
	_, err := c.f.UpdatePodVolumes(ctx, &executorv1.UpdatePodVolumesRequest{Pod: pod, ConfigMaps: cfg.ConfigMaps, Secrets: cfg.Secrets})
	return nil, nil, err
}

func (c execClient) RemovePodVolumes(ctx context.Context, uid string) error {
	_, err := c.f.RemovePodVolumes(ctx, &executorv1.RemovePodVolumesRequest{PodUid: uid})
	return err
}
