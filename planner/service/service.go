// Package service is the PlannerService gRPC adapter: each RPC forwards to
// the planner's core packages. RPCs whose logic has not landed yet answer
// Unimplemented naming what is missing.
package service

import (
	"context"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service implements plannerv1.PlannerServiceServer.
type Service struct {
	plannerv1.UnsafePlannerServiceServer
}

// New returns the planner service.
func New() *Service { return &Service{} }

// Plan is the dry run of computePodActions.
func (s *Service) Plan(context.Context, *plannerv1.PlanRequest) (*plannerv1.PlanResponse, error) {
	return nil, status.Error(codes.Unimplemented, "Plan: plan.Compute has not landed yet (issue 3)")
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
