package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/syncpod/syncpod/internal/errgrpc"
)

// ErrUnavailable is the class of errors of a runtime that cannot be
// reached (socket missing, connection refused, runtime down); it is of
// errgrpc's Unavailable class.
var ErrUnavailable = errgrpc.New(errgrpc.ErrUnavailable, "container runtime unavailable")

// unavailableError is a failed dial: ErrUnavailable for errors.Is and
// codes.Unavailable for gRPC, so a service may return it as it is.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return fmt.Sprintf("%v: %v", ErrUnavailable, e.err) }

func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// GRPCStatus makes the error codes.Unavailable for status.FromError, the
// status errgrpc gives its class.
func (e *unavailableError) GRPCStatus() *status.Status {
	return status.Convert(errgrpc.ToGRPC(errgrpc.New(ErrUnavailable, e.Error())))
}

// Dial connects to the CRI runtime service at endpoint (unix:///path);
// the kubelet's client checks the connection with a Version call. timeout
// bounds the dial and is the client's default per-call timeout; callers
// add tighter deadlines of their own.
func Dial(ctx context.Context, endpoint string, timeout time.Duration) (internalapi.RuntimeService, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rs, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(timeout).
		WithTracerProvider(nil).
		WithUseStreaming(false). // containerd 1.6 has no CRI list streaming
		Build(ctx)
	if err != nil {
		return nil, &unavailableError{fmt.Errorf("runtime service %s: %w", endpoint, err)}
	}
	return rs, nil
}

// DialImages connects to the CRI image service at endpoint, as Dial.
func DialImages(ctx context.Context, endpoint string, timeout time.Duration) (internalapi.ImageManagerService, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	is, err := remote.NewRemoteImageService(ctx, endpoint, timeout, nil, false)
	if err != nil {
		return nil, &unavailableError{fmt.Errorf("image service %s: %w", endpoint, err)}
	}
	return is, nil
}

// RetryInterval is the least time between two dials of a Conn; in between
// the last dial error is returned.
const RetryInterval = time.Second

// Conn is a CRI connection made on first use. The runtime and the image
// service are dialled separately, each when first asked for. Safe for
// concurrent use.
type Conn struct {
	endpoint string
	timeout  time.Duration
	log      *slog.Logger

	mu       sync.Mutex
	rs       internalapi.RuntimeService
	is       internalapi.ImageManagerService
	rsDialed lazyDial
	isDialed lazyDial

	listCodec encoding.CodecV2 // WithListCodec; nil: lists go through rs
	listConn  *grpc.ClientConn // lists.go, made on first list

	// inProcess is WithInProcess's lookup (inprocess.go); chRS and chIS
	// are the clients of the channel it last answered, ch.
	inProcess func() grpc.ClientConnInterface
	ch        grpc.ClientConnInterface
	chRS      *channelRuntime
	chIS      *channelImages
}

// lazyDial throttles the dials of one service.
type lazyDial struct {
	lastTry time.Time
	lastErr error
}

// due reports whether a dial may be tried now; if not, the last error is
// to be returned.
func (d *lazyDial) due(now time.Time) bool {
	return d.lastTry.IsZero() || now.Sub(d.lastTry) >= RetryInterval
}

