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
	if s.pods == nil {
		return errNoStore
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	var l fielderr.List
	switch {
	case start == nil:
		l.Add("start", "required in the first message")
	default:
		l.Append("", validation.PodRefProblems("start.pod", start.GetPod().GetNamespace(), start.GetPod().GetName(), start.GetPod().GetUid()))
		l.Append("", validation.ContainerRefProblems("start.container", start.GetContainer()))
		l.Append("", validation.CommandProblems("start.command", start.GetCommand()))
	}
	l.Append("", validation.StreamInputProblems("input", first.GetInput()))
	if l.Len() > 0 {
		return errgrpc.ToGRPCOp("Exec", l.Err())
	}
	if s.executor == nil {
		return errgrpc.ToGRPCOp("Exec", errNoExecutor)
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	rec, err := s.pods.Get(ctx, start.GetPod())
	if err != nil {
		return errgrpc.ToGRPCOp("Exec", err)
	}
	id, err := runningContainerID(rec, start.GetContainer())
	if err != nil {
		return errgrpc.ToGRPC(err)
	}
	out, err := s.executor.Exec(ctx)
	if err != nil {
		return errgrpc.Relay("executor", err)
	}
	if err := out.Send(&executorv1.ExecRequest{Start: &executorv1.ExecStart{
		ContainerId: id, Command: start.GetCommand(), Stdin: start.GetStdin(), Tty: start.GetTty(),
	}}); err != nil {
		return errgrpc.Relay("executor", err)
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
	var names []string
	for _, c := range rec.GetPod().GetSpec().GetInitContainers() {
		names = append(names, c.GetName())
	}
	for _, c := range slices.Concat(rec.GetPod().GetSpec().GetContainers(), rec.GetPod().GetSpec().GetEphemeralContainers()) {
		names = append(names, c.GetName())
	}
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
