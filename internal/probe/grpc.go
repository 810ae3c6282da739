package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// grpcUserAgent is the user agent of a grpc probe: the kubelet's, for the
// Kubernetes minor version syncpod follows.
const grpcUserAgent = "kube-probe/1.37"

// grpcAttempt makes a grpc probe attempt: a connection to host:port
// that must be ready within timeout, then grpc.health.v1.Health/Check for
// the probe's service, within what is left of it. Only SERVING succeeds;
// every other answer, and a connection that never became ready, fails
// with the kubelet's output. Only this process being stopped (ctx
// cancelled) is an error rather than a failure.
func grpcAttempt(ctx context.Context, g *syncpodv1.GRPCAction, host string, timeout time.Duration) (Outcome, string) {
	addr := net.JoinHostPort(host, strconv.Itoa(int(g.GetPort())))
	creds := insecure.NewCredentials()
	if g.GetTls() {
		// As the kubelet's TLS mode: encrypted, no certificate verified.
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // as the kubelet
	}
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(creds), grpc.WithUserAgent(grpcUserAgent))
	if err != nil {
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
	}
	defer func() { _ = conn.Close() }()

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The kubelet dials blocking: a refused or unreachable port is retried
	// with gRPC's back-off until the timeout.
	conn.Connect()
	for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
		if conn.WaitForStateChange(ctx, s) {
			continue
		}
		switch {
		case parent.Err() != nil:
			return Error, parent.Err().Error()
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, ctx.Err())
		default:
			return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, ctx.Err())
		}
	}

	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: g.GetService()})
	if err != nil {
		if parent.Err() != nil {
			return Error, parent.Err().Error()
		}
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return Failure, "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message()
			case codes.DeadlineExceeded:
				return Failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
			}
		}
		return Failure, fmt.Sprintf("error: health rpc probe failed: %+v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return Success, ""
}
