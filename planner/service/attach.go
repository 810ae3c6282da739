package service

import (
	"context"

	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Attach checks the pod and its container and carries the session to the
// executor and back.
func (s *Service) Attach(stream plannerv1.PlannerService_AttachServer) error {
	var l fielderr.List
	first, hasStart, err := receiveFirst(s, stream.Recv, (*plannerv1.AttachRequest).GetStart, &l)
	if err != nil {
		return err
	}
	start := first.GetStart()
	if hasStart {
		l.Append("", validation.ContainerRefProblems("start.container", start.GetContainer()))
	}
	l.Append("", validation.StreamInputProblems("input", first.GetInput()))
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	id, err := s.containerForExecutor(ctx, "Attach", &l, start.GetPod(), start.GetContainer())
	if err != nil {
		return err
	}
	out, err := openExecutorStream(ctx, s.executor.Attach,
		&executorv1.AttachRequest{Start: &executorv1.AttachStart{ContainerId: id, Stdin: start.GetStdin(), Tty: start.GetTty()}})
	if err != nil {
		return err
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
