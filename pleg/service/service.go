// Package service is the PlegService gRPC adapter: each RPC forwards to the
// PLEG's core packages. RPCs whose logic has not landed yet answer
// Unimplemented naming what is missing.
package service

import (
	"context"

	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service implements plegv1.PlegServiceServer.
type Service struct {
	plegv1.UnsafePlegServiceServer
}

// New returns the PLEG service.
func New() *Service { return &Service{} }

// Watch streams lifecycle events.
func (s *Service) Watch(*plegv1.WatchRequest, grpc.ServerStreamingServer[plegv1.WatchResponse]) error {
	return status.Error(codes.Unimplemented, "Watch: the relist PLEG has not landed yet (issue 5)")
}

// GetPodStatus returns a pod's cached status.
func (s *Service) GetPodStatus(context.Context, *plegv1.GetPodStatusRequest) (*plegv1.GetPodStatusResponse, error) {
	return nil, status.Error(codes.Unimplemented, "GetPodStatus: the observed-status cache has not landed yet (issue 5)")
}

// ListPodStatuses returns the whole cache.
func (s *Service) ListPodStatuses(context.Context, *plegv1.ListPodStatusesRequest) (*plegv1.ListPodStatusesResponse, error) {
	return nil, status.Error(codes.Unimplemented, "ListPodStatuses: the observed-status cache has not landed yet (issue 5)")
}
