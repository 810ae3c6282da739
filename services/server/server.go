package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/internal/periodic"
	"github.com/syncpod/syncpod/services/server/access"
)

// Options configure a Server.
type Options struct {
	// Listen is the gRPC address (host:port or unix:///path).
	Listen string
	// MetricsListen is the /metrics HTTP address; empty disables it.
	MetricsListen string
	// Profiling adds Go's pprof handlers under /debug/pprof/ to the
	// metrics HTTP server (nothing without MetricsListen).
	Profiling bool
	// ShutdownTimeout bounds the graceful drain.
	ShutdownTimeout time.Duration
	// Logger receives access logs and lifecycle messages. Required.
	Logger *slog.Logger
	// Registry is the binary's Prometheus registry, created in main. The
	// server registers gRPC server metrics and the Go and process
	// collectors on it. Required.
	Registry *prometheus.Registry
	// Codec encodes the answers and decodes the requests (a crisim serves
	// its list answers through a listcodec.Codec); nil is gRPC's protobuf
	// codec. The server wraps it to answer undecodable requests with
	// InvalidArgument (decode.go).
	Codec encoding.CodecV2
	// ExtraServerOptions are appended to the gRPC server options.
	ExtraServerOptions []grpc.ServerOption
	// SocketGroup is the group of a unix listener's socket (see
	// Flags.SocketGroup).
	SocketGroup string
	// TLS, when set, makes a TCP listener mutual TLS: clients must
	// present a certificate signed by TLS.CAFile.
	TLS TLSFiles
	// InsecureTCP allows a plaintext TCP listener (--insecure-tcp).
	InsecureTCP bool
	// Policy grants verbs to certificate identities; nil is DefaultPolicy.
	Policy Policy
	// MetricsTLS serves /metrics over TLS with TLS's certificate.
	MetricsTLS bool
	// ServiceManagesHealth leaves the overall health status NOT_SERVING
	// when Run starts, for services whose readiness depends on more than
	// the server being up (the PLEG's relist): they set it themselves.
	ServiceManagesHealth bool
	// Local, when set, offers the server's services in-process to the
	// other services of the process that dial its unix socket through
	// the same Local (inproc.go); nil serves them on the socket only.
	Local *Local
}

// Options builds server options from the common flags.
func (f *Flags) Options(logger *slog.Logger, reg *prometheus.Registry) Options {
	policy, _ := f.Policy() // checked by Validate
	return Options{
		SocketGroup:     f.SocketGroup,
		TLS:             f.TLS,
		InsecureTCP:     f.InsecureTCP,
		Policy:          policy,
		MetricsTLS:      f.MetricsTLS,
		Listen:          f.Listen,
		MetricsListen:   f.MetricsListen,
		Profiling:       f.Profiling,
		ShutdownTimeout: f.ShutdownTimeout,
		Logger:          logger,
		Registry:        reg,
	}
}

// Server is a gRPC server with health, reflection and metrics, plus the
// HTTP server for /metrics. Register services on GRPC() before Run.
type Server struct {
	opts     Options
	grpc     *grpc.Server
	health   *health.Server
	metrics  *grpcprom.ServerMetrics
	lis      net.Listener
	httpLis  net.Listener
	httpSrv  *http.Server
	stopOnce sync.Once
	// stopping is closed when shutdown begins; it ends the contexts of
	// long-lived streams (see endStreamsOnShutdown).
	stopping chan struct{}
	// audit is the audit trail, whose counted repeats Run writes out.
	audit *auditTrail
	// inproc is the server's in-process side (Options.Local), nil
	// without one.
	inproc *inProcServer
}

