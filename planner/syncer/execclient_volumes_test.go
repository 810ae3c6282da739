package syncer

import (
	"context"

	"google.golang.org/grpc"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

func (c execClient) UpdatePodVolumes(_ context.Context, in *executorv1.UpdatePodVolumesRequest, _ ...grpc.CallOption) (*executorv1.UpdatePodVolumesResponse, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.volumeUpdates = append(c.f.volumeUpdates, in)
	return &executorv1.UpdatePodVolumesResponse{}, nil
}

func (c execClient) RemovePodVolumes(_ context.Context, in *executorv1.RemovePodVolumesRequest, _ ...grpc.CallOption) (*executorv1.RemovePodVolumesResponse, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.volumeRemovals = append(c.f.volumeRemovals, in.GetPodUid())
	return &executorv1.RemovePodVolumesResponse{}, nil
}
