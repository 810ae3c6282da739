package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"
)

// A Conn made WithInProcess calls a runtime of its own process (crisim
// in syncpod-all) through a gRPC channel that hands it the messages, not
// through the socket: no encoding, HTTP/2 framing or system calls, the
// runtime's server interceptors (metrics, access log, authorization,
// audit) run as for a call on the socket. It is used while the channel
// is offered (the lookup answers one), the socket otherwise; the answers
// are the remote client's: the same timeouts, the same checks of what
// comes back, the same errors, and failures logged to the call's klog
// logger.

// WithInProcess makes c call the runtime through the channel lookup
// returns while it returns one (nil: through the socket).
func WithInProcess(lookup func() grpc.ClientConnInterface) ConnOption {
	return func(c *Conn) { c.inProcess = lookup }
}

// channel is the in-process channel to the runtime, nil while there is
// none.
func (c *Conn) channel() grpc.ClientConnInterface {
	if c.inProcess == nil {
		return nil
	}
	return c.inProcess()
}

// channelRuntime is internalapi.RuntimeService over a gRPC channel, as the
// remote client behaves over its connection (lists unary, no streaming).
type channelRuntime struct {
	c       runtimeapi.RuntimeServiceClient
	timeout time.Duration
}

// channelImages is internalapi.ImageManagerService over a gRPC channel.
type channelImages struct {
	c       runtimeapi.ImageServiceClient
	timeout time.Duration
}

var (
	_ internalapi.RuntimeService      = (*channelRuntime)(nil)
	_ internalapi.ImageManagerService = (*channelImages)(nil)
)

func newChannelRuntime(ch grpc.ClientConnInterface, timeout time.Duration) *channelRuntime {
	return &channelRuntime{c: runtimeapi.NewRuntimeServiceClient(ch), timeout: timeout}
}

func newChannelImages(ch grpc.ClientConnInterface, timeout time.Duration) *channelImages {
	return &channelImages{c: runtimeapi.NewImageServiceClient(ch), timeout: timeout}
}

// call runs fn with ctx bounded by timeout and logs its failure to ctx's
// klog logger as "<what> from runtime service failed" (what names an
// image service call "... from image service").
func call[R any](ctx context.Context, timeout time.Duration, what string, fn func(context.Context) (R, error), kv ...any) (R, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := fn(ctx)
	if err != nil {
		if !strings.HasSuffix(what, " service") {
			what += " from runtime service"
		}
		klog.FromContext(ctx).Error(err, what+" failed", kv...)
	}
	return r, err
}

// failed logs a check of an answer that failed and returns its error.
func failed(ctx context.Context, what string, err error) error {
	klog.FromContext(ctx).Error(err, what+" failed")
	return err
}

func (r *channelRuntime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	v, err := call(ctx, r.timeout, "Version", func(ctx context.Context) (*runtimeapi.VersionResponse, error) {
		return r.c.Version(ctx, &runtimeapi.VersionRequest{Version: apiVersion})
	})
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"Version", v.Version}, {"RuntimeName", v.RuntimeName},
		{"RuntimeApiVersion", v.RuntimeApiVersion}, {"RuntimeVersion", v.RuntimeVersion}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not all fields are set in VersionResponse (missing %s)", strings.Join(missing, ", "))
	}
	return v, nil
}

func (r *channelRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	// Twice the timeout, as the remote client gives a sandbox.
	resp, err := call(ctx, 2*r.timeout, "RunPodSandbox", func(ctx context.Context) (*runtimeapi.RunPodSandboxResponse, error) {
		return r.c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: handler})
	})
	if err != nil {
		return "", err
	}
	if resp.PodSandboxId == "" {
		return "", failed(ctx, "RunPodSandbox", fmt.Errorf("PodSandboxId is not set for sandbox %q", config.GetMetadata()))
	}
	return resp.PodSandboxId, nil
}

func (r *channelRuntime) StopPodSandbox(ctx context.Context, id string) error {
	_, err := call(ctx, r.timeout, "StopPodSandbox", func(ctx context.Context) (*runtimeapi.StopPodSandboxResponse, error) {
		return r.c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	}, "podSandboxID", id)
	return err
}

func (r *channelRuntime) RemovePodSandbox(ctx context.Context, id string) error {
	_, err := call(ctx, r.timeout, "RemovePodSandbox", func(ctx context.Context) (*runtimeapi.RemovePodSandboxResponse, error) {
		return r.c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	}, "podSandboxID", id)
	return err
}

