package service

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/proto/fielderr"
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
	var l fielderr.List
	if start == nil {
		l.Add("start", "required in the first message")
	} else {
		if start.GetPod() == nil || (start.GetPod().GetName() == "" && start.GetPod().GetUid() == "") {
			l.Add("start.pod.name", "required unless start.pod.uid is set")
		}
		if start.GetPort() < 1 || start.GetPort() > 65535 {
			l.Add("start.port", "must be 1-65535")
		}
	}
	if l.Len() > 0 {
		return fielderr.Status("PortForward", l.Errors()).Err()
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