// New opens the listeners and builds the servers. A bad or busy address is
// an error here, before anything runs.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil || opts.Registry == nil {
		return nil, errors.New("server: Logger and Registry are required")
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 10 * time.Second
	}
	srvMetrics := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	if err := opts.Registry.Register(srvMetrics); err != nil {
		return nil, fmt.Errorf("server: register gRPC metrics: %w", err)
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := opts.Registry.Register(c); err != nil {
			return nil, fmt.Errorf("server: register runtime metrics: %w", err)
		}
	}

	logger := opts.Logger
	// A handler that panicked answers Internal without the details, which
	// may hold request data; the log has them.
	errPanicked := errgrpc.New(errgrpc.ErrInternal, "internal error (the server logged the details)")
	panicHandler := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		logger.ErrorContext(ctx, "panic in gRPC handler", "panic", p, "stack", string(debug.Stack()))
		return errgrpc.ToGRPC(errPanicked)
	})
	accessLog := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		logger.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	logOpts := []logging.Option{logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(accessLogLevel)}
	// Health probes arrive every few seconds from compose; keep them out of
	// the access log.
	notHealth := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
		return c.Service != healthpb.Health_ServiceDesc.ServiceName
	})

	network, _, err := SplitAddress(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", opts.Listen, err)
	}
	var serverTLS *tls.Config
	switch {
	case network == "unix":
	case opts.TLS.Set():
		if serverTLS, err = ServerTLS(opts.TLS, logger, "h2"); err != nil {
			return nil, fmt.Errorf("server TLS: %w", err)
		}
	case opts.InsecureTCP:
		logger.Warn("INSECURE: serving plaintext TCP with no authentication (--insecure-tcp): anyone who reaches this port may run containers as root, exec into them and forward their ports", "listen", opts.Listen)
	default:
		return nil, fmt.Errorf("listen %s: a TCP address needs mutual TLS (--tls-cert-file, --tls-private-key-file, --client-ca-file) or --insecure-tcp", opts.Listen)
	}
	policy := opts.Policy
	if policy == nil {
		policy = DefaultPolicy
	}
	authz := &authorizer{policy: policy, insecure: serverTLS == nil, audit: newAuditTrail(logger, auditWindow), now: time.Now}

	stopping := make(chan struct{})
	base := opts.Codec
	if base == nil {
		base = encoding.GetCodecV2(grpcproto.Name)
	}
	codec := newRequestCodec(base) // decode.go: undecodable requests are InvalidArgument
	// The interceptors of a call; a call on the socket has the decode
	// check after the authorization, an in-process one (nothing decoded)
	// none.
	unaryBefore := []grpc.UnaryServerInterceptor{
		srvMetrics.UnaryServerInterceptor(),
		selector.UnaryServerInterceptor(accessLogUnary(logger, logging.UnaryServerInterceptor(accessLog, logOpts...)), notHealth),
		authz.unary(),
	}
	unaryAfter := []grpc.UnaryServerInterceptor{recovery.UnaryServerInterceptor(panicHandler)}
	streamBefore := []grpc.StreamServerInterceptor{
		endStreamsOnShutdown(stopping),
		srvMetrics.StreamServerInterceptor(),
		selector.StreamServerInterceptor(accessLogStream(logger, logging.StreamServerInterceptor(accessLog, logOpts...)), notHealth),
		authz.stream(),
	}
	streamAfter := []grpc.StreamServerInterceptor{recovery.StreamServerInterceptor(panicHandler)}
	serverOpts := []grpc.ServerOption{
		grpc.ForceServerCodecV2(codec),
		grpc.ChainUnaryInterceptor(slices.Concat(unaryBefore, []grpc.UnaryServerInterceptor{codec.decodeUnary()}, unaryAfter)...),
		grpc.ChainStreamInterceptor(slices.Concat(streamBefore, []grpc.StreamServerInterceptor{codec.decodeStream()}, streamAfter)...),
	}
	switch {
	case serverTLS != nil:
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(serverTLS)))
	case network == "unix":
		serverOpts = append(serverOpts, grpc.Creds(unixPeerCredentials{}))
	}
	serverOpts = append(serverOpts, opts.ExtraServerOptions...)

	s := &Server{
		opts:     opts,
		grpc:     grpc.NewServer(serverOpts...),
		health:   health.NewServer(),
		metrics:  srvMetrics,
		stopping: stopping,
		audit:    authz.audit,
	}
	if key := localKey(opts.Listen); opts.Local != nil && key != "" {
		s.inproc = newInProcServer(opts.Local, key, slices.Concat(unaryBefore, unaryAfter), slices.Concat(streamBefore, streamAfter))
	}
	healthpb.RegisterHealthServer(s.Registrar(), s.health)
	reflection.Register(s.grpc)
	// Not serving until Run starts.
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)

	lis, err := ListenGroup(opts.Listen, opts.SocketGroup)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", opts.Listen, err)
	}
	s.lis = lis
	if opts.MetricsListen != "" {
		hl, err := Listen(opts.MetricsListen)
		if err != nil {
			lis.Close()
			return nil, fmt.Errorf("metrics listen %s: %w", opts.MetricsListen, err)
		}
		s.httpLis = hl
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{
			Registry:          opts.Registry,
			EnableOpenMetrics: true,
		}))
		if opts.Profiling {
			// pprof.Index serves the named runtime profiles (heap,
			// goroutine, allocs, ...) under the prefix. (Importing
			// net/http/pprof also registers them on
			// http.DefaultServeMux, which nothing here serves.)
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		if opts.MetricsTLS {
			getCert, err := access.ServingCertificate(opts.TLS, logger)
			if err != nil {
				lis.Close()
				hl.Close()
				return nil, fmt.Errorf("metrics TLS: %w", err)
			}
			// No client certificate asked; the certificate is read
			// again when its files change.
			s.httpLis = tls.NewListener(hl, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCert})
		}
	}
	return s, nil
}

