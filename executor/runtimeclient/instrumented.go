package runtimeclient

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	edge "github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/internal/promreg"
)

// Operation types (the kubelet's operation_type label values).
const (
	OpVersion       = "version"
	OpRuntimeConfig = "runtime_config"
	// OpStatus reads the runtime's conditions and its handlers' features
	// (whether a handler runs user namespaces, R-27.2).
	OpStatus           = "status"
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
	// OpUpdateContainerResources resizes a container in place.
	OpUpdateContainerResources = "update_container_resources"
	// OpContainerStats reads a container's usage (the memory check of a
	// resize, R-25.6).
	OpContainerStats = "container_stats"
	OpListImages     = "list_images"
	OpImageStatus    = "image_status"
	OpPullImage      = "pull_image"
	OpRemoveImage    = "remove_image"
	OpExecSync       = "exec_sync"
)

// Metrics are the kubelet's runtime-operation metrics under
// syncpod_executor_.
type Metrics struct {
	ops      *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the runtime-operation metrics and registers them on
// reg (nil: not registered).
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
	if err := promreg.Register(reg, m.ops, m.errors, m.duration); err != nil {
		return nil, err
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
	m   *Metrics
	t   Timeouts
	log *CallLog // nil: calls not recorded
	// client, when set, is the logger the CRI client library logs each
	// call to (klog's logger of the call's context).
	client *logr.Logger
}

func (c caller) do(ctx context.Context, op string, timeout time.Duration, fn func(ctx context.Context) error) error {
	if c.client != nil {
		ctx = logr.NewContext(ctx, *c.client)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := Classify(fn(ctx))
	if c.log != nil {
		c.log.add(Call{Op: op, Start: start, Took: time.Since(start), Failed: err != nil})
	}
	if c.m != nil {
		c.m.ops.WithLabelValues(op).Inc()
		c.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
		if err != nil {
			c.m.errors.WithLabelValues(op).Inc()
		}
	}
	return err
}

// Runtime decorates the calls of a RuntimeService the executor makes (it
// satisfies RuntimeAPI): each gets a timeout, metrics and classified errors.
type Runtime struct {
	get func(ctx context.Context) (internalapi.RuntimeService, error)
	c   caller
}

// NewRuntime wraps rs. m may be nil (no metrics).
func NewRuntime(rs internalapi.RuntimeService, m *Metrics, t Timeouts) *Runtime {
	return &Runtime{get: func(context.Context) (internalapi.RuntimeService, error) { return rs, nil }, c: caller{m: m, t: t.orDefault()}}
}

// NewLazyRuntime wraps the runtime service of conn, which connects on
// first use; calls fail with ErrUnavailable until it does.
func NewLazyRuntime(conn *edge.Conn, m *Metrics, t Timeouts) *Runtime {
	return &Runtime{get: conn.Runtime, c: caller{m: m, t: t.orDefault()}}
}

// WithCallLog returns a view of r whose calls are also recorded in l.
func (r *Runtime) WithCallLog(l *CallLog) *Runtime {
	c := r.c
	c.log = l
	return &Runtime{get: r.get, c: c}
}

// WithClientLogger returns a view of r whose calls have the CRI client
// library log to l rather than to klog's process-wide logger.
func (r *Runtime) WithClientLogger(l logr.Logger) *Runtime {
	c := r.c
	c.client = &l
	return &Runtime{get: r.get, c: c}
}

// RuntimeAPI is the part of internalapi.RuntimeService the executor uses;
// every RuntimeService (the remote client, critest.Runtime) satisfies it.
type RuntimeAPI interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error
	ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error)
}

// ImageAPI is the part of internalapi.ImageManagerService the executor uses.
type ImageAPI interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
}

var (
	_ RuntimeAPI = internalapi.RuntimeService(nil)
	_ ImageAPI   = internalapi.ImageManagerService(nil)
	_ RuntimeAPI = (*Runtime)(nil)
	_ ImageAPI   = (*Images)(nil)
)

