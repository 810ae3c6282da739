package service

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	if l.Len() > 0 {
		return fielderr.Status("ContainerLogs", l.Errors()).Err()
	}
	if s.executor == nil {
		return status.Error(codes.Unavailable, "ContainerLogs: no executor is configured")
	}
	ctx := stream.Context()
	rec, err := s.pods.Get(ctx, req.GetPod())
	if err != nil {
		return toStatus("ContainerLogs", err)
	}
	var names []string
	for _, c := range rec.GetPod().GetSpec().GetInitContainers() {
		names = append(names, c.GetName())
	}
	for _, c := range slices.Concat(rec.GetPod().GetSpec().GetContainers(), rec.GetPod().GetSpec().GetEphemeralContainers()) {
		names = append(names, c.GetName())
	}
	if !slices.Contains(names, req.GetContainer()) {
		return status.Errorf(codes.NotFound, "container %s is not valid for pod %s: choose one of [%s]",
			req.GetContainer(), rec.GetPod().GetName(), strings.Join(names, " "))
	}
	in, err := s.executor.ContainerLogs(ctx, &executorv1.ContainerLogsRequest{
		PodUid: rec.GetPod().GetUid(), Container: req.GetContainer(), Follow: req.GetFollow(),
		TailLines: req.TailLines, SinceTime: req.GetSinceTime(), Previous: req.GetPrevious(),
	})
	if err != nil {
		return executorStatus(err)
	}
	for {
		msg, err := in.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return executorStatus(err)
		}
		if err := stream.Send(&plannerv1.ContainerLogsResponse{Lines: msg.GetLines(), ContainerId: msg.GetContainerId()}); err != nil {
			return err
		}
	}
}

// executorStatus passes the executor's status on, saying where it came
// from; a broken connection to the executor is Unavailable.
func executorStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return status.Errorf(codes.Unavailable, "executor: %v", err)
	}
	return status.Error(st.Code(), fmt.Sprintf("executor: %s", st.Message()))
}
