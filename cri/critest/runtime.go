package critest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/crisim"
)

// Stop is one recorded StopContainer call.
type Stop struct {
	// ID of the container.
	ID string
	// Timeout is the grace period passed, seconds.
	Timeout int64
}

// Runtime is the in-memory CRI runtime service every syncpod module tests
// against: crisim's runtime in simulated mode, driven in process through
// the CRI client interface (k8s.io/cri-api's RuntimeService), with no
// socket and no gRPC. Its answers are crisim's, hence a real runtime's:
// names are reserved, a missing object is NotFound, a stopped container
// dies of SIGTERM (143). On top it keeps what tests need: one record of
// the calls, their names in order (GetCalls) and counted by method
// (Calls), and errors to answer instead (InjectError);
// StopContainer and StopPodSandbox calls with their grace periods; the
// config each container was created with; objects put in or changed
// behind the runtime's back (Add*, Set*, Exit*, Remove); and, for the
// PLEG, failing lists, hanging inspections and a GetContainerEvents
// stream the test feeds (observer.go). Lists come back sorted by id. All
// methods are safe for concurrent use.
type Runtime struct {
	sim *crisim.Runtime
	rs  runtimeapi.RuntimeServiceServer
	is  runtimeapi.ImageServiceServer

	recorder

	mu           sync.Mutex
	stops        []Stop
	sandboxStops []string
	configs      map[string]*runtimeapi.ContainerConfig
	obs          observerState
	// ExecFunc, when set, answers ExecSync. A non-zero code comes back the
	// way the kubelet's remote client reports it: as an error with an
	// ExitStatus method.
	ExecFunc func(id string, cmd []string) (code int32, stdout []byte, err error)
}

// NewRuntime returns an empty runtime whose GetContainerEvents answers
// Unimplemented (see WithEvents).
func NewRuntime() *Runtime { return newRuntime(false) }

// NewRuntimeWithUserNamespaces is NewRuntime whose handler says it runs
// user namespaces and whose sandboxes may ask for one.
func NewRuntimeWithUserNamespaces() *Runtime { return newRuntime(true) }

func newRuntime(userns bool) *Runtime {
	sim, err := crisim.New(crisim.Options{Mode: crisim.ModeSimulated, UserNamespaces: userns, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(fmt.Sprintf("critest: crisim.New: %v", err)) // cannot fail with these options
	}
	rs, is := crisim.Services(sim)
	return &Runtime{
		sim:      sim,
		rs:       rs,
		is:       is,
		recorder: newRecorder(),
		configs:  map[string]*runtimeapi.ContainerConfig{},
		obs: observerState{
			streams: map[chan *runtimeapi.ContainerEventResponse]chan error{},
		},
	}
}

// Version answers as crisim does.
func (r *Runtime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return do(ctx, &r.recorder, "Version", r.rs.Version, &runtimeapi.VersionRequest{Version: apiVersion})
}

// Status answers as crisim does.
func (r *Runtime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return do(ctx, &r.recorder, "Status", r.rs.Status, &runtimeapi.StatusRequest{Verbose: verbose})
}

// RunPodSandbox creates a READY sandbox unless its metadata is reserved.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	resp, err := do(ctx, &r.recorder, "RunPodSandbox", r.rs.RunPodSandbox, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: handler})
	return resp.GetPodSandboxId(), err
}

// StopPodSandbox records the call, then stops the sandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	r.sandboxStops = append(r.sandboxStops, id)
	r.mu.Unlock()
	_, err := do(ctx, &r.recorder, "StopPodSandbox", r.rs.StopPodSandbox, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return err
}

// RemovePodSandbox removes a sandbox and its containers.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	_, err := do(ctx, &r.recorder, "RemovePodSandbox", r.rs.RemovePodSandbox, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return err
}

// CreateContainer creates a container and records its config. The
// image is pulled into crisim first: images are the image service's
// business (Images), not the runtime's.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	if err := r.call("CreateContainer"); err != nil {
		return "", err
	}
	if img := config.GetImage(); img.GetImage() != "" {
		if _, err := r.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: img}); err != nil {
			return "", err
		}
	}
	resp, err := r.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: config})
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.configs[resp.GetContainerId()] = proto.Clone(config).(*runtimeapi.ContainerConfig)
	r.mu.Unlock()
	return resp.GetContainerId(), nil
}

// CreatedConfig returns the config container id was created with (nil
// for one created otherwise).
func (r *Runtime) CreatedConfig(id string) *runtimeapi.ContainerConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.configs[id]
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	_, err := do(ctx, &r.recorder, "StartContainer", r.rs.StartContainer, &runtimeapi.StartContainerRequest{ContainerId: id})
	return err
}

// StopContainer records the call, then stops the container.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	r.stops = append(r.stops, Stop{ID: id, Timeout: timeout})
	r.mu.Unlock()
	_, err := do(ctx, &r.recorder, "StopContainer", r.rs.StopContainer, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	return err
}

// RemoveContainer removes a container, killing it first if it runs.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	_, err := do(ctx, &r.recorder, "RemoveContainer", r.rs.RemoveContainer, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return err
}

