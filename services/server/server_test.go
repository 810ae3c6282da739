package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// running is a Server under test, with a client connection.
type running struct {
	s      *Server
	conn   *grpc.ClientConn
	errc   chan error // Run's result
	cancel context.CancelFunc
}

// runServer builds a Server from opts, filling what a test leaves unset
// (loopback port 0, discarded logs, a fresh registry), runs it and dials
// it. Cleanup closes the connection and stops the server.
func runServer(t *testing.T, opts Options) *running {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if !opts.TLS.Set() {
		opts.InsecureTCP = true // the tests of mutual TLS are in authz_test.go
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, errc: make(chan error, 1), cancel: cancel}
	go func() { r.errc <- s.Run(ctx) }()
	target := "passthrough:///" + s.Addr().String()
	if s.Addr().Network() == "unix" {
		target = "unix://" + s.Addr().String()
	}
	r.conn, err = grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { r.conn.Close(); cancel() })
	return r
}

// wait returns Run's result, failing the test if Run does not return
// within d.
func (r *running) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-r.errc:
		return err
	case <-time.After(d):
		t.Fatalf("Run did not return within %s of the shutdown", d)
		return nil
	}
}

// startServer runs a Server with metrics on loopback and returns it, a
// client connection and a function that stops it and returns Run's error.
func startServer(t *testing.T, listen string, drain time.Duration) (*Server, *grpc.ClientConn, func() error) {
	t.Helper()
	r := runServer(t, Options{Listen: listen, MetricsListen: "127.0.0.1:0", ShutdownTimeout: drain})
	stopped := false
	return r.s, r.conn, func() error {
		if stopped {
			return nil
		}
		stopped = true
		r.cancel()
		return r.wait(t, drain+10*time.Second)
	}
}

