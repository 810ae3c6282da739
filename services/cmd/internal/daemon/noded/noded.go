// Package noded is syncpod-node as a library (see package daemon): the
// node agent that joins a planner to a Kubernetes cluster (package node).
// Flags: syncpod-node --help.
package noded

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/syncpod/syncpod/node"
	"github.com/syncpod/syncpod/node/nodestats"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/server"
	"github.com/syncpod/syncpod/services/server/access"
)

type nodeFlags struct {
	kubeconfig    string
	nodeName      string
	planner       string
	criEndpoint   string
	nodeIP        string
	nodeLabels    string
	rootDir       string
	maxPods       int64
	leaseDuration time.Duration
	leaseRenew    time.Duration
	statusFreq    time.Duration
	statusQPS     float64
	statusBurst   int
	workers       int
	apiQPS        float64
	apiBurst      int
	// The kubelet read API.
	plannerTLS      server.TLSFiles
	kubeletListen   string
	tlsCert         string
	tlsKey          string
	clientCA        string
	authorizedUsers string
	statsCgroupRoot string
	// movedFlags are the flags of the pressure conditions, which the
	// planner's eviction manager now decides: set, they are refused.
	movedFlags []*movedFlag
	// Graceful node shutdown.
	shutdownOnSIGTERM bool
}

func registerNodeFlags(fs *flag.FlagSet, getenv func(string) string) *nodeFlags {
	f := &nodeFlags{}
	host, _ := os.Hostname()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the API server and the node's credentials (required)")
	fs.StringVar(&f.nodeName, "node-name", strings.ToLower(host), "name of the Node object")
	fs.StringVar(&f.planner, "planner", "unix://"+server.DefaultSocket(getenv, "planner"), "address of the node's planner (unix:///path, or host:port with mutual TLS: --planner-cert-file, --planner-key-file, --planner-ca-file; plaintext only with --insecure-tcp)")
	fs.StringVar(&f.plannerTLS.CertFile, "planner-cert-file", "", "client certificate (PEM) the node presents to a TCP --planner (its identity needs the read, write and exec verbs)")
	fs.StringVar(&f.plannerTLS.KeyFile, "planner-key-file", "", "private key (PEM) of --planner-cert-file")
	fs.StringVar(&f.plannerTLS.CAFile, "planner-ca-file", "", "CA (PEM) the planner's serving certificate must chain to")
	fs.StringVar(&f.criEndpoint, "cri-endpoint", "", "CRI runtime endpoint, asked for its name and version (the Node's containerRuntimeVersion) and its handlers' features (status.runtimeHandlers: user namespaces, recursive read-only mounts); empty reports unknown")
	fs.StringVar(&f.nodeIP, "node-ip", "", "the node's InternalIP and its pods' hostIP; empty picks the host's first global IPv4 address")
	fs.StringVar(&f.nodeLabels, "node-labels", "", "extra node labels, key=value,...")
	fs.StringVar(&f.rootDir, "root-dir", "/", "directory whose filesystem is reported as ephemeral-storage, and as the node's fs in the read API's /stats/summary")
	fs.Int64Var(&f.maxPods, "max-pods", 110, "pods capacity")
	fs.DurationVar(&f.leaseDuration, "node-lease-duration", 40*time.Second, "leaseDurationSeconds of the node's Lease")
	fs.DurationVar(&f.leaseRenew, "node-lease-renew-interval", 10*time.Second, "how long after a renewal the node's Lease is renewed again, plus up to 4 % of it at random as the kubelet waits")
	fs.BoolVar(&f.shutdownOnSIGTERM, "shutdown-on-sigterm", false, "on SIGTERM, first shut the node's pods down gracefully through the planner (its ShutdownNode: by priority, within the planner's --shutdown-grace-period flags), reporting the Node not ready meanwhile, then exit; for hosts where logind cannot tell the planner (no system bus)")
	fs.DurationVar(&f.statusFreq, "node-status-update-frequency", 5*time.Minute, "how often the Node status is posted when nothing changed (the kubelet's nodeStatusReportFrequency: the node Lease is the heartbeat); a change of readiness or pressure is posted within 5 s")
	fs.Float64Var(&f.statusQPS, "pod-status-qps", node.DefaultStatusQPS, "pod status patches per second (within --kube-api-qps)")
	fs.IntVar(&f.statusBurst, "pod-status-burst", node.DefaultStatusBurst, "pod status patches in a burst")
	fs.IntVar(&f.workers, "workers", 4, "pod sync workers and status workers (each)")
	fs.Float64Var(&f.apiQPS, "kube-api-qps", 50, "queries per second to the API server")
	fs.IntVar(&f.apiBurst, "kube-api-burst", 100, "burst of queries to the API server")
	fs.StringVar(&f.kubeletListen, "kubelet-listen", "", "TLS address of the kubelet read API (logs, exec, attach, port-forward, resource metrics and the stats summary through the API server), e.g. 0.0.0.0:10250; its port is published in the Node's daemonEndpoints; empty serves none")
	fs.StringVar(&f.tlsCert, "tls-cert-file", "", "serving certificate of the read API (for the node's InternalIP; required with --kubelet-listen)")
	fs.StringVar(&f.tlsKey, "tls-private-key-file", "", "key of --tls-cert-file")
	fs.StringVar(&f.clientCA, "client-ca-file", "", "CA whose client certificates the read API accepts: the one that signed the API server's --kubelet-client-certificate (required with --kubelet-listen)")
	fs.StringVar(&f.statsCgroupRoot, "stats-cgroup-root", "/sys/fs/cgroup", "where the cgroup hierarchies are mounted (v2, or v1's cpuacct and memory): the root cgroup's CPU and memory are the node's in the read API's /metrics/resource and /stats/summary")
	fs.StringVar(&f.authorizedUsers, "kubelet-authorized-users", "", "client certificate common names or organisations allowed in the read API, comma-separated; empty allows every certificate of --client-ca-file")
	for _, name := range []string{"eviction-hard", "eviction-pressure-transition-period", "image-fs-dir"} {
		m := &movedFlag{name: name}
		fs.Var(m, name, "deprecated, refused: the pressure conditions come from the planner's eviction manager; set syncpod-planner --"+name)
		f.movedFlags = append(f.movedFlags, m)
	}
	return f
}

