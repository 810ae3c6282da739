package cri

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/util"
)

// A Conn made WithListCodec sends the Observer's two list calls over a
// gRPC connection of its own, whose every call uses the codec: the
// kubelet's remote client takes no gRPC options, so its connection keeps
// gRPC's protobuf codec. The list connection is made as the remote client
// makes its own: the same socket, message size limit and reconnection
// backoff; each list has the Conn's timeout, as the remote client's
// lists have.

// ConnOption configures a Conn.
type ConnOption func(*Conn)

// WithListCodec makes codec the codec of the Observer's ListPodSandbox
// and ListContainers calls (the PLEG's relist lists: cri/listcodec).
func WithListCodec(codec encoding.CodecV2) ConnOption {
	return func(c *Conn) { c.listCodec = codec }
}

// maxListMsgSize is the remote client's limit on a received message.
const maxListMsgSize = 16 << 20

// lists returns the client of the list connection, made on first use
// once the runtime service is reachable (so a list fails with
// ErrUnavailable as the other calls do while it is not).
func (c *Conn) lists(ctx context.Context) (runtimeapi.RuntimeServiceClient, error) {
	if _, err := c.Runtime(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listConn == nil {
		addr, dialer, err := util.GetAddressAndDialer(c.endpoint)
		if err != nil {
			return nil, &unavailableError{fmt.Errorf("runtime service %s: %w", c.endpoint, err)}
		}
		conn, err := grpc.NewClient("passthrough:///"+addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithAuthority("localhost"),
			grpc.WithContextDialer(dialer),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxListMsgSize), grpc.ForceCodecV2(c.listCodec)),
			grpc.WithConnectParams(grpc.ConnectParams{ // the remote client's reconnection backoff
				Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: backoff.DefaultConfig.Multiplier,
					Jitter: backoff.DefaultConfig.Jitter, MaxDelay: 3 * time.Second},
				MinConnectTimeout: 5 * time.Second,
			}))
		if err != nil {
			return nil, &unavailableError{fmt.Errorf("runtime service %s: %w", c.endpoint, err)}
		}
		c.listConn = conn
	}
	return runtimeapi.NewRuntimeServiceClient(c.listConn), nil
}

// listPodSandbox is ListPodSandbox over the list connection.
func (c *Conn) listPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	lc, err := c.lists(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := lc.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: f})
	if err != nil {
		return nil, err
	}
	return resp.GetItems(), nil
}

// listContainers is ListContainers over the list connection.
func (c *Conn) listContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	lc, err := c.lists(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := lc.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: f})
	if err != nil {
		return nil, err
	}
	return resp.GetContainers(), nil
}
