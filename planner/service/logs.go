package service

import (
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// ContainerLogs streams a container's log from the executor, after
// checking that the pod exists and has the container.
func (s *Service) ContainerLogs(req *plannerv1.ContainerLogsRequest, stream plannerv1.PlannerService_ContainerLogsServer) error {
	if s.pods == nil {
		return errNoStore
	}
	var l fielderr.List
	if req.GetPod() == nil {
		l.Add("pod", "required")
	} else {
		l.Append("", validation.PodRefProblems("pod", req.GetPod().GetNamespace(), req.GetPod().GetName(), req.GetPod().GetUid()))
	}
	l.Append("", validation.ContainerRefProblems("container", req.GetContainer()))
	l.Append("", validation.TimestampProblems("since_time", req.GetSinceTime()))
	if req.TailLines != nil && req.GetTailLines() < 0 {
		l.Add("tail_lines", "must be >= 0")
	}
	ctx := stream.Context()
	rec, err := s.podForExecutor(ctx, "ContainerLogs", &l, req.GetPod())
	if err != nil {
		return err
	}
	names := containerNames(rec.GetPod())
	if !slices.Contains(names, req.GetContainer()) {
		return errgrpc.ToGRPC(errgrpc.Errorf(errgrpc.ErrNotFound, "container %s is not valid for pod %s: choose one of [%s]",
			req.GetContainer(), rec.GetPod().GetName(), strings.Join(names, " ")))
	}
	in, err := s.executor.ContainerLogs(ctx, &executorv1.ContainerLogsRequest{
		PodUid: rec.GetPod().GetUid(), Container: req.GetContainer(), Follow: req.GetFollow(),
		TailLines: req.TailLines, SinceTime: req.GetSinceTime(), Previous: req.GetPrevious(),
	})
	if err != nil {
		return errgrpc.Relay("executor", err)
	}
	for {
		msg, err := in.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return errgrpc.Relay("executor", err)
		}
		if err := stream.Send(&plannerv1.ContainerLogsResponse{Lines: msg.GetLines(), ContainerId: msg.GetContainerId()}); err != nil {
			return err
		}
	}
}