func waitServing(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("server never became SERVING: %v %v", resp, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHealthReflectionAndMetrics(t *testing.T) {
	s, conn, _ := startServer(t, "127.0.0.1:0", 5*time.Second)
	waitServing(t, conn)

	// Reflection lists health and reflection itself.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatalf("reflection: %v", err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	joined := strings.Join(names, ",")
	for _, want := range []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !strings.Contains(joined, want) {
			t.Errorf("reflection lists %v, missing %s", names, want)
		}
	}
	_ = stream.CloseSend()

	// A call to an unknown method is counted by the gRPC server metrics.
	err = conn.Invoke(ctx, "/grpc.health.v1.Health/Nope", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: %v", err)
	}
	body := scrape(t, "http://"+s.MetricsAddr().String()+"/metrics")
	for _, want := range []string{
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"}`,
		"grpc_server_handling_seconds_bucket",
		"go_goroutines",
		"process_start_time_seconds",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A method's gRPC series appear with its first call; no method has
// series before.
func TestGRPCSeriesComeWithTheFirstCall(t *testing.T) {
	s, conn, stop := startServer(t, "127.0.0.1:0", time.Second)
	defer func() { _ = stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Health's Watch is never called here; Check is, once it serves.
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	body := scrape(t, "http://"+s.MetricsAddr().String()+"/metrics")
	for _, want := range []string{
		`grpc_server_started_total{grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 1`,
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 1`,
		`grpc_server_handling_seconds_count{grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, unwanted := range []string{
		`grpc_code="NotFound",grpc_method="Check"`,
		`grpc_method="Watch"`,
		`grpc_service="grpc.reflection.v1.ServerReflection"`,
	} {
		if strings.Contains(body, unwanted) {
			t.Errorf("/metrics has a series with %s before any such call", unwanted)
		}
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUnixSocketAndHealthcheck(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	_, conn, stop := startServer(t, "unix://"+sock, 5*time.Second)
	waitServing(t, conn)
	if err := Healthcheck("unix://"+sock, DialPolicy{}, 5*time.Second); err != nil {
		t.Fatalf("Healthcheck while serving: %v", err)
	}
	// A second server on the same live socket must refuse to start.
	if _, err := New(Options{Listen: "unix://" + sock, Logger: slog.Default(), Registry: prometheus.NewRegistry()}); err == nil {
		t.Fatal("second server took over a live socket")
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := Healthcheck("unix://"+sock, DialPolicy{}, 2*time.Second); err == nil {
		t.Fatal("Healthcheck succeeded after stop")
	}
}

func TestGracefulStopDrainsThenCuts(t *testing.T) {
	var logs bytes.Buffer
	srv := runServer(t, Options{ShutdownTimeout: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	conn, cancel := srv.conn, srv.cancel
	waitServing(t, conn)

	// An open health Watch stream is an in-flight RPC that never ends by
	// itself: shutdown must first report NOT_SERVING on it, then cut it once
	// the drain times out.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	w, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first watch status = %v, %v", r, err)
	}
	cancel()
	if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch during shutdown = %v, %v; want NOT_SERVING", r, err)
	}
	if err := srv.wait(t, 30*time.Second); err != nil {
		t.Fatalf("Run returned %v after a requested shutdown", err)
	}
	if _, err := w.Recv(); err == nil {
		t.Fatal("watch stream survived shutdown")
	}
	if !strings.Contains(logs.String(), "drain timed out") {
		t.Errorf("log does not say the drain was cut:\n%s", logs.String())
	}
}

func TestNewRejectsBusyAddress(t *testing.T) {
	s, _, _ := startServer(t, "127.0.0.1:0", time.Second)
	_, err := New(Options{Listen: s.Addr().String(), InsecureTCP: true, Logger: slog.Default(), Registry: prometheus.NewRegistry()})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("New on a busy port = %v, want a listen error", err)
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	var logs bytes.Buffer
	r := runServer(t, Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		ExtraServerOptions: []grpc.ServerOption{grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
			panic("boom")
		})},
	})
	conn := r.conn
	waitServing(t, conn)
	err := conn.Invoke(context.Background(), "/x.v1.X/Panic", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
	if status.Code(err) != codes.Internal {
		t.Fatalf("panicking handler returned %v, want Internal", err)
	}
	if !strings.Contains(logs.String(), "panic in gRPC handler") {
		t.Errorf("panic not logged:\n%s", logs.String())
	}
	// The server survives the panic.
	waitServing(t, conn)
}

func TestServiceManagesHealth(t *testing.T) {
	r := runServer(t, Options{ServiceManagesHealth: true})
	s, conn := r.s, r.conn
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health before the service says so = %v, %v; want NOT_SERVING", resp, err)
	}
	s.Health().SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	waitServing(t, conn)
}

func TestShutdownEndsWatchStreamsAtOnce(t *testing.T) {
	var logs bytes.Buffer
	ended := make(chan error, 1)
	r := runServer(t, Options{
		ShutdownTimeout: time.Minute, // a watch holding the drain would hold Run this long
		Logger:          slog.New(slog.NewTextHandler(&logs, nil)),
		ExtraServerOptions: []grpc.ServerOption{grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			<-stream.Context().Done() // a watch: runs until its context ends
			ended <- stream.Context().Err()
			return status.Error(codes.Unavailable, "server shutting down")
		})},
	})
	conn, cancel := r.conn, r.cancel
	waitServing(t, conn)
	stream, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/x.v1.X/Watch")
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(&healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	waitServing(t, conn) // the stream is open on the server by now or soon
	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("watch ended with %v, want its context canceled by the shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch was not ended by the shutdown")
	}
	if err := r.wait(t, 30*time.Second); err != nil { // well before the one-minute drain
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(logs.String(), "drain timed out") {
		t.Errorf("the watch held the drain:\n%s", logs.String())
	}
}

// TestProfilingServesPprofOnlyWhenAsked: --profiling adds Go's pprof
// handlers beside /metrics (a CPU profile over a second is a gzipped
// protobuf, the goroutine dump names this test);
// without it those paths are not found.
func TestProfilingServesPprofOnlyWhenAsked(t *testing.T) {
	get := func(url string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}

	off := runServer(t, Options{MetricsListen: "127.0.0.1:0"})
	base := "http://" + off.s.MetricsAddr().String()
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		if code, _ := get(base + path); code != http.StatusNotFound {
			t.Errorf("without Profiling, GET %s: %d, want 404", path, code)
		}
	}

	on := runServer(t, Options{MetricsListen: "127.0.0.1:0", Profiling: true})
	base = "http://" + on.s.MetricsAddr().String()
	code, index := get(base + "/debug/pprof/")
	if code != http.StatusOK || !bytes.Contains(index, []byte("goroutine")) || !bytes.Contains(index, []byte("heap")) {
		t.Errorf("GET /debug/pprof/: %d, %.200q; want 200 listing goroutine and heap", code, index)
	}
	code, prof := get(base + "/debug/pprof/profile?seconds=1")
	if code != http.StatusOK || len(prof) < 2 || prof[0] != 0x1f || prof[1] != 0x8b {
		t.Errorf("GET /debug/pprof/profile?seconds=1: %d, %d bytes starting %x; want 200 and a gzipped profile", code, len(prof), prof[:min(len(prof), 4)])
	}
	code, goroutines := get(base + "/debug/pprof/goroutine?debug=1")
	if code != http.StatusOK || !bytes.Contains(goroutines, []byte("TestProfilingServesPprofOnlyWhenAsked")) {
		t.Errorf("GET /debug/pprof/goroutine?debug=1: %d, not naming this test's goroutine", code)
	}
	// /metrics is still there.
	if body := scrape(t, base+"/metrics"); !strings.Contains(body, "go_goroutines") {
		t.Error("with Profiling, /metrics lacks go_goroutines")
	}
}