func (r *channelRuntime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	// Not logged, as the remote client does not log it.
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	resp, err := r.c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
	if err != nil {
		return nil, err
	}
	if st := resp.Status; st != nil {
		if err := checkSandboxStatus(st); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

func (r *channelRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp, err := call(ctx, r.timeout, "ListPodSandbox with filter", func(ctx context.Context) (*runtimeapi.ListPodSandboxResponse, error) {
		return r.c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	}, "filter", filter)
	return resp.GetItems(), err
}

func (r *channelRuntime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	resp, err := call(ctx, r.timeout, "PortForward", func(ctx context.Context) (*runtimeapi.PortForwardResponse, error) {
		return r.c.PortForward(ctx, req)
	}, "podSandboxID", req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if resp.Url == "" {
		return nil, failed(ctx, "PortForward", errors.New("URL is not set"))
	}
	return resp, nil
}

func (r *channelRuntime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return call(ctx, r.timeout, "UpdatePodSandboxResources", func(ctx context.Context) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
		return r.c.UpdatePodSandboxResources(ctx, req)
	}, "podSandboxID", req.GetPodSandboxId())
}

// callerTimeout is what is left of ctx's deadline, the runtime's timeout
// when it has none: a checkpoint and a restore are bound by their caller,
// as the remote client bounds them.
func (r *channelRuntime) callerTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return r.timeout
}

func (r *channelRuntime) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) error {
	if req == nil {
		return errors.New("CheckpointPod requires non-nil CheckpointPodRequest parameter")
	}
	_, err := call(ctx, r.callerTimeout(ctx), "CheckpointPod", func(ctx context.Context) (*runtimeapi.CheckpointPodResponse, error) {
		return r.c.CheckpointPod(ctx, req)
	}, "podSandboxID", req.PodSandboxId)
	return err
}

func (r *channelRuntime) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	if req == nil {
		return nil, errors.New("RestorePod requires non-nil RestorePodRequest parameter")
	}
	resp, err := call(ctx, r.callerTimeout(ctx), "RestorePod", func(ctx context.Context) (*runtimeapi.RestorePodResponse, error) {
		return r.c.RestorePod(ctx, req)
	}, "checkpointPath", req.CheckpointPath)
	if err == nil && resp == nil {
		return nil, errors.New("RestorePod runtime service returned a nil response")
	}
	return resp, err
}

func (r *channelRuntime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := call(ctx, r.timeout, "CreateContainer in sandbox", func(ctx context.Context) (*runtimeapi.CreateContainerResponse, error) {
		return r.c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: config, SandboxConfig: sandboxConfig})
	}, "podSandboxID", sandboxID)
	if err != nil {
		return "", err
	}
	if resp.ContainerId == "" {
		return "", failed(ctx, "CreateContainer", fmt.Errorf("ContainerId is not set for container %q", config.GetMetadata()))
	}
	return resp.ContainerId, nil
}

func (r *channelRuntime) StartContainer(ctx context.Context, id string) error {
	_, err := call(ctx, r.timeout, "StartContainer", func(ctx context.Context) (*runtimeapi.StartContainerResponse, error) {
		return r.c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	}, "containerID", id)
	return err
}

func (r *channelRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	// The grace period on top of the timeout, as the remote client does.
	_, err := call(ctx, r.timeout+time.Duration(timeout)*time.Second, "StopContainer", func(ctx context.Context) (*runtimeapi.StopContainerResponse, error) {
		return r.c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	}, "containerID", id)
	return err
}

func (r *channelRuntime) RemoveContainer(ctx context.Context, id string) error {
	_, err := call(ctx, r.timeout, "RemoveContainer", func(ctx context.Context) (*runtimeapi.RemoveContainerResponse, error) {
		return r.c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	}, "containerID", id)
	return err
}

func (r *channelRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := call(ctx, r.timeout, "ListContainers with filter", func(ctx context.Context) (*runtimeapi.ListContainersResponse, error) {
		return r.c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	}, "filter", filter)
	return resp.GetContainers(), err
}

func (r *channelRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	resp, err := call(ctx, r.timeout, "ContainerStatus", func(ctx context.Context) (*runtimeapi.ContainerStatusResponse, error) {
		return r.c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
	}, "containerID", id)
	if err != nil {
		return nil, err
	}
	if st := resp.Status; st != nil {
		if err := checkContainerStatus(st); err != nil {
			klog.FromContext(ctx).Error(err, "verify ContainerStatus failed", "containerID", id)
			return nil, err
		}
	}
	return resp, nil
}

func (r *channelRuntime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.ContainerResources) error {
	_, err := call(ctx, r.timeout, "UpdateContainerResources", func(ctx context.Context) (*runtimeapi.UpdateContainerResourcesResponse, error) {
		return r.c.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
			ContainerId: id, Linux: resources.GetLinux(), Windows: resources.GetWindows()})
	}, "containerID", id)
	return err
}

