package crisim

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The gRPC adapters of the stats calls (stats.go).

func (s *runtimeService) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	resp, err := s.r.ContainerStats(ctx, req)
	return resp, s.r.finish("ContainerStats", err)
}

func (s *runtimeService) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	resp, err := s.r.ListContainerStats(ctx, req)
	return resp, s.r.finish("ListContainerStats", err)
}

func (s *runtimeService) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	resp, err := s.r.PodSandboxStats(ctx, req)
	return resp, s.r.finish("PodSandboxStats", err)
}

func (s *runtimeService) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	resp, err := s.r.ListPodSandboxStats(ctx, req)
	return resp, s.r.finish("ListPodSandboxStats", err)
}

// The gRPC adapters of the streaming calls (streaming.go).

func (s *runtimeService) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	resp, err := s.r.Exec(ctx, req)
	return resp, s.r.finish("Exec", err)
}

func (s *runtimeService) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	resp, err := s.r.Attach(ctx, req)
	return resp, s.r.finish("Attach", err)
}

func (s *runtimeService) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	resp, err := s.r.PortForward(ctx, req)
	return resp, s.r.finish("PortForward", err)
}
