package service

import (
	"context"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/proto/fielderr"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// receiveFirst receives a session's first message (Exec, Attach,
// PortForward), once the store is known to be configured, and begins the
// checks of its start, adding the problems to l: start is required there
// and names a valid pod. ok reports whether start is present, for the
// caller to check the rest of it.
func receiveFirst[Req any, Start interface {
	proto.Message
	GetPod() *plannerv1.PodRef
}](s *Service, recv func() (Req, error), startOf func(Req) Start, l *fielderr.List) (first Req, ok bool, err error) {
	if s.pods == nil {
		return first, false, errNoStore
	}
	first, err = recv()
	if err != nil {
		return first, false, err
	}
	start := startOf(first)
	if !start.ProtoReflect().IsValid() {
		l.Add("start", "required in the first message")
		return first, false, nil
	}
	l.Append("", validation.PodRefProblems("start.pod", start.GetPod().GetNamespace(), start.GetPod().GetName(), start.GetPod().GetUid()))
	return first, true, nil
}

// podForExecutor ends the checks every call the executor carries into a
// pod (Exec, Attach, PortForward, ContainerLogs) makes before it reaches
// the executor: the request's problems l, all at once, are
// InvalidArgument; without an executor the call is Unavailable; then the
// pod named by ref must exist. Errors are the gRPC statuses of op.
func (s *Service) podForExecutor(ctx context.Context, op string, l *fielderr.List, ref *plannerv1.PodRef) (*plannerv1.PodRecord, error) {
	if l.Len() > 0 {
		return nil, errgrpc.ToGRPCOp(op, l.Err())
	}
	if s.executor == nil {
		return nil, errgrpc.ToGRPCOp(op, errNoExecutor)
	}
	rec, err := s.pods.Get(ctx, ref)
	if err != nil {
		return nil, errgrpc.ToGRPCOp(op, err)
	}
	return rec, nil
}

// containerForExecutor is podForExecutor for a call into one container
// of the pod (Exec, Attach): the id of the container's running instance,
// or the gRPC status saying why there is none.
func (s *Service) containerForExecutor(ctx context.Context, op string, l *fielderr.List, ref *plannerv1.PodRef, container string) (string, error) {
	rec, err := s.podForExecutor(ctx, op, l, ref)
	if err != nil {
		return "", err
	}
	id, err := runningContainerID(rec, container)
	if err != nil {
		return "", errgrpc.ToGRPC(err)
	}
	return id, nil
}

// openExecutorStream opens one of the executor's session streams with
// open and sends its first message; a failure of either is relayed as
// the executor's.
func openExecutorStream[Req any, S interface{ Send(Req) error }](ctx context.Context, open func(context.Context, ...grpc.CallOption) (S, error), first Req) (S, error) {
	out, err := open(ctx)
	if err != nil {
		return out, errgrpc.Relay("executor", err)
	}
	if err := out.Send(first); err != nil {
		return out, errgrpc.Relay("executor", err)
	}
	return out, nil
}

// containerNames lists the names of the pod's containers of every kind,
// init containers first, as a wrong name's NotFound message offers them.
func containerNames(pod *syncpodv1.Pod) []string {
	var names []string
	for _, c := range slices.Concat(pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers(), pod.GetSpec().GetEphemeralContainers()) {
		names = append(names, c.GetName())
	}
	return names
}