// movedFlag is a flag that moved to syncpod-planner: it takes any value
// and remembers it was set, so validate can say where it went.
type movedFlag struct {
	name string
	set  bool
}

func (m *movedFlag) String() string { return "" }

func (m *movedFlag) Set(string) error { m.set = true; return nil }

func (f *nodeFlags) users() []string {
	var out []string
	for _, u := range strings.Split(f.authorizedUsers, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func (f *nodeFlags) labels() (map[string]string, error) {
	out := map[string]string{}
	if f.nodeLabels == "" {
		return out, nil
	}
	for _, kv := range strings.Split(f.nodeLabels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--node-labels: %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

func (f *nodeFlags) validate() error {
	var errs []error
	if f.kubeconfig == "" {
		errs = append(errs, errors.New("--kubeconfig: required"))
	}
	if f.nodeName == "" {
		errs = append(errs, errors.New("--node-name: required"))
	}
	if _, _, err := server.SplitAddress(f.planner); err != nil {
		errs = append(errs, fmt.Errorf("--planner: %w", err))
	}
	if err := f.plannerTLS.Check("--planner-cert-file", "--planner-key-file", "--planner-ca-file"); err != nil {
		errs = append(errs, err)
	}
	for name, d := range map[string]time.Duration{
		"--node-lease-duration": f.leaseDuration, "--node-lease-renew-interval": f.leaseRenew,
		"--node-status-update-frequency": f.statusFreq,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %s", name, d))
		}
	}
	if f.statusQPS <= 0 || f.statusBurst < 1 || f.workers < 1 || f.maxPods < 1 || f.apiQPS <= 0 || f.apiBurst < 1 {
		errs = append(errs, errors.New("--pod-status-qps, --pod-status-burst, --workers, --max-pods, --kube-api-qps and --kube-api-burst must be positive"))
	}
	if _, err := f.labels(); err != nil {
		errs = append(errs, err)
	}
	for _, m := range f.movedFlags {
		if m.set {
			errs = append(errs, fmt.Errorf("--%s: the Node's pressure conditions come from the planner's eviction manager now: set syncpod-planner --%s instead", m.name, m.name))
		}
	}
	if f.kubeletListen != "" {
		if _, _, err := net.SplitHostPort(f.kubeletListen); err != nil {
			errs = append(errs, fmt.Errorf("--kubelet-listen: %w", err))
		}
		for name, v := range map[string]string{"--tls-cert-file": f.tlsCert, "--tls-private-key-file": f.tlsKey, "--client-ca-file": f.clientCA} {
			if v == "" {
				errs = append(errs, fmt.Errorf("%s: required with --kubelet-listen", name))
			}
		}
	}
	return errors.Join(errs...)
}

// Run is syncpod-node, flags and all (see daemon.Env): it serves until ctx
// ends and returns the exit status its binary would.
func Run(ctx context.Context, env daemon.Env) int {
	env = env.Normal()
	args, getenv, stdout, stderr := env.Args, env.Getenv, env.Stdout, env.Stderr

	fs := flag.NewFlagSet("syncpod-node", flag.ContinueOnError)
	common := server.RegisterFlags(fs, server.Defaults{Listen: "unix://" + server.DefaultSocket(getenv, "node"), MetricsListen: "127.0.0.1:9105", NoTLSFlags: true})
	nf := registerNodeFlags(fs, getenv)
	if done, code := server.Start(fs, common, args, getenv, stdout, stderr, nf.validate); done {
		return code
	}
	logger := common.Logger(stderr, fs.Name())
	reg := prometheus.NewRegistry()

	// Term stops the agent at once, or with --shutdown-on-sigterm after
	// shutting the node's pods down (below).
	var stop func()
	if nf.shutdownOnSIGTERM {
		ctx, stop = context.WithCancel(ctx)
	} else {
		ctx, stop = env.Context(ctx)
	}
	defer stop()

	cfg, err := clientcmd.BuildConfigFromFlags("", nf.kubeconfig)
	if err != nil {
		logger.Error("cannot read --kubeconfig", "path", nf.kubeconfig, "err", err)
		return 1
	}
	cfg.UserAgent = "syncpod-node/" + access.Version
	cfg.QPS, cfg.Burst = float32(nf.apiQPS), nf.apiBurst
	client, err := node.NewClient(cfg)
	if err != nil {
		logger.Error("cannot build the API client", "err", err)
		return 1
	}
	conn, err := server.Service(server.DialPolicy{TLS: nf.plannerTLS, InsecureTCP: common.InsecureTCP, Logger: logger}, env.Local, nf.planner)
	if err != nil {
		logger.Error("cannot dial the planner", "err", err)
		return 1
	}
	defer conn.Close()

	host := node.ReadHost(nf.rootDir)
	host.MaxPods = nf.maxPods
	host.InternalIP = nf.nodeIP
	if host.InternalIP == "" {
		host.InternalIP = node.DefaultIP()
	}
	host.AgentVersion = "syncpod-" + access.Version
	if nf.criEndpoint != "" {
		v, err := node.RuntimeVersion(ctx, nf.criEndpoint)
		if err != nil {
			logger.Warn("cannot read the runtime's version; reporting it unknown", "err", err)
		}
		host.RuntimeVersion = v
		// which handlers run user namespaces, as the kubelet
		// reports them.
		if host.RuntimeHandlers, err = node.RuntimeHandlers(ctx, nf.criEndpoint); err != nil {
			logger.Warn("cannot read the runtime's handlers; reporting none", "err", err)
		}
	}
	var readLis net.Listener
	var readTLS *tls.Config
	if nf.kubeletListen != "" {
		if readTLS, err = node.ReadAPITLS(nf.tlsCert, nf.tlsKey, nf.clientCA); err != nil {
			logger.Error("cannot set up the read API's TLS", "err", err)
			return 1
		}
		if readLis, err = net.Listen("tcp", nf.kubeletListen); err != nil {
			logger.Error("cannot listen for the read API", "address", nf.kubeletListen, "err", err)
			return 1
		}
		defer readLis.Close()
		host.KubeletPort = int32(readLis.Addr().(*net.TCPAddr).Port)
	}
	labels, _ := nf.labels()
	agent, err := node.New(node.Options{
		Client:                client,
		Planner:               plannerv1.NewPlannerServiceClient(conn),
		PlannerHealth:         healthpb.NewHealthClient(conn),
		NodeName:              nf.nodeName,
		Host:                  host,
		Labels:                labels,
		LeaseDuration:         nf.leaseDuration,
		LeaseRenewInterval:    nf.leaseRenew,
		StatusUpdateFrequency: nf.statusFreq,
		StatusQPS:             nf.statusQPS,
		StatusBurst:           nf.statusBurst,
		Workers:               nf.workers,
		Logger:                logger,
		Registry:              reg,
	})
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	// The gRPC server carries only health (and reflection), for probes and
	// `syncpod-node healthcheck`; metrics are on --metrics-listen.
	srv, err := server.New(common.Options(logger, reg))
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	var readAPI http.Handler
	if readLis != nil {
		if readAPI, err = node.NewReadAPI(node.ReadAPIOptions{
			Planner:         plannerv1.NewPlannerServiceClient(conn),
			Pods:            agent.BoundPods,
			StaticName:      agent.StaticName,
			MirrorName:      agent.MirrorName,
			NodeName:        nf.nodeName,
			NodeStats:       &nodestats.Reader{CgroupRoot: nf.statsCgroupRoot, FsDir: nf.rootDir},
			AuthorizedUsers: nf.users(),
			Logger:          logger,
		}); err != nil {
			logger.Error("cannot start", "err", err)
			return 1
		}
	}
	parts := []func(context.Context) error{agent.Run}
	if nf.shutdownOnSIGTERM && env.Term != nil {
		go node.ShutdownOnSignal(ctx, env.Term, plannerv1.NewPlannerServiceClient(conn), logger, stop)
	}
	if readLis != nil {
		parts = append(parts, func(ctx context.Context) error { return node.ServeReadAPI(ctx, readLis, readTLS, readAPI, logger) })
	}
	env.ReadyNow()
	return srv.Serve(ctx, parts...)
}