// NewConn returns a lazy connection to endpoint; timeout bounds each dial
// and is the remote client's default call timeout. logger nil discards.
func NewConn(endpoint string, timeout time.Duration, logger *slog.Logger, opts ...ConnOption) *Conn {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Conn{endpoint: endpoint, timeout: timeout, log: logger}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Runtime returns the runtime service, dialling it if not connected yet;
// the in-process one while it is offered (WithInProcess).
func (c *Conn) Runtime(ctx context.Context) (internalapi.RuntimeService, error) {
	if rs, _ := c.channelClients(); rs != nil {
		return rs, nil
	}
	return connect(ctx, c, &c.rs, &c.rsDialed, "runtime", Dial)
}

// Images returns the image service, dialling it if not connected yet;
// the in-process one while it is offered (WithInProcess).
func (c *Conn) Images(ctx context.Context) (internalapi.ImageManagerService, error) {
	if _, is := c.channelClients(); is != nil {
		return is, nil
	}
	return connect(ctx, c, &c.is, &c.isDialed, "image", DialImages)
}

// channelClients are the clients of the in-process channel to the
// runtime, nil while none is offered.
func (c *Conn) channelClients() (*channelRuntime, *channelImages) {
	ch := c.channel()
	if ch == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != ch {
		if c.ch == nil {
			c.log.Info("calling the CRI runtime in-process", "cri_endpoint", c.endpoint)
		}
		c.ch, c.chRS, c.chIS = ch, newChannelRuntime(ch, c.timeout), newChannelImages(ch, c.timeout)
	}
	return c.chRS, c.chIS
}

// connect returns *svc, dialling it with dial unless the last try was less
// than RetryInterval ago (then the last error is returned).
func connect[S comparable](ctx context.Context, c *Conn, svc *S, d *lazyDial, what string, dial func(context.Context, string, time.Duration) (S, error)) (S, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero S
	if *svc != zero {
		return *svc, nil
	}
	now := time.Now()
	if !d.due(now) {
		return zero, d.lastErr
	}
	d.lastTry = now
	s, err := dial(ctx, c.endpoint, c.timeout)
	if err != nil {
		d.lastErr = err
		c.log.Warn("CRI runtime not reachable", "cri_endpoint", c.endpoint, "service", what, "err", err)
		return zero, err
	}
	d.lastErr = nil
	*svc = s
	c.log.Info("connected to the CRI runtime", "cri_endpoint", c.endpoint, "service", what)
	return s, nil
}

// Close closes the connections made, if any.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	if c.rs != nil {
		errs = append(errs, c.rs.Close(context.Background()))
	}
	if c.is != nil {
		errs = append(errs, c.is.Close(context.Background()))
	}
	if c.listConn != nil {
		errs = append(errs, c.listConn.Close())
	}
	c.rs, c.is, c.listConn = nil, nil, nil
	c.rsDialed, c.isDialed = lazyDial{}, lazyDial{}
	return errors.Join(errs...)
}

// Observer returns the read-only view of the runtime the PLEG uses over
// c's runtime service.
func (c *Conn) Observer() *Observer { return &Observer{c: c} }

// Observer is the read-only part of the runtime service: list, status and
// the container event stream. Each call connects first if needed (failing
// with ErrUnavailable, codes.Unavailable, while it cannot) and silences
// the remote client's own logging, since its caller logs every outcome at
// the level it deserves (an Unimplemented event stream is an info-level
// fallback, not an error).
type Observer struct{ c *Conn }

// quiet discards the client library's (klog) logging for one call.
func quiet(ctx context.Context) context.Context {
	return logr.NewContext(ctx, logr.Discard())
}

// ListPodSandbox is RuntimeService.ListPodSandbox.
func (o *Observer) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx = quiet(ctx)
	if o.c.listCodec != nil && o.c.channel() == nil {
		return o.c.listPodSandbox(ctx, f)
	}
	rs, err := o.c.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	return rs.ListPodSandbox(ctx, f)
}

// ListContainers is RuntimeService.ListContainers.
func (o *Observer) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx = quiet(ctx)
	if o.c.listCodec != nil && o.c.channel() == nil {
		return o.c.listContainers(ctx, f)
	}
	rs, err := o.c.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	return rs.ListContainers(ctx, f)
}

// PodSandboxStatus is RuntimeService.PodSandboxStatus.
func (o *Observer) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	ctx = quiet(ctx)
	rs, err := o.c.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	return rs.PodSandboxStatus(ctx, id, verbose)
}

// ContainerStatus is RuntimeService.ContainerStatus.
func (o *Observer) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	ctx = quiet(ctx)
	rs, err := o.c.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	return rs.ContainerStatus(ctx, id, verbose)
}

// GetContainerEvents is RuntimeService.GetContainerEvents.
func (o *Observer) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	ctx = quiet(ctx)
	rs, err := o.c.Runtime(ctx)
	if err != nil {
		return err
	}
	return rs.GetContainerEvents(ctx, ch, cb)
}

// Version is RuntimeService.Version: the runtime's name and versions.
func (o *Observer) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	ctx = quiet(ctx)
	rs, err := o.c.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	return rs.Version(ctx, apiVersion)
}
