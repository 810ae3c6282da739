package cri

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
)

// Dial connects to the CRI runtime at endpoint (unix:///path); the
// kubelet's client checks the connection with a Version call. timeout
// bounds the connection and is the client's default per-call timeout;
// callers add tighter deadlines of their own.
func Dial(ctx context.Context, endpoint string, timeout time.Duration) (internalapi.RuntimeService, error) {
	rs, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(timeout).
		WithTracerProvider(nil).
		WithUseStreaming(false). // containerd 1.6 has no CRI list streaming
		Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("cri %s: %w", endpoint, err)
	}
	return rs, nil
}

// quiet silences the client library's own (klog) logging for one call:
// the PLEG logs every outcome itself, at the right level (an Unimplemented
// event stream is an info-level fallback, not an error).
func quiet(ctx context.Context) context.Context {
	return logr.NewContext(ctx, logr.Discard())
}

// Lazy is a runtime client that connects on first use and retries the
// connection on every call until it succeeds, so a PLEG can start (and
// report itself unhealthy) before its runtime is up. Calls made while
// unconnected fail with codes.Unavailable.
type Lazy struct {
	endpoint string
	timeout  time.Duration
	mu       sync.Mutex
	rs       internalapi.RuntimeService
}

// NewLazy returns a lazily connecting client of endpoint.
func NewLazy(endpoint string, timeout time.Duration) *Lazy {
	return &Lazy{endpoint: endpoint, timeout: timeout}
}

func (l *Lazy) get(ctx context.Context) (internalapi.RuntimeService, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rs != nil {
		return l.rs, nil
	}
	rs, err := Dial(ctx, l.endpoint, l.timeout)
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	l.rs = rs
	return rs, nil
}

// Close closes the connection, if any.
func (l *Lazy) Close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rs == nil {
		return nil
	}
	err := l.rs.Close(ctx)
	l.rs = nil
	return err
}

// ListPodSandbox is RuntimeService.ListPodSandbox.
func (l *Lazy) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx = quiet(ctx)
	rs, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rs.ListPodSandbox(ctx, f)
}

// ListContainers is RuntimeService.ListContainers.
func (l *Lazy) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx = quiet(ctx)
	rs, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rs.ListContainers(ctx, f)
}

// PodSandboxStatus is RuntimeService.PodSandboxStatus.
func (l *Lazy) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	ctx = quiet(ctx)
	rs, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rs.PodSandboxStatus(ctx, id, verbose)
}

// ContainerStatus is RuntimeService.ContainerStatus.
func (l *Lazy) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	ctx = quiet(ctx)
	rs, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rs.ContainerStatus(ctx, id, verbose)
}

// GetContainerEvents is RuntimeService.GetContainerEvents.
func (l *Lazy) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, cb func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	ctx = quiet(ctx)
	rs, err := l.get(ctx)
	if err != nil {
		return err
	}
	return rs.GetContainerEvents(ctx, ch, cb)
}

// Version is RuntimeService.Version: the runtime's name and versions.
func (l *Lazy) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	ctx = quiet(ctx)
	rs, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return rs.Version(ctx, apiVersion)
}
