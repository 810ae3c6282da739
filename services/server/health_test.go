package server

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// TestHealthAnswersEachServiceName: the health service does not answer
// NotFound for a service's own name (as it would with only "" registered).
// Every registered service answers under its full name, and follows the
// overall status.
func TestHealthAnswersEachServiceName(t *testing.T) {
	for _, manages := range []bool{false, true} {
		name := map[bool]string{false: "server managed", true: "service managed"}[manages]
		t.Run(name, func(t *testing.T) {
			s, err := New(Options{Listen: "127.0.0.1:0", InsecureTCP: true, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), ServiceManagesHealth: manages})
			if err != nil {
				t.Fatal(err)
			}
			plannerv1.RegisterPlannerServiceServer(s.GRPC(), plannerv1.UnimplementedPlannerServiceServer{})
			if got := s.ServiceNames(); !slices.Equal(got, []string{"syncpod.planner.v1.PlannerService"}) {
				t.Fatalf("ServiceNames = %q", got)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- s.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-errc })
			conn, err := grpc.NewClient("passthrough:///"+s.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			hc := healthpb.NewHealthClient(conn)
			want := healthpb.HealthCheckResponse_SERVING
			if manages {
				want = healthpb.HealthCheckResponse_NOT_SERVING
			}
			check := func(want healthpb.HealthCheckResponse_ServingStatus) {
				t.Helper()
				for _, svc := range []string{"", "syncpod.planner.v1.PlannerService"} {
					resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
					if err != nil || resp.GetStatus() != want {
						t.Fatalf("Check(%q) = %v, %v; want %v", svc, resp, err, want)
					}
				}
			}
			waitStatus(t, hc, "syncpod.planner.v1.PlannerService", want)
			check(want)
			s.SetServingStatus(healthpb.HealthCheckResponse_NOT_SERVING)
			check(healthpb.HealthCheckResponse_NOT_SERVING)
			s.SetServingStatus(healthpb.HealthCheckResponse_SERVING)
			check(healthpb.HealthCheckResponse_SERVING)
		})
	}
}

// waitStatus waits until service is registered with status want (Run sets
// it as it starts).
func waitStatus(t *testing.T, hc healthpb.HealthClient, service string, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
		if err == nil && resp.GetStatus() == want {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%q never became %v: %v %v", service, want, resp, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
