package service

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/validate"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// Service implements plannerv1.PlannerServiceServer.
type Service struct {
	plannerv1.UnsafePlannerServiceServer
}

// New returns the planner service.
func New() *Service { return &Service{} }

// Plan is the dry run of computePodActions: it validates the request (every
// field error at once, InvalidArgument) and returns plan.Compute's actions.
// No state is read or written.
func (s *Service) Plan(ctx context.Context, req *plannerv1.PlanRequest) (*plannerv1.PlanResponse, error) {
	if err := validate.Request(req.GetPod(), req.GetObserved(), req.GetProbes()); err != nil {
		return nil, toStatus("Plan", err)
	}
	return &plannerv1.PlanResponse{Actions: plan.Compute(req.GetPod(), req.GetObserved(), req.GetProbes())}, nil
}

// ApplyPod stores a desired pod.
func (s *Service) ApplyPod(context.Context, *plannerv1.ApplyPodRequest) (*plannerv1.ApplyPodResponse, error) {
	return nil, status.Error(codes.Unimplemented, "ApplyPod: the desired-pod store has not landed yet (issue 7)")
}

// DeletePod marks a pod as terminating.
func (s *Service) DeletePod(context.Context, *plannerv1.DeletePodRequest) (*plannerv1.DeletePodResponse, error) {
	return nil, status.Error(codes.Unimplemented, "DeletePod: the desired-pod store has not landed yet (issue 7)")
}

// GetPod returns one pod.
func (s *Service) GetPod(context.Context, *plannerv1.GetPodRequest) (*plannerv1.GetPodResponse, error) {
	return nil, status.Error(codes.Unimplemented, "GetPod: the desired-pod store has not landed yet (issue 7)")
}

// ListPods lists pods.
func (s *Service) ListPods(context.Context, *plannerv1.ListPodsRequest) (*plannerv1.ListPodsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "ListPods: the desired-pod store has not landed yet (issue 7)")
}

// WatchPods streams pod changes.
func (s *Service) WatchPods(*plannerv1.WatchPodsRequest, grpc.ServerStreamingServer[plannerv1.WatchPodsResponse]) error {
	return status.Error(codes.Unimplemented, "WatchPods: the desired-pod store has not landed yet (issue 7)")
}