// GRPC is the gRPC server. Register services through Registrar, which
// offers them in-process too.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Registrar registers a service on the gRPC server and, with
// Options.Local, on the server's in-process side.
func (s *Server) Registrar() grpc.ServiceRegistrar { return registrar{s} }

// Health is the grpc.health.v1 server. Run sets the overall status ("")
// to SERVING at start (unless Options.ServiceManagesHealth) and every
// status to NOT_SERVING on shutdown; services may set their own.
func (s *Server) Health() *health.Server { return s.health }

// Addr is the gRPC listener's address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.lis.Addr() }

// MetricsAddr is the metrics listener's address, nil when disabled.
func (s *Server) MetricsAddr() net.Addr {
	if s.httpLis == nil {
		return nil
	}
	return s.httpLis.Addr()
}

// Run serves until ctx is cancelled or a server fails, then shuts down:
// health turns NOT_SERVING, in-flight RPCs drain for at most
// ShutdownTimeout, and remaining ones are cut. It returns nil after a
// shutdown caused by ctx.
func (s *Server) Run(ctx context.Context) error {
	// The gRPC series of a method are made by its first call, not ahead
	// (ServerMetrics.InitializeMetrics): made ahead, every method by every
	// status code, they held 0.2-0.4 MB of heap a server for series that
	// mostly stay at zero, about 3 MB of a whole node's resident memory
	// in syncpod-all. The trade: a rate or increase over a window in
	// which a series first appears misses the calls it counted on
	// appearing.
	log := s.opts.Logger
	errc := make(chan error, 2)
	go func() {
		if err := s.grpc.Serve(s.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			errc <- fmt.Errorf("grpc serve: %w", err)
		}
	}()
	if s.httpSrv != nil {
		go func() {
			if err := s.httpSrv.Serve(s.httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("metrics serve: %w", err)
			}
		}()
	}
	s.registerServiceHealth() // health.go
	if s.inproc != nil {
		s.inproc.local.offer(s.inproc.key, s.inproc)
	}
	defer shareMemReleaser(log)() // memory.go
	auditCtx, stopAudit := context.WithCancel(ctx)
	defer stopAudit()
	go periodic.Run(auditCtx, auditWindow, func() { s.audit.flush(time.Now(), false) })
	attrs := []any{"grpc", s.lis.Addr().String(), "version", access.Version}
	if s.httpLis != nil {
		scheme := "http://"
		if s.opts.MetricsTLS {
			scheme = "https://"
		}
		attrs = append(attrs, "metrics", scheme+s.httpLis.Addr().String()+"/metrics")
	}
	log.Info("serving", attrs...)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	s.shutdown()
	return runErr
}

func (s *Server) shutdown() {
	s.stopOnce.Do(func() {
		log := s.opts.Logger
		log.Info("shutting down", "drain_timeout", s.opts.ShutdownTimeout.String())
		s.health.Shutdown()
		if s.inproc != nil {
			// New in-process calls go to the socket, which refuses
			// them; those running drain with the socket's.
			s.inproc.local.withdraw(s.inproc.key, s.inproc)
		}
		close(s.stopping)
		done := make(chan struct{})
		go func() {
			s.grpc.GracefulStop()
			if s.inproc != nil {
				<-s.inproc.drained()
			}
			close(done)
		}()
		timer := time.NewTimer(s.opts.ShutdownTimeout)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			log.Warn("drain timed out; cutting in-flight RPCs")
			s.grpc.Stop()
			if s.inproc != nil {
				s.inproc.cutCalls()
			}
			<-done
		}
		if s.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = s.httpSrv.Shutdown(ctx)
		}
		s.audit.flush(time.Now(), true)
		log.Info("stopped")
	})
}

// endStreamsOnShutdown cancels the context of every server stream when
// shutdown begins, so watches (WatchPods, the PLEG's Watch) end at once
// instead of holding the graceful drain until it times out; unary calls
// still drain normally. Health watches are left alone: their watchers are
// told NOT_SERVING and are cut only when the drain ends.
func endStreamsOnShutdown(stopping <-chan struct{}) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if strings.HasPrefix(info.FullMethod, "/"+healthpb.Health_ServiceDesc.ServiceName+"/") {
			return handler(srv, ss)
		}
		ctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		go func() {
			select {
			case <-stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
		return handler(srv, &streamWithContext{ServerStream: ss, ctx: ctx})
	}
}

// streamWithContext is a server stream with another context.
type streamWithContext struct {
	grpc.ServerStream
	ctx context.Context
}

// Context is the stream's context, ended at shutdown.
func (s *streamWithContext) Context() context.Context { return s.ctx }
