package service

import (
	"context"
	"slices"
	"strings"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// Exec checks the pod and its container, finds the running instance's
// id, and carries the session to the executor and back.
func (s *Service) Exec(stream plannerv1.PlannerService_ExecServer) error {
	var l fielderr.List
	first, hasStart, err := receiveFirst(s, stream.Recv, (*plannerv1.ExecRequest).GetStart, &l)
	if err != nil {
		return err
	}
	start := first.GetStart()
	if hasStart {
		l.Append("", validation.ContainerRefProblems("start.container", start.GetContainer()))
		l.Append("", validation.CommandProblems("start.command", start.GetCommand()))
	}
	l.Append("", validation.StreamInputProblems("input", first.GetInput()))
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	id, err := s.containerForExecutor(ctx, "Exec", &l, start.GetPod(), start.GetContainer())
	if err != nil {
		return err
	}
	out, err := openExecutorStream(ctx, s.executor.Exec, &executorv1.ExecRequest{Start: &executorv1.ExecStart{
		ContainerId: id, Command: start.GetCommand(), Stdin: start.GetStdin(), Tty: start.GetTty(),
	}})
	if err != nil {
		return err
	}
	return relay("Exec", cancel, stream.Recv,
		func(m *plannerv1.ExecRequest) (*executorv1.ExecRequest, bool, fielderr.Errors) {
			return &executorv1.ExecRequest{Input: m.GetInput()}, m.GetInput() != nil, inputProblems(m.GetStart() != nil, m.GetInput())
		},
		out.Send, out.CloseSend, out.Recv,
		func(m *executorv1.ExecResponse) error {
			return stream.Send(&plannerv1.ExecResponse{Output: m.GetOutput()})
		})
}

// runningContainerID returns the id of the container's running instance,
// NotFound naming the pod's containers for a wrong name, or
// FailedPrecondition when it is not running.
func runningContainerID(rec *plannerv1.PodRecord, name string) (string, error) {
	names := containerNames(rec.GetPod())
	if !slices.Contains(names, name) {
		return "", errgrpc.Errorf(errgrpc.ErrNotFound, "container %s is not valid for pod %s: choose one of [%s]", name, rec.GetPod().GetName(), strings.Join(names, " "))
	}
	all := slices.Concat(rec.GetStatus().GetInitContainerStatuses(), rec.GetStatus().GetContainerStatuses(), rec.GetStatus().GetEphemeralContainerStatuses())
	i := slices.IndexFunc(all, func(cs *syncpodv1.ContainerStatus) bool { return cs.GetName() == name })
	if i < 0 || all[i].GetState().GetRunning() == nil || all[i].GetContainerId() == "" {
		return "", errgrpc.Errorf(errgrpc.ErrFailedPrecondition, "container %s of pod %s is not running", name, rec.GetPod().GetName())
	}
	return all[i].GetContainerId(), nil
}
