package cri

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Operation types (the kubelet's operation_type label values).
const (
	OpVersion          = "version"
	OpRunPodSandbox    = "run_podsandbox"
	OpStopPodSandbox   = "stop_podsandbox"
	OpRemovePodSandbox = "remove_podsandbox"
	OpPodSandboxStatus = "podsandbox_status"
	OpListPodSandbox   = "list_podsandbox"
	OpCreateContainer  = "create_container"
	OpStartContainer   = "start_container"
	OpStopContainer    = "stop_container"
	OpRemoveContainer  = "remove_container"
	OpListContainers   = "list_containers"
	OpContainerStatus  = "container_status"
	OpListImages       = "list_images"
	OpImageStatus      = "image_status"
	OpPullImage        = "pull_image"
	OpRemoveImage      = "remove_image"
)

// Metrics are the kubelet's runtime-operation metrics under
// syncpod_executor_.
type Metrics struct {
	ops      *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates and registers the runtime-operation metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "syncpod", Subsystem: "executor", Name: "runtime_operations_total",
			Help: "CRI operations by operation type.",
		}, []string{"operation_type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "syncpod", Subsystem: "executor", Name: "runtime_operations_errors_total",
			Help: "Failed CRI operations by operation type.",
		}, []string{"operation_type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "syncpod", Subsystem: "executor", Name: "runtime_operations_duration_seconds",
			Help:    "Duration of CRI operations by operation type.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 14),
		}, []string{"operation_type"}),
	}
	for _, c := range []prometheus.Collector{m.ops, m.errors, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Timeouts bound CRI calls.
type Timeouts struct {
	// Call bounds every call (StopContainer gets its grace period on top).
	Call time.Duration
	// Pull bounds PullImage.
	Pull time.Duration
}

// DefaultTimeouts are the kubelet's runtime request timeout (2 min) and a
// pull bound of 10 min.
var DefaultTimeouts = Timeouts{Call: 2 * time.Minute, Pull: 10 * time.Minute}

func (t Timeouts) orDefault() Timeouts {
	if t.Call <= 0 {
		t.Call = DefaultTimeouts.Call
	}
	if t.Pull <= 0 {
		t.Pull = DefaultTimeouts.Pull
	}
	return t
}

type caller struct {
	m *Metrics
	t Timeouts
}

func (c caller) do(ctx context.Context, op string, timeout time.Duration, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := Classify(fn(ctx))
	if c.m != nil {
		c.m.ops.WithLabelValues(op).Inc()
		c.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
		if err != nil {
			c.m.errors.WithLabelValues(op).Inc()
		}
	}
	return err
}

// Runtime decorates a RuntimeService: the calls the executor makes get a
// timeout, metrics and classified errors; other calls pass through.
type Runtime struct {
	internalapi.RuntimeService
	c caller
}

// NewRuntime wraps rs. m may be nil (no metrics).
func NewRuntime(rs internalapi.RuntimeService, m *Metrics, t Timeouts) *Runtime {
	return &Runtime{RuntimeService: rs, c: caller{m: m, t: t.orDefault()}}
}

// Version calls the runtime's Version.
func (r *Runtime) Version(ctx context.Context, apiVersion string) (resp *runtimeapi.VersionResponse, err error) {
	err = r.c.do(ctx, OpVersion, r.c.t.Call, func(ctx context.Context) error {
		resp, err = r.RuntimeService.Version(ctx, apiVersion)
		return err
	})
	return resp, err
}

// RunPodSandbox creates and starts a sandbox.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (id string, err error) {
	err = r.c.do(ctx, OpRunPodSandbox, r.c.t.Call, func(ctx context.Context) error {
		id, err = r.RuntimeService.RunPodSandbox(ctx, config, handler)
		return err
	})
	return id, err
}

// StopPodSandbox stops a sandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	return r.c.do(ctx, OpStopPodSandbox, r.c.t.Call, func(ctx context.Context) error {
		return r.RuntimeService.StopPodSandbox(ctx, id)
	})
}

// RemovePodSandbox removes a sandbox.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	return r.c.do(ctx, OpRemovePodSandbox, r.c.t.Call, func(ctx context.Context) error {
		return r.RuntimeService.RemovePodSandbox(ctx, id)
	})
}

