package syncer

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/planner/podsync"
	"github.com/syncpod/syncpod/planner/prober"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// PLEG is what the sync loop needs of the PLEG. Implementations must be
// safe for concurrent use; every call blocks at most until ctx ends.
type PLEG interface {
	// PodStatus returns the pod's observed state, taken after newerThan
	// (zero: any cached state). A pod the runtime does not know comes
	// back with its uid and nothing else, not as an error.
	PodStatus(ctx context.Context, uid string, newerThan time.Time) (*syncpodv1.ObservedPod, error)
	// PodStatuses returns the cached state of every pod the runtime holds.
	PodStatuses(ctx context.Context) ([]*syncpodv1.ObservedPod, error)
	// Watch starts a stream of lifecycle events; it ends when ctx does or
	// the connection is lost (Recv then returns the error).
	Watch(ctx context.Context) (EventStream, error)
}

// EventStream is a stream of PLEG lifecycle events.
type EventStream interface {
	Recv() (*plegv1.PodLifecycleEvent, error)
}

// Config holds the ConfigMaps and Secrets a pod references
// (podsync.ConfigReferences), sent with its change sets and volume
// refreshes so the executor resolves volumes and env from them.
type Config struct {
	ConfigMaps []*syncpodv1.ConfigMap
	Secrets    []*syncpodv1.Secret
}

// Executor is what the sync loop needs of the executor. Implementations
// must be safe for concurrent use.
type Executor interface {
	// ApplyActions carries out a change set for pod (SyncPod steps 2-6)
	// and returns the per-step results. An error means the call itself
	// failed; the runtime may still have changed.
	ApplyActions(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions, cfg Config) (*executorv1.ApplyActionsResponse, error)
	// RemoveResources removes containers and sandboxes and returns one
	// result per id.
	RemoveResources(ctx context.Context, r podsync.Removal) ([]*executorv1.RemoveResult, error)
	// UpdatePodVolumes rewrites the pod's config-fed volumes whose content
	// changed (nothing restarts) and returns the volumes rewritten and
	// the per-volume errors ("name: message").
	UpdatePodVolumes(ctx context.Context, pod *syncpodv1.Pod, cfg Config) (updated, errs []string, err error)
	// RemovePodVolumes removes a gone pod's volume directory.
	RemovePodVolumes(ctx context.Context, uid string) error
	// ExecSync runs exec probes.
	prober.Execer
}

// GRPCPLEG adapts the PLEG service's gRPC client to PLEG.
func GRPCPLEG(c plegv1.PlegServiceClient) PLEG { return grpcPLEG{c} }

type grpcPLEG struct{ c plegv1.PlegServiceClient }

func (p grpcPLEG) PodStatus(ctx context.Context, uid string, newerThan time.Time) (*syncpodv1.ObservedPod, error) {
	req := &plegv1.GetPodStatusRequest{PodUid: uid}
	if !newerThan.IsZero() {
		req.NewerThan = timestamppb.New(newerThan)
	}
	resp, err := p.c.GetPodStatus(ctx, req)
	return resp.GetObserved(), err
}

func (p grpcPLEG) PodStatuses(ctx context.Context) ([]*syncpodv1.ObservedPod, error) {
	resp, err := p.c.ListPodStatuses(ctx, &plegv1.ListPodStatusesRequest{})
	return resp.GetPods(), err
}

func (p grpcPLEG) Watch(ctx context.Context) (EventStream, error) {
	s, err := p.c.Watch(ctx, &plegv1.WatchRequest{})
	if err != nil {
		return nil, err
	}
	return grpcEvents{s}, nil
}

type grpcEvents struct {
	s plegv1.PlegService_WatchClient
}

func (e grpcEvents) Recv() (*plegv1.PodLifecycleEvent, error) {
	resp, err := e.s.Recv()
	return resp.GetEvent(), err
}

// GRPCExecutor adapts the executor service's gRPC client to Executor.
func GRPCExecutor(c executorv1.ExecutorServiceClient) Executor { return grpcExecutor{c} }

type grpcExecutor struct {
	c executorv1.ExecutorServiceClient
}

func (e grpcExecutor) ApplyActions(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions, cfg Config) (*executorv1.ApplyActionsResponse, error) {
	return e.c.ApplyActions(ctx, &executorv1.ApplyActionsRequest{Pod: pod, Observed: observed, Actions: actions,
		ConfigMaps: cfg.ConfigMaps, Secrets: cfg.Secrets})
}

