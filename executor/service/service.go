// Package service is the ExecutorService gRPC adapter: each RPC forwards to
// the executor's core packages. RPCs whose logic has not landed yet answer
// Unimplemented naming what is missing.
package service

import (
	"context"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service implements executorv1.ExecutorServiceServer.
type Service struct {
	executorv1.UnsafeExecutorServiceServer
}

// New returns the executor service.
func New() *Service { return &Service{} }

// ApplyActions carries out a change set.
func (s *Service) ApplyActions(context.Context, *executorv1.ApplyActionsRequest) (*executorv1.ApplyActionsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "ApplyActions: the CRI step runner has not landed yet (issue 4)")
}

// RemoveResources removes exited containers and stopped sandboxes.
func (s *Service) RemoveResources(context.Context, *executorv1.RemoveResourcesRequest) (*executorv1.RemoveResourcesResponse, error) {
	return nil, status.Error(codes.Unimplemented, "RemoveResources: the CRI step runner has not landed yet (issue 4)")
}

// ListBackoffs lists crash-loop back-off entries.
func (s *Service) ListBackoffs(context.Context, *executorv1.ListBackoffsRequest) (*executorv1.ListBackoffsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "ListBackoffs: the back-off store has not landed yet (issue 4)")
}

// ResetBackoff clears crash-loop back-off entries.
func (s *Service) ResetBackoff(context.Context, *executorv1.ResetBackoffRequest) (*executorv1.ResetBackoffResponse, error) {
	return nil, status.Error(codes.Unimplemented, "ResetBackoff: the back-off store has not landed yet (issue 4)")
}