// Version calls the runtime's Version.
func (r *Runtime) Version(ctx context.Context, apiVersion string) (resp *runtimeapi.VersionResponse, err error) {
	err = r.c.do(ctx, OpVersion, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		resp, err = svc.Version(ctx, apiVersion)
		return err
	})
	return resp, err
}

// RuntimeConfig asks the runtime for its configuration (the cgroup
// driver it uses).
func (r *Runtime) RuntimeConfig(ctx context.Context) (resp *runtimeapi.RuntimeConfigResponse, err error) {
	err = r.c.do(ctx, OpRuntimeConfig, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		resp, err = svc.RuntimeConfig(ctx)
		return err
	})
	return resp, err
}

// Status asks the runtime for its conditions and its handlers'
// features.
func (r *Runtime) Status(ctx context.Context) (resp *runtimeapi.StatusResponse, err error) {
	err = r.c.do(ctx, OpStatus, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		resp, err = svc.Status(ctx, false)
		return err
	})
	return resp, err
}

// RunPodSandbox creates and starts a sandbox.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (id string, err error) {
	err = r.c.do(ctx, OpRunPodSandbox, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		id, err = svc.RunPodSandbox(ctx, config, handler)
		return err
	})
	return id, err
}

// StopPodSandbox stops a sandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	return r.c.do(ctx, OpStopPodSandbox, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		return svc.StopPodSandbox(ctx, id)
	})
}

// RemovePodSandbox removes a sandbox.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	return r.c.do(ctx, OpRemovePodSandbox, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		return svc.RemovePodSandbox(ctx, id)
	})
}

// PodSandboxStatus reads a sandbox's status.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (resp *runtimeapi.PodSandboxStatusResponse, err error) {
	err = r.c.do(ctx, OpPodSandboxStatus, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		resp, err = svc.PodSandboxStatus(ctx, id, verbose)
		return err
	})
	return resp, err
}

// ListPodSandbox lists sandboxes.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) (out []*runtimeapi.PodSandbox, err error) {
	err = r.c.do(ctx, OpListPodSandbox, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		out, err = svc.ListPodSandbox(ctx, filter)
		return err
	})
	return out, err
}

// CreateContainer creates a container in a sandbox.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (id string, err error) {
	err = r.c.do(ctx, OpCreateContainer, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		id, err = svc.CreateContainer(ctx, sandboxID, config, sandboxConfig)
		return err
	})
	return id, err
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	return r.c.do(ctx, OpStartContainer, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		return svc.StartContainer(ctx, id)
	})
}

// StopContainer stops a container with a grace period of timeout seconds;
// the call may take that long on top of the call timeout.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	return r.c.do(ctx, OpStopContainer, r.c.t.Call+time.Duration(timeout)*time.Second, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		return svc.StopContainer(ctx, id, timeout)
	})
}

// ExecSync runs a command in a container; the call may take the command's
// timeout on top of the usual one. A command that ran and exited non-zero
// is returned as an error with an ExitStatus method (see ExitCode), and is
// not counted as a runtime error.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	var exited error
	err = r.c.do(ctx, OpExecSync, r.c.t.Call+timeout, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		stdout, stderr, err = svc.ExecSync(ctx, id, cmd, timeout)
		if _, ok := ExitCode(err); ok {
			exited, err = err, nil
		}
		return err
	})
	if err == nil {
		err = exited
	}
	return stdout, stderr, err
}

// ExitCode reports the exit code carried by an ExecSync error for a
// command that ran and exited non-zero.
func ExitCode(err error) (int32, bool) {
	var e interface{ ExitStatus() int }
	if errors.As(err, &e) {
		return int32(e.ExitStatus()), true
	}
	return 0, false
}

// RemoveContainer removes a container.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	return r.c.do(ctx, OpRemoveContainer, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		return svc.RemoveContainer(ctx, id)
	})
}

