// Package executord is syncpod-executor as a library (see package daemon):
// the executor's gRPC service over a CRI runtime, with its crash-loop
// back-off database. Flags: syncpod-executor --help.
package executord

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri"
	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/cgroups"
	"github.com/syncpod/syncpod/executor/runner"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/executor/service"
	"github.com/syncpod/syncpod/executor/userns"
	"github.com/syncpod/syncpod/executor/volumes"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/server"
)

type flags struct {
	criEndpoint     string
	dataDir         string
	backoffInitial  time.Duration
	backoffMax      time.Duration
	backoffReduced  bool
	maxParallelPods int
	sandboxSpacing  time.Duration
	criTimeout      time.Duration
	pullTimeout     time.Duration
	nodeName        string
	nodeIP          string
	logDir          string
	podDir          string
	seccompRoot     string
	seccompDefault  bool
	cgroupsPerQOS   bool
	cgroupRoot      string
	cgroupDriver    string
}

// defaultDataDir is where the back-off database lives unless --data-dir
// says otherwise: the state directory of a system daemon, like the
// planner's. It never depends on the working directory, so running a
// binary from a source tree cannot write into it.
func defaultDataDir(getenv func(string) string) string {
	if x := getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "syncpod", "executor")
	}
	return "/var/lib/syncpod/executor"
}

