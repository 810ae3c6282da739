package server

import (
	"context"
	"fmt"
	"time"

	"net"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Healthcheck asks the grpc.health.v1 service at addr for the overall
// status and returns nil only when it is SERVING. A TCP listen address on
// all interfaces (0.0.0.0:7001, :7001) is asked on loopback; dial says how
// (mutual TLS with the service's own certificate, or --insecure-tcp).
func Healthcheck(addr string, dial DialPolicy, timeout time.Duration) error {
	if network, address, err := SplitAddress(addr); err == nil && network == "tcp" {
		if host, port, err := net.SplitHostPort(address); err == nil {
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				addr = net.JoinHostPort("127.0.0.1", port)
			}
		}
	}
	conn, err := dial.Dial(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("%s: status %s", addr, resp.GetStatus())
	}
	return nil
}
