// Package plannerd is syncpod-planner as a library (see package daemon):
// the planner's gRPC service, its pod store, sync loop and static pods.
// Flags: syncpod-planner --help.
package plannerd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/planner/allocation"
	"github.com/syncpod/syncpod/planner/evictionplan"
	"github.com/syncpod/syncpod/planner/hostsignals"
	"github.com/syncpod/syncpod/planner/logind"
	"github.com/syncpod/syncpod/planner/manifest"
	"github.com/syncpod/syncpod/planner/nodeshutdown"
	"github.com/syncpod/syncpod/planner/podworkers"
	"github.com/syncpod/syncpod/planner/service"
	"github.com/syncpod/syncpod/planner/static"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/syncer"
	"github.com/syncpod/syncpod/planner/timeline"
	"github.com/syncpod/syncpod/planner/validate"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/server"
)

// Run is syncpod-planner, flags and all (see daemon.Env): it serves until ctx
// ends and returns the exit status its binary would.
func Run(ctx context.Context, env daemon.Env) int {
	env = env.Normal()
	args, getenv, stdout, stderr := env.Args, env.Getenv, env.Stdout, env.Stderr

	fs := flag.NewFlagSet("syncpod-planner", flag.ContinueOnError)
	common := server.RegisterFlags(fs, server.Defaults{Listen: "unix://" + server.DefaultSocket(getenv, "planner"), MetricsListen: "127.0.0.1:9101"})
	dataDir := fs.String("data-dir", "/var/lib/syncpod/planner", "directory of the planner's database (planner.db, created with mode 0600)")
	manifestDir := fs.String("manifest-dir", "", "directory of static pod manifests (Kubernetes v1 Pod YAML/JSON); empty disables")
	manifestInterval := fs.Duration("manifest-interval", 5*time.Second, "how often --manifest-dir is rescanned as a safety net (changes are picked up at once through file-system notifications)")
	manifestWatch := fs.Bool("manifest-watch", true, "watch --manifest-dir with file-system notifications (inotify); false scans only every --manifest-interval")
	manifestRefuseAPI := fs.Bool("manifest-refuse-api-references", false, "refuse static pods that refer to Kubernetes API objects (ConfigMaps, Secrets, service accounts, claims...), as the kubelet does: set it on a node joined to a cluster (syncpod-node); a standalone planner reads ConfigMaps and Secrets from --manifest-dir")
	executorAddr := fs.String("executor", "unix://"+server.DefaultSocket(getenv, "executor"), "address of the executor (unix:///path, or host:port dialled with mutual TLS: this binary's --tls-cert-file as client certificate, its server's checked against --client-ca-file; plaintext only with --insecure-tcp)")
	plegAddr := fs.String("pleg", "unix://"+server.DefaultSocket(getenv, "pleg"), "address of the PLEG (unix:///path, or host:port: as --executor)")
	resync := fs.Duration("resync-period", time.Minute, "each pod is synced again this long after its last sync, plus up to half as much at random (the kubelet's syncFrequency)")
	housekeeping := fs.Duration("housekeeping-period", 10*time.Second, "how often orphaned runtime pods and dead containers are cleaned up")
	evictionCheck := fs.Duration("eviction-check-period", 10*time.Second, "how often the eviction manager looks: the node's signals against the eviction thresholds, and the disk use of emptyDir volumes with a sizeLimit (a pod over a limit is evicted)")
	evictionHard := fs.String("eviction-hard", evictionplan.DefaultHard, "hard eviction thresholds (the kubelet's --eviction-hard): SIGNAL<QUANTITY or SIGNAL<PERCENT%, comma-separated, of memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available; a pod is evicted at once when one is crossed; setting it replaces the defaults, empty sets none")
	evictionSoft := fs.String("eviction-soft", "", "soft eviction thresholds, as --eviction-hard; each acts once crossed for its --eviction-soft-grace-period")
	evictionSoftGrace := fs.String("eviction-soft-grace-period", "", "grace period of each soft threshold: SIGNAL=DURATION pairs, e.g. memory.available=1m30s")
	evictionMinReclaim := fs.String("eviction-minimum-reclaim", "", "how much more than its threshold a signal must recover before the threshold stops acting: SIGNAL=QUANTITY or SIGNAL=PERCENT% pairs, e.g. memory.available=0Mi,nodefs.available=500Mi")
	evictionTransition := fs.Duration("eviction-pressure-transition-period", 5*time.Minute, "how long a pressure condition is held after its signal last crossed a threshold")
	evictionMaxGrace := fs.Int64("eviction-max-pod-grace-period", 0, "longest grace period, in seconds, of a pod evicted for a soft threshold (a hard one gives 1 s); the pod's own terminationGracePeriodSeconds when shorter")
	imageFsDir := fs.String("image-fs-dir", "", "directory on the runtime's image filesystem, for the imagefs signals; empty means --data-dir (whose filesystem gives the nodefs signals)")
	evictionMemCgroup := fs.String("eviction-memory-cgroup", "", "a cgroup directory (cgroup v2, or the cgroup's directory in v1's memory hierarchy, e.g. /sys/fs/cgroup/memory/syncpod) whose working set, against its memory limit or the host's MemTotal when lower, is memory.available, as the kubelet reads the root cgroup's: a node run in a container or a slice of its own then sees its own memory; empty: the host's MemAvailable")
	allocCPU := fs.String("allocatable-cpu", "", "CPU the node offers its pods (a Kubernetes quantity, e.g. 3 or 3500m), against which an in-place resize is admitted, deferred or found infeasible; empty means every CPU of the machine, as the node agent reports its allocatable; 0 admits every resize")
	allocMemory := fs.String("allocatable-memory", "", "memory the node offers its pods (a Kubernetes quantity, e.g. 6Gi), as --allocatable-cpu; empty means the machine's MemTotal")
	rpcTimeout := fs.Duration("rpc-timeout", 30*time.Second, "bound of each call to the executor or the PLEG but ApplyActions (--apply-timeout)")
	maxSyncs := fs.Int("max-concurrent-syncs", podworkers.DefaultMaxConcurrent, "pod syncs running at once (as many as the executor's --max-parallel-pods: a sync that starts containers holds its place until the executor's pass ends)")
	applyTimeout := fs.Duration("apply-timeout", syncer.DefaultApplyTimeout, "bound of an ApplyActions call to the executor (a kill adds the pod's grace period): as long as the executor's own bounds of an image pull and a runtime call, so that a slow pass on a loaded node is not abandoned and redone")
	shutdownGrace := fs.Duration("shutdown-grace-period", 0, "graceful node shutdown: the time the node's pods are given to stop, regular pods first (the kubelet's shutdownGracePeriod; whole seconds, 0 disables)")
	shutdownCritical := fs.Duration("shutdown-grace-period-critical-pods", 0, "the part of --shutdown-grace-period kept for critical pods (priority 2000000000 and above), ended last (the kubelet's shutdownGracePeriodCriticalPods)")
	shutdownLogind := fs.Bool("shutdown-logind", true, "with a shutdown grace period: hold a logind shutdown delay inhibitor lock and shut the pods down on logind's PrepareForShutdown (where a system bus answers)")
	sidecarsRestart := fs.Bool("restart-sidecars-during-termination", true, "while a pod terminates (deleted, or finished), start again a sidecar that exits before its turn to stop, with its crash-loop back-off (the kubelet leaves it down); false stops pods as the kubelet does")
	shutdownByPriority := fs.String("shutdown-grace-period-by-pod-priority", "", "graceful node shutdown by pod priority instead: PRIORITY=DURATION pairs, e.g. 0=20s,100000=10s,2000000000=5s; pods are ended lowest priority first, each group within its period (the kubelet's shutdownGracePeriodByPodPriority)")
	if done, code := server.Start(fs, common, args, getenv, stdout, stderr); done {
		return code
	}
	logger := common.Logger(stderr, fs.Name())
	byPriority, err := nodeshutdown.ParsePeriods(*shutdownByPriority)
	shutdownCfg := nodeshutdown.Config{GracePeriod: *shutdownGrace, CriticalGracePeriod: *shutdownCritical, ByPriority: byPriority}
	if err = errors.Join(err, shutdownCfg.Validate()); err != nil {
		logger.Error("bad graceful node shutdown flags", "err", err)
		return 2
	}
	thresholds, err := evictionplan.Parse(evictionplan.Config{Hard: *evictionHard, Soft: *evictionSoft,
		SoftGracePeriod: *evictionSoftGrace, MinimumReclaim: *evictionMinReclaim})
	if err == nil && (*evictionTransition < 0 || *evictionMaxGrace < 0) {
		err = errors.New("--eviction-pressure-transition-period and --eviction-max-pod-grace-period must not be negative")
	}
	if err != nil {
		logger.Error("bad eviction flags", "err", err)
		return 2
	}
	if *evictionMemCgroup != "" {
		if err := hostsignals.CheckMemoryCgroup(*evictionMemCgroup); err != nil {
			logger.Error("bad --eviction-memory-cgroup", "err", err)
			return 2
		}
	}
	if *maxSyncs < 1 {
		logger.Error("--max-concurrent-syncs: must be at least 1")
		return 2
	}
	if *imageFsDir == "" {
		imageFsDir = dataDir
	}
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		logger.Error("cannot create --data-dir", "path", *dataDir, "err", err)
		return 1
	}
	capacity, err := nodeCapacity(*allocCPU, *allocMemory)
	if err != nil {
		logger.Error("bad allocatable flag", "err", err)
		return 2
	}
	dbPath := filepath.Join(*dataDir, "planner.db")
	pods, err := store.Open(store.Options{Path: dbPath, Validate: validate.Pod, Capacity: capacity})
	if err != nil {
		// The error names the file and, for a damaged or locked one,
		// what to do; never start without the desired pods.
		logger.Error("cannot open the pod store", "path", dbPath, "err", err)
		return 1
	}
	defer pods.Close()
	// The database first: a planner that cannot open it never listens
	// (nor leaves a unix socket behind).
	reg := prometheus.NewRegistry()
	opts := common.Options(logger, reg)
	opts.Local = env.Local
	srv, err := server.New(opts)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	if _, err := store.NewMetrics(reg, pods); err != nil {
		logger.Error("cannot register the pod store metrics", "err", err)
		return 1
	}
	dialer := common.Dialer(logger)
	execConn, err := server.Service(dialer, env.Local, *executorAddr)
	if err != nil {
		logger.Error("bad --executor", "err", err)
		return 2
	}
	defer execConn.Close()
	// Where each sync spends its time: histograms, and GetPod's last_sync.
	timelines, err := timeline.New(reg, nil)
	if err != nil {
		logger.Error("cannot register the sync timeline metrics", "err", err)
		return 1
	}
	timelines.SetLogger(logger.With("component", "timeline"))
	plegConn, err := server.Service(dialer, env.Local, *plegAddr)
	if err != nil {
		logger.Error("bad --pleg", "err", err)
		return 2
	}
	defer plegConn.Close()
	syncpodv1.RegisterVersionServiceServer(srv.Registrar(), server.NewVersionService(server.VersionOptions{
		Component: "planner",
		Peers: []server.VersionPeer{
			{Component: "executor", Address: *executorAddr, Conn: execConn},
			{Component: "pleg", Address: *plegAddr, Conn: plegConn},
		},
	}))
	execClient := executorv1.NewExecutorServiceClient(execConn)
	loop, err := syncer.New(syncer.Options{
		Store:               pods,
		PLEG:                syncer.GRPCPLEG(plegv1.NewPlegServiceClient(plegConn)),
		Executor:            syncer.GRPCExecutor(execClient),
		EmptyDirs:           syncer.GRPCEmptyDirMeter(execClient),
		EvictionCheckPeriod: *evictionCheck,
		ResyncPeriod:        *resync,
		HousekeepingPeriod:  *housekeeping,
		RPCTimeout:          *rpcTimeout,
		ApplyTimeout:        *applyTimeout,
		MaxConcurrentSyncs:  *maxSyncs,
		Logger:              logger,
		Registerer:          reg,
		Timeline:            timelines,
		Shutdown:            shutdownCfg,
		SidecarsStayDown:    !*sidecarsRestart,
		Pressure: syncer.Pressure{
			Thresholds: thresholds, Host: hostsignals.ReadSignals(hostsignals.Sources{NodeFsDir: *dataDir, ImageFsDir: *imageFsDir, MemoryCgroup: *evictionMemCgroup}), Stats: syncer.GRPCPodStats(execClient),
			Images:           syncer.GRPCImageReclaimer(execClient),
			TransitionPeriod: *evictionTransition, MaxPodGracePeriodSeconds: *evictionMaxGrace,
		},
	})
	if err != nil {
		logger.Error("cannot start the sync loop", "err", err)
		return 1
	}
	plannerv1.RegisterPlannerServiceServer(srv.Registrar(), service.New(service.Options{
		Pods: pods, Executor: execClient, Timelines: timelines, Config: pods, Shutdown: loop, Conditions: loop,
	}))

	ctx, stop := env.Context(ctx)
	defer stop()
	parts := []func(context.Context) error{loop.Run}
	if shutdownCfg.Enabled() && *shutdownLogind {
		// logind's delay lock and PrepareForShutdown where there
		// is a system bus; ShutdownNode (syncpodctl node shutdown, the
		// node agent's SIGTERM) everywhere.
		parts = append(parts, func(ctx context.Context) error {
			return logind.Run(ctx, logind.Options{
				Connect: logind.ConnectSystemBus, Budget: nodeshutdown.Total(shutdownCfg.Periods()),
				Shutdown: func(ctx context.Context) error { _, err := loop.Shutdown(ctx, "logind"); return err },
				Cancel:   func(ctx context.Context) error { _, err := loop.CancelShutdown(ctx); return err },
				Logger:   logger.With("component", "logind"),
			})
		})
	}
	if *manifestDir != "" {
		src := manifest.NewSource(manifest.Options{
			Dir: *manifestDir, Interval: *manifestInterval, DisableWatch: !*manifestWatch,
			RefuseAPIReferences: *manifestRefuseAPI,
			Logger:              logger.With("component", "manifest"),
		})
		rec, err := static.New(static.Options{Source: src, Store: pods, Logger: logger.With("component", "manifest"),
			Admitting: loop.Admitting})
		if err != nil {
			logger.Error("cannot start the static pod source", "err", err)
			return 1
		}
		parts = append(parts, rec.Run)
	}
	env.ReadyNow()
	return srv.Serve(ctx, parts...)
}

// nodeCapacity is what the node offers its pods: the flags, or
// the machine's CPUs and memory.
func nodeCapacity(cpu, memory string) (allocation.Capacity, error) {
	c := allocation.Capacity{MilliCPU: int64(runtime.NumCPU()) * 1000, MemoryBytes: runner.MachineMemory()}
	if cpu != "" {
		q, err := resource.ParseQuantity(cpu)
		if err != nil || q.Sign() < 0 {
			return c, fmt.Errorf("--allocatable-cpu %q: want a non-negative quantity such as 3 or 3500m", cpu)
		}
		c.MilliCPU = q.MilliValue()
	}
	if memory != "" {
		q, err := resource.ParseQuantity(memory)
		if err != nil || q.Sign() < 0 {
			return c, fmt.Errorf("--allocatable-memory %q: want a non-negative quantity such as 6Gi", memory)
		}
		c.MemoryBytes = q.Value()
	}
	return c, nil
}