// Run is syncpod-executor, flags and all (see daemon.Env): it serves until ctx
// ends and returns the exit status its binary would.
func Run(ctx context.Context, env daemon.Env) int {
	env = env.Normal()
	args, getenv, stdout, stderr := env.Args, env.Getenv, env.Stdout, env.Stderr

	fs := flag.NewFlagSet("syncpod-executor", flag.ContinueOnError)
	common := server.RegisterFlags(fs, server.Defaults{Listen: "unix://" + server.DefaultSocket(getenv, "executor"), MetricsListen: "127.0.0.1:9102"})
	var f flags
	fs.StringVar(&f.criEndpoint, "cri-endpoint", "unix:///run/containerd/containerd.sock", "CRI runtime endpoint, unix:///path")
	fs.StringVar(&f.dataDir, "data-dir", defaultDataDir(getenv), "directory of the crash-loop back-off database (executor.db)")
	fs.DurationVar(&f.backoffInitial, "backoff-initial", 0, "initial crash-loop back-off delay (default 10s, 1s with --backoff-reduced)")
	fs.DurationVar(&f.backoffMax, "backoff-max", 0, "maximum crash-loop back-off delay, 1s..300s (default 300s, 60s with --backoff-reduced)")
	fs.BoolVar(&f.backoffReduced, "backoff-reduced", false, "use the reduced crash-loop curve (1s doubling to 60s); explicit --backoff-* values win")
	fs.IntVar(&f.maxParallelPods, "max-parallel-pods", runner.DefaultMaxParallelPods, "how many pods are created and started at once (stopping is not bounded)")
	fs.DurationVar(&f.sandboxSpacing, "sandbox-start-spacing", runner.DefaultSandboxStartSpacing, "least time between the starts of two RunPodSandbox calls while earlier ones still run, so that pods asked for at once overlap one another's waits in the runtime (0: all at once; a single pod is never delayed, and a call that ends lets the next begin)")
	fs.DurationVar(&f.criTimeout, "cri-timeout", runtimeclient.DefaultTimeouts.Call, "timeout of each CRI call (stops get the grace period on top)")
	fs.DurationVar(&f.pullTimeout, "image-pull-timeout", runtimeclient.DefaultTimeouts.Pull, "timeout of an image pull")
	fs.StringVar(&f.logDir, "log-dir", runner.DefaultLogDir, "root of the pod log directories (<ns>_<name>_<uid>/<container>/<n>.log)")
	fs.StringVar(&f.podDir, "pod-dir", "", "directory of per-pod directories <pod-dir>/<uid>: managed /etc/hosts, termination logs, volumes (default <data-dir>/pods)")
	fs.StringVar(&f.seccompRoot, "seccomp-root", "", "directory of Localhost seccomp profiles (default <data-dir>/seccomp)")
	fs.BoolVar(&f.seccompDefault, "seccomp-default", false, "RuntimeDefault seccomp for containers that set no profile (the kubelet's seccompDefault)")
	fs.BoolVar(&f.cgroupsPerQOS, "cgroups-per-qos", true, "make the kubelet's pod and QoS cgroups (<cgroup-root>/kubepods, its burstable and besteffort children, a pod<uid> cgroup per pod as the sandbox's cgroup parent); false leaves the placement to the runtime. A runtime without cgroups (crisim) gets none either way")
	fs.StringVar(&f.cgroupRoot, "cgroup-root", cgroups.DefaultCgroupRoot, "the kubelet's --cgroup-root: the node cgroup is <cgroup-root>/kubepods")
	fs.StringVar(&f.cgroupDriver, "cgroup-driver", "", "cgroupfs or systemd: how cgroups are named when the runtime does not answer CRI RuntimeConfig (default cgroupfs); a runtime that answers decides")
	fs.StringVar(&f.nodeName, "node-name", "", "the downward API's spec.nodeName (default: the host name, lower-cased)")
	fs.StringVar(&f.nodeIP, "node-ip", "", "the downward API's status.hostIP (default: the first global unicast address of the host, else 127.0.0.1)")
	if done, code := server.Start(fs, common, args, getenv, stdout, stderr); done {
		return code
	}
	logger := common.Logger(stderr, fs.Name())

	cfg := backoff.Config{Initial: f.backoffInitial, Max: f.backoffMax, Logger: logger}
	if f.backoffReduced {
		if cfg.Initial == 0 {
			cfg.Initial = backoff.ReducedInitial
		}
		if cfg.Max == 0 {
			cfg.Max = backoff.ReducedMax
		}
	}
	if _, err := cfg.Normalize(); err != nil {
		fmt.Fprintf(stderr, "--backoff-initial/--backoff-max: %v\n", err)
		return 2
	}
	if f.maxParallelPods < 1 {
		fmt.Fprintln(stderr, "--max-parallel-pods: must be at least 1")
		return 2
	}
	if f.sandboxSpacing < 0 || f.sandboxSpacing > time.Second {
		fmt.Fprintf(stderr, "--sandbox-start-spacing: %v is outside 0..1s\n", f.sandboxSpacing)
		return 2
	}
	if f.cgroupDriver != "" && f.cgroupDriver != string(cgroups.Cgroupfs) && f.cgroupDriver != string(cgroups.Systemd) {
		fmt.Fprintf(stderr, "--cgroup-driver: %q is neither cgroupfs nor systemd\n", f.cgroupDriver)
		return 2
	}
	if f.criTimeout <= 0 || f.pullTimeout <= 0 {
		fmt.Fprintln(stderr, "--cri-timeout and --image-pull-timeout must be positive")
		return 2
	}
	if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
		logger.Error("cannot create data dir", "data_dir", f.dataDir, "err", err)
		return 1
	}
	dbPath := filepath.Join(f.dataDir, "executor.db")
	store, err := backoff.Open(dbPath, cfg)
	if err != nil {
		// The error names the file and, for a damaged or locked one,
		// what to do.
		logger.Error("cannot open back-off store", "path", dbPath, "err", err)
		return 1
	}
	defer store.Close()

	ctx, stop := env.Context(ctx)
	defer stop()

	// The runtime is dialled on first use, so the executor serves (and
	// answers Unavailable) while the runtime is still coming up; a
	// runtime of this process (crisim in syncpod-all) is called
	// in-process while it serves.
	conn := cri.NewConn(f.criEndpoint, f.criTimeout, logger, cri.WithInProcess(env.Local.Lookup(f.criEndpoint)))
	defer conn.Close()

	reg := prometheus.NewRegistry()
	criMetrics, err := runtimeclient.NewMetrics(reg)
	if err != nil {
		logger.Error("metrics", "err", err)
		return 1
	}
	runMetrics, err := runner.NewMetrics(reg)
	if err != nil {
		logger.Error("metrics", "err", err)
		return 1
	}
	if _, err := backoff.NewMetrics(reg, store); err != nil {
		logger.Error("metrics", "err", err)
		return 1
	}
	timeouts := runtimeclient.Timeouts{Call: f.criTimeout, Pull: f.pullTimeout}
	// The kubelet's CRI client logs through klog's logger of each call's
	// context: this executor's logger, without its ERROR lines for objects
	// already gone (a success here). klog's process-wide logger is left
	// alone.
	clientLog := logr.FromSlogHandler(runtimeclient.QuietNotFound(logger.Handler()))
	rt := runtimeclient.NewLazyRuntime(conn, criMetrics, timeouts).WithClientLogger(clientLog)
	podDir := orDefault(f.podDir, filepath.Join(f.dataDir, "pods"))
	vols, err := volumes.New(volumes.Options{Root: podDir, Logger: logger})
	if err != nil {
		logger.Error("cannot set up the pod directories", "err", err)
		return 1
	}
	nodeName, nodeIP := nodeIdentity(f.nodeName, f.nodeIP)
	// pods with hostUsers false get their IDs from the kubelet's
	// range: the "kubelet" user's subordinate IDs, else 65536 and up.
	usernsRange, err := userns.NodeRange()
	if err != nil {
		logger.Error("cannot read the user namespace range", "err", err)
		return 1
	}
	r, err := runner.New(runner.Config{
		Runtime:             rt,
		Images:              runtimeclient.NewLazyImages(conn, criMetrics, timeouts).WithClientLogger(clientLog),
		Backoff:             store,
		Logger:              logger,
		Metrics:             runMetrics,
		LogDir:              f.logDir,
		MaxParallelPods:     f.maxParallelPods,
		SandboxStartSpacing: f.sandboxSpacing,
		PodDir:              podDir,
		Security: runner.SecurityOptions{
			SeccompRoot:     orDefault(f.seccompRoot, filepath.Join(f.dataDir, "seccomp")),
			SeccompDefault:  f.seccompDefault,
			AppArmorEnabled: runner.HostAppArmorEnabled(),
		},
		Volumes:        vols,
		NodeName:       nodeName,
		HostIP:         nodeIP,
		UserNamespaces: usernsRange,
		Cgroups: runner.CgroupOptions{
			PerQOS: f.cgroupsPerQOS, Root: f.cgroupRoot, Driver: cgroups.Driver(f.cgroupDriver),
		},
	})
	if err != nil {
		logger.Error("cannot build the runner", "err", err)
		return 1
	}
	opts := common.Options(logger, reg)
	opts.Local = env.Local
	srv, err := server.New(opts)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	executorv1.RegisterExecutorServiceServer(srv.Registrar(), service.New(r, store, nil, logger))
	syncpodv1.RegisterVersionServiceServer(srv.Registrar(), server.NewVersionService(server.VersionOptions{
		Component: "executor",
		Runtime:   func(ctx context.Context) (*runtimeapi.VersionResponse, error) { return rt.Version(ctx, "v1") },
	}))
	logger.Info("executor ready", "cri_endpoint", f.criEndpoint, "data_dir", f.dataDir,
		"backoff_initial", store.Config().Initial.String(), "backoff_max", store.Config().Max.String())

	// the ranges of pods without sandboxes (a crash between the
	// allocation and RunPodSandbox, sandboxes gone while the executor was
	// down) are freed at start, and from then on as the kubelet's
	// housekeeping frees them.
	cleanup := func(ctx context.Context) error {
		return r.RunUserNamespaceCleanup(ctx, runner.UserNamespaceCleanupPeriod)
	}
	env.ReadyNow()
	return srv.Serve(ctx, store.Run, cleanup)
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// nodeIdentity fills the downward API's node name and host IP from the
// flags, defaulting to the host name and its first global unicast address.
func nodeIdentity(name, ip string) (string, string) {
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			h = "localhost"
		}
		name = strings.ToLower(h)
	}
	if ip == "" {
		ip = "127.0.0.1"
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && n.IP.To4() != nil {
					ip = n.IP.String()
					break
				}
			}
		}
	}
	return name, ip
}
