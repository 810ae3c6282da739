package service

import (
	"context"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/proto/validation"
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
	var l fielderr.List
	if start == nil {
		l.Add("start", "required in the first message")
	} else {
		l.Append("", validation.PodRefProblems("start.pod", start.GetPod().GetNamespace(), start.GetPod().GetName(), start.GetPod().GetUid()))
		l.Append("", validation.ContainerRefProblems("start.container", start.GetContainer()))
	}
	l.Append("", validation.StreamInputProblems("input", first.GetInput()))
	if l.Len() > 0 {
		return errgrpc.ToGRPCOp("Attach", l.Err())
	}
	if s.executor == nil {
		return errgrpc.ToGRPCOp("Attach", errNoExecutor)
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	rec, err := s.pods.Get(ctx, start.GetPod())
	if err != nil {
		return errgrpc.ToGRPCOp("Attach", err)
	}
	id, err := runningContainerID(rec, start.GetContainer())
	if err != nil {
		return errgrpc.ToGRPC(err)
	}
	out, err := s.executor.Attach(ctx)
	if err != nil {
		return errgrpc.Relay("executor", err)
	}
	if err := out.Send(&executorv1.AttachRequest{Start: &executorv1.AttachStart{ContainerId: id, Stdin: start.GetStdin(), Tty: start.GetTty()}}); err != nil {
		return errgrpc.Relay("executor", err)
	}
	return relay("Attach", cancel, stream.Recv,
		func(m *plannerv1.AttachRequest) (*executorv1.AttachRequest, bool, fielderr.Errors) {
			return &executorv1.AttachRequest{Input: m.GetInput()}, m.GetInput() != nil, inputProblems(m.GetStart() != nil, m.GetInput())
		},
		out.Send, out.CloseSend, out.Recv,
		func(m *executorv1.AttachResponse) error {
			return stream.Send(&plannerv1.AttachResponse{Output: m.GetOutput()})
		})
}
