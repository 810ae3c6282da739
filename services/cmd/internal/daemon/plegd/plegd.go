// Package plegd is syncpod-pleg as a library (see package daemon): the
// pod lifecycle event generator over a CRI runtime (package pleg).
// Flags: syncpod-pleg --help.
package plegd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/cri/listcodec"
	"github.com/syncpod/syncpod/pleg"
	"github.com/syncpod/syncpod/pleg/service"
	"github.com/syncpod/syncpod/pleg/wake"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/server"
)

type plegFlags struct {
	criEndpoint         string
	criTimeout          time.Duration
	relistPeriod        time.Duration
	relistThreshold     time.Duration
	evented             string
	eventedRelistPeriod time.Duration
	relistWake          bool
	inspectParallelism  int
	inspectTimeout      time.Duration
	inspectPatience     time.Duration
}

func registerPlegFlags(fs *flag.FlagSet) *plegFlags {
	f := &plegFlags{}
	fs.StringVar(&f.criEndpoint, "cri-endpoint", "unix:///run/containerd/containerd.sock", "CRI runtime endpoint")
	fs.DurationVar(&f.criTimeout, "cri-timeout", 30*time.Second, "CRI connection timeout and per-list-call timeout")
	fs.DurationVar(&f.relistPeriod, "relist-period", 0, "a fixed relist period in relist mode; 0 (the default) chooses it from what relists cost: at most 1 % of a core, between 100 ms and 1 s")
	fs.DurationVar(&f.relistThreshold, "relist-threshold", 3*time.Minute, "health turns NOT_SERVING when the last successful relist is older than this")
	fs.StringVar(&f.evented, "evented", pleg.EventedAuto, "use CRI GetContainerEvents: auto (when offered), on (required) or off")
	fs.DurationVar(&f.eventedRelistPeriod, "evented-relist-period", 300*time.Second, "safety-net relist period in evented mode")
	fs.BoolVar(&f.relistWake, "relist-wake", true, "in relist mode (no CRI container events), subscribe to the runtime's own event service on the CRI socket (containerd's) and relist as soon as a task exits, starts or is deleted, the periodic relist becoming a 1 s safety net; without the service, the relist period stays as --relist-period says")
	fs.IntVar(&f.inspectParallelism, "inspect-parallelism", 8, "pod inspections run at once")
	fs.DurationVar(&f.inspectTimeout, "inspect-timeout", 10*time.Second, "bound on one pod's inspection")
	fs.DurationVar(&f.inspectPatience, "inspect-patience", 5*time.Second, "how long a relist waits for one pod's inspection; one still running then goes on without holding the relist, and its result is dropped (the pod is inspected again); at --inspect-timeout or more, relists wait for every inspection")
	return f
}

func (f *plegFlags) validate() error {
	var errs []error
	if _, _, err := server.SplitAddress(f.criEndpoint); err != nil {
		errs = append(errs, fmt.Errorf("--cri-endpoint: %w", err))
	}
	for name, d := range map[string]time.Duration{
		"--cri-timeout": f.criTimeout, "--relist-threshold": f.relistThreshold,
		"--evented-relist-period": f.eventedRelistPeriod, "--inspect-timeout": f.inspectTimeout,
		"--inspect-patience": f.inspectPatience,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %s", name, d))
		}
	}
	if f.relistPeriod < 0 {
		errs = append(errs, fmt.Errorf("--relist-period: must be positive, or 0 for the adaptive period, got %s", f.relistPeriod))
	}
	switch f.evented {
	case pleg.EventedAuto, pleg.EventedOn, pleg.EventedOff:
	default:
		errs = append(errs, fmt.Errorf("--evented: %q is not auto, on or off", f.evented))
	}
	if f.inspectParallelism < 1 {
		errs = append(errs, fmt.Errorf("--inspect-parallelism: must be at least 1, got %d", f.inspectParallelism))
	}
	return errors.Join(errs...)
}