func (r *channelRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	bound := r.timeout + timeout
	if timeout == 0 {
		bound = 0
	}
	resp, err := callUnbounded(ctx, bound, "ExecSync cmd", func(ctx context.Context) (*runtimeapi.ExecSyncResponse, error) {
		return r.c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout.Seconds())})
	}, "containerID", id, "cmd", cmd)
	if err != nil {
		if status.Code(err) == codes.DeadlineExceeded {
			err = fmt.Errorf("%w: %q timed out after %s", remote.ErrCommandTimedOut, strings.Join(cmd, " "), timeout)
		}
		return nil, nil, err
	}
	if resp.ExitCode != 0 {
		err = utilexec.CodeExitError{
			Err:  fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), resp.ExitCode, resp.Stderr),
			Code: int(resp.ExitCode),
		}
	}
	return resp.Stdout, resp.Stderr, err
}

// callUnbounded is call with no bound of its own when timeout is 0.
func callUnbounded[R any](ctx context.Context, timeout time.Duration, what string, fn func(context.Context) (R, error), kv ...any) (R, error) {
	if timeout > 0 {
		return call(ctx, timeout, what, fn, kv...)
	}
	r, err := fn(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, what+" from runtime service failed", kv...)
	}
	return r, err
}

func (r *channelRuntime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	resp, err := call(ctx, r.timeout, "Exec cmd", func(ctx context.Context) (*runtimeapi.ExecResponse, error) {
		return r.c.Exec(ctx, req)
	}, "containerID", req.GetContainerId(), "cmd", req.GetCmd())
	if err != nil {
		return nil, err
	}
	if resp.Url == "" {
		return nil, failed(ctx, "Exec", errors.New("URL is not set"))
	}
	return resp, nil
}

func (r *channelRuntime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	resp, err := call(ctx, r.timeout, "Attach container", func(ctx context.Context) (*runtimeapi.AttachResponse, error) {
		return r.c.Attach(ctx, req)
	}, "containerID", req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if resp.Url == "" {
		return nil, failed(ctx, "Attach", errors.New("URL is not set"))
	}
	return resp, nil
}

func (r *channelRuntime) ReopenContainerLog(ctx context.Context, id string) error {
	_, err := call(ctx, r.timeout, "ReopenContainerLog", func(ctx context.Context) (*runtimeapi.ReopenContainerLogResponse, error) {
		return r.c.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	}, "containerID", id)
	return err
}

func (r *channelRuntime) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	if req == nil {
		return errors.New("CheckpointContainer requires non-nil CheckpointRestoreOptions parameter")
	}
	if req.Timeout < 0 {
		return errors.New("CheckpointContainer requires the timeout value to be > 0")
	}
	timeout := r.timeout
	if def := int64(r.timeout / time.Second); req.Timeout > def {
		timeout = time.Duration(req.Timeout) * time.Second
	} else {
		req.Timeout = def
	}
	_, err := call(ctx, timeout, "CheckpointContainer", func(ctx context.Context) (*runtimeapi.CheckpointContainerResponse, error) {
		return r.c.CheckpointContainer(ctx, req)
	}, "containerID", req.ContainerId)
	return err
}

// GetContainerEvents streams the runtime's container events into ch until
// the stream fails (an error, io.EOF when it ends).
func (r *channelRuntime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	log := klog.FromContext(ctx)
	stream, err := r.c.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		log.Error(err, "GetContainerEvents failed to get streaming client")
		return err
	}
	if established != nil {
		established(stream)
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			log.Error(err, "container events stream is closed")
			return err
		}
		if err != nil {
			log.Error(err, "failed to receive streaming container event")
			return err
		}
		if ev != nil {
			ch <- ev
		}
	}
}

func (r *channelRuntime) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	resp, err := call(ctx, r.timeout, "ContainerStats", func(ctx context.Context) (*runtimeapi.ContainerStatsResponse, error) {
		return r.c.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	}, "containerID", id)
	return resp.GetStats(), err
}

func (r *channelRuntime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	resp, err := call(ctx, r.timeout, "ListContainerStats with filter", func(ctx context.Context) (*runtimeapi.ListContainerStatsResponse, error) {
		return r.c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	}, "filter", filter)
	return resp.GetStats(), err
}

func (r *channelRuntime) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	resp, err := call(ctx, r.timeout, "PodSandboxStats", func(ctx context.Context) (*runtimeapi.PodSandboxStatsResponse, error) {
		return r.c.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
	}, "podSandboxID", id)
	return resp.GetStats(), err
}

func (r *channelRuntime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	resp, err := call(ctx, r.timeout, "ListPodSandboxStats with filter", func(ctx context.Context) (*runtimeapi.ListPodSandboxStatsResponse, error) {
		return r.c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	}, "filter", filter)
	return resp.GetStats(), err
}

