package service

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// Attach checks the pod and its container and carries the session to the
// executor and back.
func (s *Service) Attach(stream plannerv1.PlannerService_AttachServer) error {
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
		if start.GetContainer() == "" {
			bad = append(bad, "start.container: required")
		}
	}
	if len(bad) > 0 {
		return status.Error(codes.InvalidArgument, "Attach: "+strings.Join(bad, "; "))
	}
	if s.executor == nil {
		return status.Error(codes.Unavailable, "Attach: no executor is configured")
	}
	ctx := stream.Context()
	rec, err := s.pods.Get(ctx, start.GetPod())
	if err != nil {
		return toStatus("Attach", err)
	}
	id, err := runningContainerID(rec, start.GetContainer())
	if err != nil {
		return err
	}
	out, err := s.executor.Attach(ctx)
	if err != nil {
		return executorStatus(err)
	}
	if err := out.Send(&executorv1.AttachRequest{Start: &executorv1.AttachStart{ContainerId: id, Stdin: start.GetStdin(), Tty: start.GetTty()}}); err != nil {
		return executorStatus(err)
	}
	return relay(stream.Recv,
		func(m *plannerv1.AttachRequest) (*executorv1.AttachRequest, bool) {
			return &executorv1.AttachRequest{Input: m.GetInput()}, m.GetInput() != nil
		},
		out.Send, out.CloseSend, out.Recv,
		func(m *executorv1.AttachResponse) error {
			return stream.Send(&plannerv1.AttachResponse{Output: m.GetOutput()})
		})
}
