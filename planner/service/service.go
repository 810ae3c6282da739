package service

import (
	"context"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/planner/plan"
	"github.com/syncpod/syncpod/planner/validate"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// Service implements plannerv1.PlannerServiceServer.
type Service struct {
	plannerv1.UnsafePlannerServiceServer
	pods      PodStore
	config    ConfigStore
	executor  executorv1.ExecutorServiceClient
	timelines Timelines
	shutdown  NodeShutdown
	// conditions answers GetNodeConditions.
	conditions NodeConditions
}

// Timelines answers GetPod's last_sync: the last completed sync of a pod
// (the sync loop's timeline.Recorder).
type Timelines interface {
	Last(uid string) *plannerv1.PodSyncTimeline
}

// Options configure the planner service.
type Options struct {
	// Pods is the desired-pod store behind ApplyPod, DeletePod, GetPod,
	// ListPods and WatchPods (pods.go). Nil makes them Unavailable.
	Pods PodStore
	// Executor carries the streaming calls (ContainerLogs, logs.go) to
	// the executor. Nil makes them Unavailable.
	Executor executorv1.ExecutorServiceClient
	// Timelines fills GetPod's last_sync. Nil leaves it unset.
	Timelines Timelines
	// Config is the ConfigMap and Secret store (config.go). Nil makes
	// those RPCs Unavailable.
	Config ConfigStore
	// Shutdown carries out ShutdownNode and closes ApplyPod's admission
	// during a shutdown. Nil: ShutdownNode is FailedPrecondition.
	Shutdown NodeShutdown
	// Conditions answers GetNodeConditions. Nil: no pressure is
	// reported.
	Conditions NodeConditions
}

// errNoExecutor is the error of a call the executor carries when none is
// configured; the RPC's name prefixes it.
var errNoExecutor = errgrpc.New(errgrpc.ErrUnavailable, "no executor is configured")

// New returns the planner service.
func New(opts Options) *Service {
	return &Service{pods: opts.Pods, executor: opts.Executor, timelines: opts.Timelines, config: opts.Config, shutdown: opts.Shutdown,
		conditions: opts.Conditions}
}

// Plan is the dry run of computePodActions: it validates the request (every
// field error at once, InvalidArgument) and returns plan.Compute's actions.
// No state is read or written.
func (s *Service) Plan(ctx context.Context, req *plannerv1.PlanRequest) (*plannerv1.PlanResponse, error) {
	if err := validate.Request(req.GetPod(), req.GetObserved(), req.GetProbes()); err != nil {
		return nil, errgrpc.ToGRPCOp("Plan", err)
	}
	return &plannerv1.PlanResponse{Actions: plan.Compute(req.GetPod(), req.GetObserved(), req.GetProbes())}, nil
}
