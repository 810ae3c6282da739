package service

import (
	"context"

	"github.com/syncpod/syncpod/executor/validate"
	"github.com/syncpod/syncpod/executor/volumes"
	"github.com/syncpod/syncpod/internal/errgrpc"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

// UpdatePodVolumes rewrites the pod's config-fed volumes in place.
func (s *Service) UpdatePodVolumes(ctx context.Context, req *executorv1.UpdatePodVolumesRequest) (*executorv1.UpdatePodVolumesResponse, error) {
	if err := validate.UpdatePodVolumes(req); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	updated, errs, err := s.runner.UpdateVolumes(ctx, req.GetPod(), volumes.NewSources(req.GetConfigMaps(), req.GetSecrets()))
	if err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	resp := &executorv1.UpdatePodVolumesResponse{Updated: updated}
	for _, e := range errs {
		resp.Errors = append(resp.Errors, e.Error())
	}
	return resp, nil
}

// RemovePodVolumes removes a gone pod's volume directory.
func (s *Service) RemovePodVolumes(ctx context.Context, req *executorv1.RemovePodVolumesRequest) (*executorv1.RemovePodVolumesResponse, error) {
	if err := validate.RemovePodVolumes(req); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	if err := s.runner.RemoveVolumes(ctx, req.GetPodUid()); err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	return &executorv1.RemovePodVolumesResponse{}, nil
}

// GetEmptyDirUsage measures the disk use of the pod's emptyDir volumes.
func (s *Service) GetEmptyDirUsage(ctx context.Context, req *executorv1.GetEmptyDirUsageRequest) (*executorv1.GetEmptyDirUsageResponse, error) {
	if err := validate.GetEmptyDirUsage(req); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	used, err := s.runner.EmptyDirUsage(req.GetPodUid(), req.GetVolumeNames())
	if err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	resp := &executorv1.GetEmptyDirUsageResponse{}
	for i, n := range req.GetVolumeNames() {
		resp.Usages = append(resp.Usages, &executorv1.EmptyDirUsage{VolumeName: n, Bytes: used[i]})
	}
	return resp, nil
}
