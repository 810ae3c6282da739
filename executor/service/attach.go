package service

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ValidateAttachStart checks the first message of an Attach session.
func ValidateAttachStart(start *executorv1.AttachStart) error {
	var l fielderr.List
	if start == nil {
		l.Add("start", "required in the first message")
	} else {
		containerIDProblems(&l, start.GetContainerId())
	}
	return l.Err()
}

// Attach connects to a container's process through the runtime's
// streaming server, with client-go's remote command client.
func (s *Service) Attach(stream executorv1.ExecutorService_AttachServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if err := firstProblems(ValidateAttachStart(start), first.GetInput()); err != nil {
		return errgrpc.ToGRPC(err)
	}
	ctx := stream.Context()
	rs, ctx, err := s.criService(ctx)
	if err != nil {
		return errgrpc.ToGRPC(classify(err))
	}
	resp, err := rs.Attach(ctx, &runtimeapi.AttachRequest{
		ContainerId: start.GetContainerId(), Tty: start.GetTty(), Stdin: start.GetStdin(), Stdout: true, Stderr: !start.GetTty(),
	})
	if err != nil {
		return errgrpc.ToGRPC(classify(err))
	}
	s.log.Debug("attach", "container_id", start.GetContainerId(), "tty", start.GetTty())
	code, err := runRemoteCommand(ctx, resp.GetUrl(), start.GetStdin(), start.GetTty(), stream.Recv, func(m *executorv1.AttachRequest) bool { return m.GetStart() != nil }, func(out *syncpodv1.StreamOutput) error {
		return stream.Send(&executorv1.AttachResponse{Output: out})
	})
	if err != nil {
		return err
	}
	return stream.Send(&executorv1.AttachResponse{Output: &syncpodv1.StreamOutput{Output: &syncpodv1.StreamOutput_ExitCode{ExitCode: code}}})
}