func (e grpcExecutor) UpdatePodVolumes(ctx context.Context, pod *syncpodv1.Pod, cfg Config) ([]string, []string, error) {
	resp, err := e.c.UpdatePodVolumes(ctx, &executorv1.UpdatePodVolumesRequest{Pod: pod, ConfigMaps: cfg.ConfigMaps, Secrets: cfg.Secrets})
	return resp.GetUpdated(), resp.GetErrors(), err
}

func (e grpcExecutor) RemovePodVolumes(ctx context.Context, uid string) error {
	_, err := e.c.RemovePodVolumes(ctx, &executorv1.RemovePodVolumesRequest{PodUid: uid})
	return err
}

// GRPCEmptyDirMeter adapts the executor service's gRPC client to
// EmptyDirMeter.
func GRPCEmptyDirMeter(c executorv1.ExecutorServiceClient) EmptyDirMeter { return grpcExecutor{c} }

// GRPCImageReclaimer adapts the executor service's gRPC client to
// ImageReclaimer.
func GRPCImageReclaimer(c executorv1.ExecutorServiceClient) ImageReclaimer { return grpcExecutor{c} }

func (e grpcExecutor) RemoveUnusedImages(ctx context.Context) (int, uint64, error) {
	resp, err := e.c.RemoveUnusedImages(ctx, &executorv1.RemoveUnusedImagesRequest{})
	return len(resp.GetRemoved()), resp.GetFreedBytes(), err
}

// GRPCPodStats adapts the executor service's gRPC client to
// PodStatsReader.
func GRPCPodStats(c executorv1.ExecutorServiceClient) PodStatsReader { return grpcExecutor{c} }

func (e grpcExecutor) PodStats(ctx context.Context, uids []string) ([]*syncpodv1.PodStats, error) {
	resp, err := e.c.ListPodStats(ctx, &executorv1.ListPodStatsRequest{PodUids: uids})
	return resp.GetStats(), err
}

func (e grpcExecutor) EmptyDirUsage(ctx context.Context, uid string, names []string) ([]int64, error) {
	resp, err := e.c.GetEmptyDirUsage(ctx, &executorv1.GetEmptyDirUsageRequest{PodUid: uid, VolumeNames: names})
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(names))
	for i, u := range resp.GetUsages() {
		if i < len(out) && u.GetVolumeName() == names[i] {
			out[i] = u.GetBytes()
		}
	}
	return out, nil
}

func (e grpcExecutor) RemoveResources(ctx context.Context, r podsync.Removal) ([]*executorv1.RemoveResult, error) {
	resp, err := e.c.RemoveResources(ctx, removeRequest(r))
	return resp.GetResults(), err
}

// ExecSyncOutput is ExecSync with the command's stdout and stderr, which
// the prober puts in its Unhealthy events (prober.OutputExecer).
func (e grpcExecutor) ExecSyncOutput(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (int32, []byte, error) {
	resp, err := e.c.ExecSync(ctx, &executorv1.ExecSyncRequest{ContainerId: containerID, Command: cmd, Timeout: durationpb.New(timeout)})
	if grpcstatus.Code(err) == codes.DeadlineExceeded {
		return 0, nil, context.DeadlineExceeded
	}
	return resp.GetExitCode(), append(append([]byte{}, resp.GetStdout()...), resp.GetStderr()...), err
}

func (e grpcExecutor) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (int32, error) {
	resp, err := e.c.ExecSync(ctx, &executorv1.ExecSyncRequest{ContainerId: containerID, Command: cmd, Timeout: durationpb.New(timeout)})
	if grpcstatus.Code(err) == codes.DeadlineExceeded {
		return 0, context.DeadlineExceeded
	}
	return resp.GetExitCode(), err
}

// removeRequest is the executor's request for a removal.
func removeRequest(r podsync.Removal) *executorv1.RemoveResourcesRequest {
	req := &executorv1.RemoveResourcesRequest{ContainerIds: r.Containers, SandboxIds: r.Sandboxes}
	if f := r.Forget; f != nil {
		req.ForgetPod = &executorv1.ForgetPodRef{Uid: f.UID, Namespace: f.Namespace, Name: f.Name}
	}
	return req
}
