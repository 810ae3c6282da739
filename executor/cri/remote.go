package cri

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
)

// Dial connects to the CRI endpoint (unix:///path) with the kubelet's
// remote clients, which check that it answers, within timeout. The
// returned services are not instrumented; wrap them with NewRuntime and
// NewImages.
func Dial(ctx context.Context, endpoint string, timeout time.Duration) (internalapi.RuntimeService, internalapi.ImageManagerService, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rs, err := remote.NewRemoteRuntimeService(ctx, endpoint, timeout, nil, false)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: runtime service %s: %w", ErrUnavailable, endpoint, err)
	}
	is, err := remote.NewRemoteImageService(ctx, endpoint, timeout, nil, false)
	if err != nil {
		_ = rs.Close(ctx)
		return nil, nil, fmt.Errorf("%w: image service %s: %w", ErrUnavailable, endpoint, err)
	}
	return rs, is, nil
}

// RetryInterval is the least time between two connection attempts of a
// Conn.
const RetryInterval = time.Second

// Conn is a CRI connection made on first use, so the executor can start
// (and answer Unavailable) before the runtime is up. Safe for concurrent
// use.
type Conn struct {
	endpoint string
	timeout  time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	rs      internalapi.RuntimeService
	is      internalapi.ImageManagerService
	lastTry time.Time
	lastErr error
}

// NewConn returns a lazy connection to endpoint; logger nil discards.
func NewConn(endpoint string, timeout time.Duration, logger *slog.Logger) *Conn {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Conn{endpoint: endpoint, timeout: timeout, log: logger}
}

// Connect returns the services, dialling if not connected yet (at most
// once per RetryInterval; in between the last error is returned).
func (c *Conn) Connect(ctx context.Context) (internalapi.RuntimeService, internalapi.ImageManagerService, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rs != nil {
		return c.rs, c.is, nil
	}
	if !c.lastTry.IsZero() && time.Since(c.lastTry) < RetryInterval {
		return nil, nil, c.lastErr
	}
	c.lastTry = time.Now()
	rs, is, err := Dial(ctx, c.endpoint, c.timeout)
	if err != nil {
		c.lastErr = err
		c.log.Warn("CRI runtime not reachable", "cri_endpoint", c.endpoint, "err", err)
		return nil, nil, err
	}
	c.log.Info("connected to the CRI runtime", "cri_endpoint", c.endpoint)
	c.rs, c.is = rs, is
	return rs, is, nil
}

func (c *Conn) runtime(ctx context.Context) (internalapi.RuntimeService, error) {
	rs, _, err := c.Connect(ctx)
	return rs, err
}

func (c *Conn) images(ctx context.Context) (internalapi.ImageManagerService, error) {
	_, is, err := c.Connect(ctx)
	return is, err
}

// Close closes the connection, if any.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rs == nil {
		return nil
	}
	err := c.rs.Close(context.Background())
	if e := c.is.Close(context.Background()); err == nil {
		err = e
	}
	c.rs, c.is = nil, nil
	return err
}