// ExecSync answers with ExecFunc, or as crisim does (exit code 0, no
// output).
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	if r.ExecFunc != nil {
		code, out, err := r.ExecFunc(id, cmd)
		if err == nil && code != 0 {
			err = ExitError(code)
		}
		return out, nil, err
	}
	if err := r.call("ExecSync"); err != nil {
		return nil, nil, err
	}
	resp, err := r.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout / time.Second)})
	if err == nil && resp.GetExitCode() != 0 {
		err = ExitError(resp.GetExitCode())
	}
	return resp.GetStdout(), resp.GetStderr(), err
}

// ExitError is a command's non-zero exit, as CRI clients report it.
type ExitError int32

func (e ExitError) Error() string { return fmt.Sprintf("command exited with %d", int32(e)) }

// ExitStatus is the exit code.
func (e ExitError) ExitStatus() int { return int(e) }

// Exec answers as crisim does.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return do(ctx, &r.recorder, "Exec", r.rs.Exec, req)
}

// Attach answers as crisim does.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return do(ctx, &r.recorder, "Attach", r.rs.Attach, req)
}

// PortForward answers as crisim does.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return do(ctx, &r.recorder, "PortForward", r.rs.PortForward, req)
}

// ReopenContainerLog answers as crisim does.
func (r *Runtime) ReopenContainerLog(ctx context.Context, id string) error {
	_, err := do(ctx, &r.recorder, "ReopenContainerLog", r.rs.ReopenContainerLog, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return err
}

// UpdateContainerResources answers as crisim does.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	_, err := do(ctx, &r.recorder, "UpdateContainerResources", r.rs.UpdateContainerResources, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: res.GetLinux()})
	return err
}

// CheckpointContainer answers as crisim does.
func (r *Runtime) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	_, err := do(ctx, &r.recorder, "CheckpointContainer", r.rs.CheckpointContainer, req)
	return err
}

// UpdatePodSandboxResources answers as crisim does.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return do(ctx, &r.recorder, "UpdatePodSandboxResources", r.rs.UpdatePodSandboxResources, req)
}

// CheckpointPod answers as crisim does.
func (r *Runtime) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) error {
	_, err := do(ctx, &r.recorder, "CheckpointPod", r.rs.CheckpointPod, req)
	return err
}

// RestorePod answers as crisim does.
func (r *Runtime) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	return do(ctx, &r.recorder, "RestorePod", r.rs.RestorePod, req)
}

// ContainerStats answers as crisim does.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	resp, err := do(ctx, &r.recorder, "ContainerStats", r.rs.ContainerStats, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	return resp.GetStats(), err
}

// ListContainerStats answers as crisim does.
func (r *Runtime) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	resp, err := do(ctx, &r.recorder, "ListContainerStats", r.rs.ListContainerStats, &runtimeapi.ListContainerStatsRequest{Filter: f})
	return resp.GetStats(), err
}

// PodSandboxStats answers as crisim does.
func (r *Runtime) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	resp, err := do(ctx, &r.recorder, "PodSandboxStats", r.rs.PodSandboxStats, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
	return resp.GetStats(), err
}

// ListPodSandboxStats answers as crisim does.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	resp, err := do(ctx, &r.recorder, "ListPodSandboxStats", r.rs.ListPodSandboxStats, &runtimeapi.ListPodSandboxStatsRequest{Filter: f})
	return resp.GetStats(), err
}

// ListMetricDescriptors answers as crisim does.
func (r *Runtime) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	resp, err := do(ctx, &r.recorder, "ListMetricDescriptors", r.rs.ListMetricDescriptors, &runtimeapi.ListMetricDescriptorsRequest{})
	return resp.GetDescriptors(), err
}

// ListPodSandboxMetrics answers as crisim does.
func (r *Runtime) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	resp, err := do(ctx, &r.recorder, "ListPodSandboxMetrics", r.rs.ListPodSandboxMetrics, &runtimeapi.ListPodSandboxMetricsRequest{})
	return resp.GetPodMetrics(), err
}

// UpdateRuntimeConfig answers as crisim does.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	_, err := do(ctx, &r.recorder, "UpdateRuntimeConfig", r.rs.UpdateRuntimeConfig, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: cfg})
	return err
}

// RuntimeConfig answers as crisim does.
func (r *Runtime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return do(ctx, &r.recorder, "RuntimeConfig", r.rs.RuntimeConfig, &runtimeapi.RuntimeConfigRequest{})
}

// Close does nothing: there is no connection.
func (r *Runtime) Close(context.Context) error { return nil }

// Stops returns the recorded container stops in call order.
func (r *Runtime) Stops() []Stop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Stop(nil), r.stops...)
}

// SandboxStops returns the recorded sandbox stops in call order.
func (r *Runtime) SandboxStops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sandboxStops...)
}

// String describes a stop for test messages.
func (s Stop) String() string { return fmt.Sprintf("%s(%ds)", s.ID, s.Timeout) }

// sortByID sorts CRI objects by id, as the lists of the fake answer.
func sortByID[T interface{ GetId() string }](s []T) {
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(a.GetId(), b.GetId()) })
}
