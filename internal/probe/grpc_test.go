package probe

import (
	"context"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// stuckHealth answers no Check until the caller gives up.
type stuckHealth struct {
	healthpb.UnimplementedHealthServer
}

func (stuckHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// serveGRPC starts srv on 127.0.0.1 and returns its port.
func serveGRPC(t *testing.T, srv *grpc.Server) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// freePort is a port on 127.0.0.1 nothing listens on.
func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	return port
}

// TestGRPCProbeAsTheKubeletMakesIt: against a real
// grpc.health.v1 server on 127.0.0.1: only SERVING succeeds, and each
// failure has the kubelet's output.
func TestGRPCProbeAsTheKubeletMakesIt(t *testing.T) {
	var (
		mu     sync.Mutex
		agents []string
	)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("ready", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("draining", healthpb.HealthCheckResponse_NOT_SERVING)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		agents = append(agents, md.Get("user-agent")...)
		mu.Unlock()
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, hs)
	port := serveGRPC(t, srv)

	stuck := grpc.NewServer()
	healthpb.RegisterHealthServer(stuck, stuckHealth{})
	stuckPort := serveGRPC(t, stuck)

	noHealth := serveGRPC(t, grpc.NewServer())
	closed := freePort(t)

	const to = 300 * time.Millisecond
	tests := []struct {
		name       string
		action     *syncpodv1.GRPCAction
		want       Outcome
		wantOutput string // a prefix of the output
	}{
		{"serving, no service named", &syncpodv1.GRPCAction{Port: port}, Success, ""},
		{"serving service", &syncpodv1.GRPCAction{Port: port, Service: "ready"}, Success, ""},
		{"not serving", &syncpodv1.GRPCAction{Port: port, Service: "draining"}, Failure,
			`service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", &syncpodv1.GRPCAction{Port: port, Service: "nope"}, Failure,
			"error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{"no health service", &syncpodv1.GRPCAction{Port: noHealth}, Failure,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"unreachable", &syncpodv1.GRPCAction{Port: closed}, Failure,
			`timeout: failed to connect service "127.0.0.1:` + strconv.Itoa(int(closed)) + `" within 300ms: context deadline exceeded`},
		{"answer too late", &syncpodv1.GRPCAction{Port: stuckPort}, Failure,
			"timeout: health rpc did not complete within 300ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, detail := grpcAttempt(context.Background(), tc.action, "127.0.0.1", to)
			if out != tc.want || !strings.HasPrefix(detail, tc.wantOutput) || (tc.wantOutput == "" && detail != "") {
				t.Fatalf("outcome %v %q, want %v %q", out, detail, tc.want, tc.wantOutput)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(agents) == 0 || !strings.HasPrefix(agents[0], "kube-probe/1.37") {
		t.Errorf("user agents %q, want the kubelet's kube-probe/1.37", agents)
	}
}

// TestGRPCProbeIsAProbeHandler: a Probe with a grpc handler goes to the
// target's host with the probe's timeout, as tcp_socket and http_get do.
func TestGRPCProbeIsAProbeHandler(t *testing.T) {
	hs := health.NewServer()
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	port := serveGRPC(t, srv)
	p := &syncpodv1.Probe{TimeoutSeconds: 5, Handler: &syncpodv1.Probe_Grpc{Grpc: &syncpodv1.GRPCAction{Port: port}}}
	if out, detail := Attempt(context.Background(), nil, p, Target{Host: "127.0.0.1"}); out != Success {
		t.Fatalf("serving: %v %s", out, detail)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if out, detail := Attempt(context.Background(), nil, p, Target{Host: "127.0.0.1"}); out != Failure {
		t.Fatalf("not serving: %v %s, want failure", out, detail)
	}
}

// TestGRPCProbeTLSMode: with tls set the probe speaks TLS and verifies no
// certificate (a self-signed one here); a plaintext probe of the same
// server fails.
func TestGRPCProbeTLSMode(t *testing.T) {
	certs := httptest.NewUnstartedServer(nil)
	certs.StartTLS()
	cert := certs.TLS.Certificates[0]
	certs.Close()
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	port := serveGRPC(t, srv)
	if out, detail := grpcAttempt(context.Background(), &syncpodv1.GRPCAction{Port: port, Tls: true}, "127.0.0.1", 5*time.Second); out != Success {
		t.Fatalf("tls: %v %s", out, detail)
	}
	if out, detail := grpcAttempt(context.Background(), &syncpodv1.GRPCAction{Port: port}, "127.0.0.1", 300*time.Millisecond); out != Failure {
		t.Fatalf("plaintext against tls: %v %s, want failure", out, detail)
	}
}

// TestGRPCProbeStoppedIsNoFailure: a probe cut short because the prober
// stops is not a failed check.
func TestGRPCProbeStoppedIsNoFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, detail := grpcAttempt(ctx, &syncpodv1.GRPCAction{Port: freePort(t)}, "127.0.0.1", time.Second); out != Error {
		t.Fatalf("%v %s, want an error outcome", out, detail)
	}
}