func (r *channelRuntime) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	resp, err := call(ctx, r.timeout, "ListMetricDescriptors", func(ctx context.Context) (*runtimeapi.ListMetricDescriptorsResponse, error) {
		return r.c.ListMetricDescriptors(ctx, &runtimeapi.ListMetricDescriptorsRequest{})
	})
	return resp.GetDescriptors(), err
}

func (r *channelRuntime) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	resp, err := call(ctx, r.timeout, "ListPodSandboxMetrics", func(ctx context.Context) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
		return r.c.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	})
	return resp.GetPodMetrics(), err
}

func (r *channelRuntime) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	// Not logged, as the remote client does not log it.
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	_, err := r.c.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: cfg})
	return err
}

func (r *channelRuntime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	resp, err := call(ctx, r.timeout, "Status", func(ctx context.Context) (*runtimeapi.StatusResponse, error) {
		return r.c.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
	})
	if err != nil {
		return nil, err
	}
	if resp.Status == nil || len(resp.Status.Conditions) < 2 {
		return nil, failed(ctx, "Status", errors.New("RuntimeReady or NetworkReady condition are not set"))
	}
	return resp, nil
}

func (r *channelRuntime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return call(ctx, r.timeout, "RuntimeConfig", func(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
		return r.c.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	})
}

// Close does nothing: the channel is the process's.
func (r *channelRuntime) Close(context.Context) error { return nil }

func (i *channelImages) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	resp, err := call(ctx, i.timeout, "ListImages with filter from image service", func(ctx context.Context) (*runtimeapi.ListImagesResponse, error) {
		return i.c.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: filter})
	}, "filter", filter)
	return resp.GetImages(), err
}

func (i *channelImages) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	resp, err := call(ctx, i.timeout, "Get ImageStatus from image service", func(ctx context.Context) (*runtimeapi.ImageStatusResponse, error) {
		return i.c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
	}, "image", image.GetImage())
	if err != nil {
		return nil, err
	}
	if img := resp.Image; img != nil && (img.Id == "" || img.Size == 0) {
		err := fmt.Errorf("Id or size of image %q is not set", image.GetImage())
		klog.FromContext(ctx).Error(err, "ImageStatus failed", "image", image.GetImage())
		return nil, err
	}
	return resp, nil
}

func (i *channelImages) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	// A pull is bounded by its caller only, as the remote client's is.
	resp, err := i.c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandbox})
	if err != nil {
		klog.FromContext(ctx).Error(err, "PullImage from image service failed", "image", image.GetImage())
		// An Unknown status's code adds nothing to its message.
		if st, ok := status.FromError(err); ok && st.Code() == codes.Unknown {
			return "", errors.New(st.Message())
		}
		return "", err
	}
	if resp.ImageRef == "" {
		klog.FromContext(ctx).Error(errors.New("PullImage failed"), "ImageRef of image is not set", "image", image.GetImage())
		return "", fmt.Errorf("imageRef of image %q is not set", image.GetImage())
	}
	return resp.ImageRef, nil
}

func (i *channelImages) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := call(ctx, i.timeout, "RemoveImage from image service", func(ctx context.Context) (*runtimeapi.RemoveImageResponse, error) {
		return i.c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	}, "image", image.GetImage())
	return err
}

func (i *channelImages) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return call(ctx, i.timeout, "ImageFsInfo from image service", func(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
		return i.c.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	})
}

// Close does nothing: the channel is the process's.
func (i *channelImages) Close(context.Context) error { return nil }

// checkSandboxStatus refuses a sandbox status without the fields every
// caller reads, as the remote client does.
func checkSandboxStatus(st *runtimeapi.PodSandboxStatus) error {
	switch md := st.Metadata; {
	case st.Id == "":
		return errors.New("status.Id is not set")
	case md == nil:
		return errors.New("status.Metadata is not set")
	case md.Name == "" || md.Namespace == "" || md.Uid == "":
		return fmt.Errorf("metadata.Name, metadata.Namespace or metadata.Uid is not in metadata %q", md)
	case st.CreatedAt == 0:
		return errors.New("status.CreatedAt is not set")
	}
	return nil
}

// checkContainerStatus is checkSandboxStatus for a container's status.
func checkContainerStatus(st *runtimeapi.ContainerStatus) error {
	switch md := st.Metadata; {
	case st.Id == "":
		return errors.New("status.Id is not set")
	case md == nil:
		return errors.New("status.Metadata is not set")
	case md.Name == "":
		return fmt.Errorf("metadata.Name is not in metadata %q", md)
	case st.CreatedAt == 0:
		return errors.New("status.CreatedAt is not set")
	case st.Image == nil || st.Image.Image == "":
		return errors.New("status.Image is not set")
	case st.ImageRef == "":
		return errors.New("status.ImageRef is not set")
	}
	return nil
}