// Run is syncpod-pleg, flags and all (see daemon.Env): it serves until ctx
// ends and returns the exit status its binary would.
func Run(ctx context.Context, env daemon.Env) int {
	env = env.Normal()
	args, getenv, stdout, stderr := env.Args, env.Getenv, env.Stdout, env.Stderr

	fs := flag.NewFlagSet("syncpod-pleg", flag.ContinueOnError)
	common := server.RegisterFlags(fs, server.Defaults{Listen: "unix://" + server.DefaultSocket(getenv, "pleg"), MetricsListen: "127.0.0.1:9103"})
	pf := registerPlegFlags(fs)
	if done, code := server.Start(fs, common, args, getenv, stdout, stderr, pf.validate); done {
		return code
	}
	logger := common.Logger(stderr, fs.Name())
	reg := prometheus.NewRegistry()
	conn, err := criConn(pf.criEndpoint, pf.criTimeout, logger, reg, env.Local)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	defer conn.Close()

	ctx, stop := env.Context(ctx)
	defer stop()
	rt := conn.Observer()
	var wakeSource pleg.WakeSource
	if pf.relistWake {
		wc, err := wake.Dial(pf.criEndpoint)
		if err != nil {
			logger.Error("cannot start", "err", err)
			return 1
		}
		defer wc.Close()
		wakeSource = &wake.Source{Conn: wc}
	}

	p, err := pleg.New(pleg.Options{
		Runtime:             rt,
		Logger:              logger,
		Registry:            reg,
		RelistPeriod:        pf.relistPeriod,
		RelistThreshold:     pf.relistThreshold,
		Evented:             pf.evented,
		EventedRelistPeriod: pf.eventedRelistPeriod,
		Wake:                wakeSource,
		InspectParallelism:  pf.inspectParallelism,
		InspectTimeout:      pf.inspectTimeout,
		InspectPatience:     pf.inspectPatience,
		ListTimeout:         pf.criTimeout,
	})
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	opts := common.Options(logger, reg)
	opts.ServiceManagesHealth = true // SERVING only once a relist succeeded
	opts.Local = env.Local
	srv, err := server.New(opts)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	plegv1.RegisterPlegServiceServer(srv.Registrar(), service.New(p))
	syncpodv1.RegisterVersionServiceServer(srv.Registrar(), server.NewVersionService(server.VersionOptions{
		Component: "pleg",
		Runtime:   func(ctx context.Context) (*runtimeapi.VersionResponse, error) { return rt.Version(ctx, "v1") },
	}))

	env.ReadyNow()
	return srv.Serve(ctx, p.Run, func(ctx context.Context) error {
		// The PLEG's health drives the overall status and the service's.
		return p.RunHealth(ctx, 0, func(ok bool) {
			st := healthpb.HealthCheckResponse_SERVING
			if !ok {
				st = healthpb.HealthCheckResponse_NOT_SERVING
			}
			srv.Health().SetServingStatus("", st)
			srv.Health().SetServingStatus(plegv1.PlegService_ServiceDesc.ServiceName, st)
		})
	})
}

// criConn is the PLEG's CRI connection, made lazily: the service starts
// (health NOT_SERVING, reason logged) even when the runtime is not up
// yet. Its relists' two list answers decode through a list codec's cache,
// whose metrics go on reg; a runtime of this process (crisim in
// syncpod-all, offered in local) is called in-process while it serves,
// its answers not decoded at all.
func criConn(endpoint string, timeout time.Duration, logger *slog.Logger, reg prometheus.Registerer, local *server.Local) (*cri.Conn, error) {
	lists := listcodec.NewGRPC()
	if _, err := listcodec.NewDecodeMetrics(reg, lists); err != nil {
		return nil, err
	}
	return cri.NewConn(endpoint, timeout, logger, cri.WithListCodec(lists), cri.WithInProcess(local.Lookup(endpoint))), nil
}