// ListContainers lists containers.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) (out []*runtimeapi.Container, err error) {
	err = r.c.do(ctx, OpListContainers, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		out, err = svc.ListContainers(ctx, filter)
		return err
	})
	return out, err
}

// ContainerStatus reads a container's status.
func (r *Runtime) ContainerStatus(ctx context.Context, id string, verbose bool) (resp *runtimeapi.ContainerStatusResponse, err error) {
	err = r.c.do(ctx, OpContainerStatus, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		resp, err = svc.ContainerStatus(ctx, id, verbose)
		return err
	})
	return resp, err
}

// UpdateContainerResources changes a running container's resources in
// place.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.ContainerResources) error {
	return r.c.do(ctx, OpUpdateContainerResources, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		return svc.UpdateContainerResources(ctx, id, resources)
	})
}

// ContainerStats reads a container's usage.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (resp *runtimeapi.ContainerStats, err error) {
	err = r.c.do(ctx, OpContainerStats, r.c.t.Call, func(ctx context.Context) error {
		svc, err := r.get(ctx)
		if err != nil {
			return err
		}
		resp, err = svc.ContainerStats(ctx, id)
		return err
	})
	return resp, err
}

// Images decorates the calls of an ImageManagerService the executor makes
// (it satisfies ImageAPI) like Runtime.
type Images struct {
	get func(ctx context.Context) (internalapi.ImageManagerService, error)
	c   caller
}

// NewImages wraps is. m may be nil (no metrics).
func NewImages(is internalapi.ImageManagerService, m *Metrics, t Timeouts) *Images {
	return &Images{get: func(context.Context) (internalapi.ImageManagerService, error) { return is, nil }, c: caller{m: m, t: t.orDefault()}}
}

// NewLazyImages wraps the image service of conn like NewLazyRuntime.
func NewLazyImages(conn *edge.Conn, m *Metrics, t Timeouts) *Images {
	return &Images{get: conn.Images, c: caller{m: m, t: t.orDefault()}}
}

// WithCallLog returns a view of i whose calls are also recorded in l.
func (i *Images) WithCallLog(l *CallLog) *Images {
	c := i.c
	c.log = l
	return &Images{get: i.get, c: c}
}

// WithClientLogger is Runtime.WithClientLogger for images.
func (i *Images) WithClientLogger(l logr.Logger) *Images {
	c := i.c
	c.client = &l
	return &Images{get: i.get, c: c}
}

// ListImages lists images.
func (i *Images) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) (out []*runtimeapi.Image, err error) {
	err = i.c.do(ctx, OpListImages, i.c.t.Call, func(ctx context.Context) error {
		svc, err := i.get(ctx)
		if err != nil {
			return err
		}
		out, err = svc.ListImages(ctx, filter)
		return err
	})
	return out, err
}

// ImageStatus reads an image's status; a missing image is a nil Image.
func (i *Images) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (resp *runtimeapi.ImageStatusResponse, err error) {
	err = i.c.do(ctx, OpImageStatus, i.c.t.Call, func(ctx context.Context) error {
		svc, err := i.get(ctx)
		if err != nil {
			return err
		}
		resp, err = svc.ImageStatus(ctx, image, verbose)
		return err
	})
	return resp, err
}

// PullImage pulls an image, bounded by the pull timeout.
func (i *Images) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (ref string, err error) {
	err = i.c.do(ctx, OpPullImage, i.c.t.Pull, func(ctx context.Context) error {
		svc, err := i.get(ctx)
		if err != nil {
			return err
		}
		ref, err = svc.PullImage(ctx, image, auth, sandbox)
		return err
	})
	return ref, err
}

// RemoveImage removes an image.
func (i *Images) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	return i.c.do(ctx, OpRemoveImage, i.c.t.Call, func(ctx context.Context) error {
		svc, err := i.get(ctx)
		if err != nil {
			return err
		}
		return svc.RemoveImage(ctx, image)
	})
}
