package service

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// PortForward checks the pod and carries one connection to the executor
// and back.
func (s *Service) PortForward(stream plannerv1.PlannerService_PortForwardServer) error {
	if s.pods == nil {
		return errNoStore
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	var bad []string
	if start == nil {
		bad = append(bad, "start: required in the first message")
	} else {
		if start.GetPod() == nil || (start.GetPod().GetName() == "" && start.GetPod().GetUid() == "") {
			bad = append(bad, "start.pod.name: required unless start.pod.uid is set")
		}
		if start.GetPort() < 1 || start.GetPort() > 65535 {
			bad = append(bad, "start.port: must be 1-65535")
		}
	}
	if len(bad) > 0 {
		return status.Error(codes.InvalidArgument, "PortForward: "+strings.Join(bad, "; "))
	}
	if s.executor == nil {
		return status.Error(codes.Unavailable, "PortForward: no executor is configured")
	}
	ctx := stream.Context()
	rec, err := s.pods.Get(ctx, start.GetPod())
	if err != nil {
		return toStatus("PortForward", err)
	}
	out, err := s.executor.PortForward(ctx)
	if err != nil {
		return executorStatus(err)
	}
	if err := out.Send(&executorv1.PortForwardRequest{Start: &executorv1.PortForwardStart{PodUid: rec.GetPod().GetUid(), Port: start.GetPort()}}); err != nil {
		return executorStatus(err)
	}
	return relay(stream.Recv,
		func(m *plannerv1.PortForwardRequest) (*executorv1.PortForwardRequest, bool) {
			return &executorv1.PortForwardRequest{Data: m.GetData()}, true
		},
		out.Send, out.CloseSend, out.Recv,
		func(m *executorv1.PortForwardResponse) error {
			return stream.Send(&plannerv1.PortForwardResponse{Data: m.GetData()})
		})
}