// PodSandboxStatus reads a sandbox's status.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (resp *runtimeapi.PodSandboxStatusResponse, err error) {
	err = r.c.do(ctx, OpPodSandboxStatus, r.c.t.Call, func(ctx context.Context) error {
		resp, err = r.RuntimeService.PodSandboxStatus(ctx, id, verbose)
		return err
	})
	return resp, err
}

// ListPodSandbox lists sandboxes.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) (out []*runtimeapi.PodSandbox, err error) {
	err = r.c.do(ctx, OpListPodSandbox, r.c.t.Call, func(ctx context.Context) error {
		out, err = r.RuntimeService.ListPodSandbox(ctx, filter)
		return err
	})
	return out, err
}

// CreateContainer creates a container in a sandbox.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (id string, err error) {
	err = r.c.do(ctx, OpCreateContainer, r.c.t.Call, func(ctx context.Context) error {
		id, err = r.RuntimeService.CreateContainer(ctx, sandboxID, config, sandboxConfig)
		return err
	})
	return id, err
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	return r.c.do(ctx, OpStartContainer, r.c.t.Call, func(ctx context.Context) error {
		return r.RuntimeService.StartContainer(ctx, id)
	})
}

// StopContainer stops a container with a grace period of timeout seconds;
// the call may take that long on top of the call timeout.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	return r.c.do(ctx, OpStopContainer, r.c.t.Call+time.Duration(timeout)*time.Second, func(ctx context.Context) error {
		return r.RuntimeService.StopContainer(ctx, id, timeout)
	})
}

// RemoveContainer removes a container.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	return r.c.do(ctx, OpRemoveContainer, r.c.t.Call, func(ctx context.Context) error {
		return r.RuntimeService.RemoveContainer(ctx, id)
	})
}

// ListContainers lists containers.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) (out []*runtimeapi.Container, err error) {
	err = r.c.do(ctx, OpListContainers, r.c.t.Call, func(ctx context.Context) error {
		out, err = r.RuntimeService.ListContainers(ctx, filter)
		return err
	})
	return out, err
}

// ContainerStatus reads a container's status.
func (r *Runtime) ContainerStatus(ctx context.Context, id string, verbose bool) (resp *runtimeapi.ContainerStatusResponse, err error) {
	err = r.c.do(ctx, OpContainerStatus, r.c.t.Call, func(ctx context.Context) error {
		resp, err = r.RuntimeService.ContainerStatus(ctx, id, verbose)
		return err
	})
	return resp, err
}

// Images decorates an ImageManagerService like Runtime.
type Images struct {
	internalapi.ImageManagerService
	c caller
}

// NewImages wraps is. m may be nil (no metrics).
func NewImages(is internalapi.ImageManagerService, m *Metrics, t Timeouts) *Images {
	return &Images{ImageManagerService: is, c: caller{m: m, t: t.orDefault()}}
}

// ListImages lists images.
func (i *Images) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) (out []*runtimeapi.Image, err error) {
	err = i.c.do(ctx, OpListImages, i.c.t.Call, func(ctx context.Context) error {
		out, err = i.ImageManagerService.ListImages(ctx, filter)
		return err
	})
	return out, err
}

// ImageStatus reads an image's status; a missing image is a nil Image.
func (i *Images) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (resp *runtimeapi.ImageStatusResponse, err error) {
	err = i.c.do(ctx, OpImageStatus, i.c.t.Call, func(ctx context.Context) error {
		resp, err = i.ImageManagerService.ImageStatus(ctx, image, verbose)
		return err
	})
	return resp, err
}

// PullImage pulls an image, bounded by the pull timeout.
func (i *Images) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (ref string, err error) {
	err = i.c.do(ctx, OpPullImage, i.c.t.Pull, func(ctx context.Context) error {
		ref, err = i.ImageManagerService.PullImage(ctx, image, auth, sandbox)
		return err
	})
	return ref, err
}

// RemoveImage removes an image.
func (i *Images) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	return i.c.do(ctx, OpRemoveImage, i.c.t.Call, func(ctx context.Context) error {
		return i.ImageManagerService.RemoveImage(ctx, image)
	})
}
