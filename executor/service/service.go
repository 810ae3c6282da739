package service

import (
	"context"
	"github.com/syncpod/syncpod/executor/validate"
	"github.com/syncpod/syncpod/internal/errgrpc"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/volumes"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
)

// Service implements executorv1.ExecutorServiceServer.
type Service struct {
	executorv1.UnsafeExecutorServiceServer
	runner *runner.Runner
	store  *backoff.Store
	clock  backoff.Clock
	log    *slog.Logger
}

// New returns the executor service over a runner and the back-off store.
// clock nil means the wall clock; logger nil discards.
func New(r *runner.Runner, store *backoff.Store, clock backoff.Clock, logger *slog.Logger) *Service {
	if clock == nil {
		clock = backoff.WallClock()
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{runner: r, store: store, clock: clock, log: logger}
}

// ApplyActions carries out a change set.
func (s *Service) ApplyActions(ctx context.Context, req *executorv1.ApplyActionsRequest) (*executorv1.ApplyActionsResponse, error) {
	if err := validate.ApplyActions(req); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	resp, err := s.runner.ApplyActionsWithSources(ctx, req.GetPod(), req.GetObserved(), req.GetActions(),
		volumes.NewSources(req.GetConfigMaps(), req.GetSecrets()))
	return resp, errgrpc.ToGRPC(classify(err))
}

// RemoveResources removes exited containers and stopped sandboxes.
func (s *Service) RemoveResources(ctx context.Context, req *executorv1.RemoveResourcesRequest) (*executorv1.RemoveResourcesResponse, error) {
	if err := validate.RemoveResources(req); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	resp, err := s.runner.RemoveResources(ctx, req.GetContainerIds(), req.GetSandboxIds(), req.GetForgetPod())
	return resp, errgrpc.ToGRPC(classify(err))
}

// ListBackoffs lists crash-loop back-off entries.
func (s *Service) ListBackoffs(_ context.Context, req *executorv1.ListBackoffsRequest) (*executorv1.ListBackoffsResponse, error) {
	if err := validate.ListBackoffs(req); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	entries, err := s.store.List(req.GetPodUid())
	if err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	now := s.clock.Now()
	resp := &executorv1.ListBackoffsResponse{}
	for _, e := range entries {
		be := &executorv1.BackoffEntry{
			PodUid: e.PodUID, ContainerName: e.ContainerName, SpecHash: e.SpecHash,
			Delay: durationpb.New(e.Delay), LastUpdate: timestamppb.New(e.LastUpdate),
			PodName: e.Name, PodNamespace: e.Namespace,
		}
		if now.Before(e.HeldUntil) {
			be.BackoffUntil = timestamppb.New(e.HeldUntil)
		}
		resp.Entries = append(resp.Entries, be)
	}
	return resp, nil
}

// ResetBackoff clears crash-loop back-off entries.
func (s *Service) ResetBackoff(_ context.Context, req *executorv1.ResetBackoffRequest) (*executorv1.ResetBackoffResponse, error) {
	if err := validate.ResetBackoff(req); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	n, err := s.store.Reset(req.GetPodUid(), req.GetContainerName())
	if err != nil {
		return nil, errgrpc.ToGRPC(classify(err))
	}
	s.log.Info("back-off reset", "pod_uid", req.GetPodUid(), "container", req.GetContainerName(), "removed", n)
	return &executorv1.ResetBackoffResponse{Removed: int32(n)}, nil
}

// ExecSync runs a command in a container, for exec probes.
func (s *Service) ExecSync(ctx context.Context, req *executorv1.ExecSyncRequest) (*executorv1.ExecSyncResponse, error) {
	if err := validate.ExecSync(req); err != nil {
		return nil, errgrpc.ToGRPC(err)
	}
	timeout := req.GetTimeout().AsDuration()
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	resp, err := s.runner.ExecSync(ctx, req.GetContainerId(), req.GetCommand(), timeout)
	return resp, errgrpc.ToGRPC(classify(err))
}
