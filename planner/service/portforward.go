package service

import (
	"context"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// PortForward checks the pod and carries one connection to the executor
// and back.
func (s *Service) PortForward(stream plannerv1.PlannerService_PortForwardServer) error {
	var l fielderr.List
	first, hasStart, err := receiveFirst(s, stream.Recv, (*plannerv1.PortForwardRequest).GetStart, &l)
	if err != nil {
		return err
	}
	start := first.GetStart()
	if hasStart {
		if start.GetPort() < 1 || start.GetPort() > 65535 {
			l.Add("start.port", "must be 1-65535")
		}
	}
	l.Append("", validation.StreamDataProblems("data", first.GetData()))
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	rec, err := s.podForExecutor(ctx, "PortForward", &l, start.GetPod())
	if err != nil {
		return err
	}
	out, err := openExecutorStream(ctx, s.executor.PortForward,
		&executorv1.PortForwardRequest{Start: &executorv1.PortForwardStart{PodUid: rec.GetPod().GetUid(), Port: start.GetPort()}})
	if err != nil {
		return err
	}
	if len(first.GetData()) > 0 {
		// Bytes in the first message go first.
		if err := out.Send(&executorv1.PortForwardRequest{Data: first.GetData()}); err != nil {
			return errgrpc.Relay("executor", err)
		}
	}
	return relay("PortForward", cancel, stream.Recv,
		func(m *plannerv1.PortForwardRequest) (*executorv1.PortForwardRequest, bool, fielderr.Errors) {
			var l fielderr.List
			if m.GetStart() != nil {
				l.Add("start", "only in the first message")
			}
			l.Append("", validation.StreamDataProblems("data", m.GetData()))
			return &executorv1.PortForwardRequest{Data: m.GetData()}, true, l.Errors()
		},
		out.Send, out.CloseSend, out.Recv,
		func(m *executorv1.PortForwardResponse) error {
			return stream.Send(&plannerv1.PortForwardResponse{Data: m.GetData()})
		})
}
