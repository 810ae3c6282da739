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
	critesting "k8s.io/cri-api/pkg/apis/testing"

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
// dies of SIGTERM (143). On top it keeps what tests need: every call's
// name in order (GetCalls) and errors to answer instead (InjectError);
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

	mu           sync.Mutex
	called       []string
	errs         map[string][]error
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
func NewRuntime() *Runtime {
	sim, err := crisim.New(crisim.Options{Mode: crisim.ModeSimulated, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(fmt.Sprintf("critest: crisim.New: %v", err)) // cannot fail with these options
	}
	rs, is := crisim.Services(sim)
	return &Runtime{
		sim:     sim,
		rs:      rs,
		is:      is,
		errs:    map[string][]error{},
		configs: map[string]*runtimeapi.ContainerConfig{},
		obs: observerState{
			streams: map[chan *runtimeapi.ContainerEventResponse]chan error{},
			calls:   map[string]int{},
		},
	}
}

// Sim is the crisim runtime behind r.
func (r *Runtime) Sim() *crisim.Runtime { return r.sim }

// call records a call of method and returns the error injected for it,
// if any (each injected error answers one call).
func (r *Runtime) call(method string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.called = append(r.called, method)
	if errs := r.errs[method]; len(errs) > 0 {
		r.errs[method] = errs[1:]
		return errs[0]
	}
	return nil
}

// InjectError makes the next call of method answer err (several
// injections answer as many calls, in order).
func (r *Runtime) InjectError(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[method] = append(r.errs[method], err)
}

// GetCalls returns the names of the methods called, in call order.
func (r *Runtime) GetCalls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.called)
}

// Version answers as crisim does.
func (r *Runtime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	if err := r.call("Version"); err != nil {
		return nil, err
	}
	return r.rs.Version(ctx, &runtimeapi.VersionRequest{Version: apiVersion})
}

// Status answers as crisim does.
func (r *Runtime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	if err := r.call("Status"); err != nil {
		return nil, err
	}
	return r.rs.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
}

// RunPodSandbox creates a READY sandbox unless its metadata is reserved.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	if err := r.call("RunPodSandbox"); err != nil {
		return "", err
	}
	resp, err := r.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: handler})
	return resp.GetPodSandboxId(), err
}

// StopPodSandbox records the call, then stops the sandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	r.mu.Lock()
	r.sandboxStops = append(r.sandboxStops, id)
	r.mu.Unlock()
	if err := r.call("StopPodSandbox"); err != nil {
		return err
	}
	_, err := r.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return err
}

// RemovePodSandbox removes a sandbox and its containers.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	if err := r.call("RemovePodSandbox"); err != nil {
		return err
	}
	_, err := r.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
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
	if err := r.call("StartContainer"); err != nil {
		return err
	}
	_, err := r.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return err
}

// StopContainer records the call, then stops the container.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	r.stops = append(r.stops, Stop{ID: id, Timeout: timeout})
	r.mu.Unlock()
	if err := r.call("StopContainer"); err != nil {
		return err
	}
	_, err := r.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	return err
}

// RemoveContainer removes a container that is not running.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	if err := r.call("RemoveContainer"); err != nil {
		return err
	}
	_, err := r.rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
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
	if err := r.call("Exec"); err != nil {
		return nil, err
	}
	return r.rs.Exec(ctx, req)
}

// Attach answers as crisim does.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := r.call("Attach"); err != nil {
		return nil, err
	}
	return r.rs.Attach(ctx, req)
}

// PortForward answers as crisim does.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := r.call("PortForward"); err != nil {
		return nil, err
	}
	return r.rs.PortForward(ctx, req)
}

// ReopenContainerLog answers as crisim does.
func (r *Runtime) ReopenContainerLog(ctx context.Context, id string) error {
	if err := r.call("ReopenContainerLog"); err != nil {
		return err
	}
	_, err := r.rs.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return err
}

// UpdateContainerResources answers as crisim does.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	if err := r.call("UpdateContainerResources"); err != nil {
		return err
	}
	_, err := r.rs.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: res.GetLinux()})
	return err
}

// CheckpointContainer answers as crisim does.
func (r *Runtime) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	if err := r.call("CheckpointContainer"); err != nil {
		return err
	}
	_, err := r.rs.CheckpointContainer(ctx, req)
	return err
}

// UpdatePodSandboxResources answers as crisim does.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	if err := r.call("UpdatePodSandboxResources"); err != nil {
		return nil, err
	}
	return r.rs.UpdatePodSandboxResources(ctx, req)
}

// CheckpointPod answers as crisim does.
func (r *Runtime) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) error {
	if err := r.call("CheckpointPod"); err != nil {
		return err
	}
	_, err := r.rs.CheckpointPod(ctx, req)
	return err
}

// RestorePod answers as crisim does.
func (r *Runtime) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	if err := r.call("RestorePod"); err != nil {
		return nil, err
	}
	return r.rs.RestorePod(ctx, req)
}

// ContainerStats answers as crisim does.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	if err := r.call("ContainerStats"); err != nil {
		return nil, err
	}
	resp, err := r.rs.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	return resp.GetStats(), err
}

// ListContainerStats answers as crisim does.
func (r *Runtime) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	if err := r.call("ListContainerStats"); err != nil {
		return nil, err
	}
	resp, err := r.rs.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: f})
	return resp.GetStats(), err
}

// PodSandboxStats answers as crisim does.
func (r *Runtime) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	if err := r.call("PodSandboxStats"); err != nil {
		return nil, err
	}
	resp, err := r.rs.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
	return resp.GetStats(), err
}

// ListPodSandboxStats answers as crisim does.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	if err := r.call("ListPodSandboxStats"); err != nil {
		return nil, err
	}
	resp, err := r.rs.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: f})
	return resp.GetStats(), err
}

// ListMetricDescriptors answers as crisim does.
func (r *Runtime) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	if err := r.call("ListMetricDescriptors"); err != nil {
		return nil, err
	}
	resp, err := r.rs.ListMetricDescriptors(ctx, &runtimeapi.ListMetricDescriptorsRequest{})
	return resp.GetDescriptors(), err
}

// ListPodSandboxMetrics answers as crisim does.
func (r *Runtime) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	if err := r.call("ListPodSandboxMetrics"); err != nil {
		return nil, err
	}
	resp, err := r.rs.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	return resp.GetPodMetrics(), err
}

// UpdateRuntimeConfig answers as crisim does.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	if err := r.call("UpdateRuntimeConfig"); err != nil {
		return err
	}
	_, err := r.rs.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: cfg})
	return err
}

// RuntimeConfig answers as crisim does.
func (r *Runtime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	if err := r.call("RuntimeConfig"); err != nil {
		return nil, err
	}
	return r.rs.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
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

// Images is the cri-api fake image service: pulls and their record. The
// runtime takes any image a container names (CreateContainer).
type Images = critesting.FakeImageService

// NewImages returns a fake image service holding images.
func NewImages(images ...string) *Images {
	is := critesting.NewFakeImageService()
	is.SetFakeImages(images)
	return is
}

// ImageCalls returns the method names called on an image fake.
func ImageCalls(is *Images) []string {
	is.Lock()
	defer is.Unlock()
	return append([]string(nil), is.Called...)
}

// sortByID sorts CRI objects by id, as the lists of the fake answer.
func sortByID[T interface{ GetId() string }](s []T) {
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(a.GetId(), b.GetId()) })
}
