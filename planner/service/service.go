// Package service is the PlannerService gRPC adapter: each RPC forwards to
// the planner's core packages. RPCs whose logic has not landed yet answer
// Unimplemented naming what is missing.
package service

import (
	"context"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service implements plannerv1.PlannerServiceServer.
type Service struct {
	plannerv1.UnsafePlannerServiceServer
	pods PodStore
}

// Options configure the planner service.
type Options struct {
	// Pods is the desired-pod store behind ApplyPod, DeletePod, GetPod,
	// ListPods and WatchPods (pods.go). Nil makes them Unavailable.
	Pods PodStore
}

// New returns the planner service.
func New(opts Options) *Service { return &Service{pods: opts.Pods} }

// Plan is the dry run of computePodActions.
func (s *Service) Plan(context.Context, *plannerv1.PlanRequest) (*plannerv1.PlanResponse, error) {
	return nil, status.Error(codes.Unimplemented, "Plan: plan.Compute has not landed yet (issue 3)")
}
