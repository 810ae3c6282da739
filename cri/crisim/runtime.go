package crisim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Mode is how containers run.
type Mode string

const (
	// ModeProcess runs every container as a real host process, with NO
	// isolation (see the package documentation).
	ModeProcess Mode = "process"
	// ModeSimulated runs no processes; containers live in memory only.
	ModeSimulated Mode = "simulated"
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeProcess, ModeSimulated:
		return m, nil
	}
	return "", fmt.Errorf("%w: mode %q is not process or simulated", ErrInvalid, s)
}

// Simulated-mode annotation keys (see the package documentation).
const (
	// AnnotationExitAfter is a Go duration after which a started simulated
	// container exits on its own.
	AnnotationExitAfter = "io.syncpod.crisim/exit-after"
	// AnnotationExitCode is the exit code used with AnnotationExitAfter.
	AnnotationExitCode = "io.syncpod.crisim/exit-code"
	// AnnotationIgnoreSIGTERM, when "true", makes a simulated container
	// ignore the stop signal, so StopContainer kills it after the timeout.
	AnnotationIgnoreSIGTERM = "io.syncpod.crisim/ignore-sigterm"
)

// RuntimeName is what Version reports as runtime_name.
const RuntimeName = "syncpod-crisim"

// fakePodCIDR is where fake pod IPs come from. Nothing is ever sent to them.
var fakePodCIDR = netip.MustParsePrefix("10.88.0.0/16")

// DefaultEventBuffer is the per-subscriber event buffer when
// Options.EventBuffer is zero.
const DefaultEventBuffer = 4096

// Options configure a Runtime.
type Options struct {
	// Mode is ModeProcess (the default when empty) or ModeSimulated.
	Mode Mode
	// UserNamespaces, in ModeSimulated only, makes the runtime say its
	// handler runs user namespaces and accept sandboxes asking for one
	// (nothing runs, so nothing is mapped). Otherwise crisim, whose
	// containers are host processes, says it does not and refuses them.
	UserNamespaces bool
	// Unpullable, when set, makes PullImage fail for matching names.
	Unpullable *regexp.Regexp
	// EventBuffer is each GetContainerEvents subscriber's buffer size.
	EventBuffer int
	// CgroupDriver, when set, is what RuntimeConfig reports, so a kubelet
	// builds its cgroup tree the way the node's other runtimes expect;
	// crisim itself makes no cgroups. Nil: RuntimeConfig reports no Linux
	// configuration, and the executor makes no pod cgroups.
	CgroupDriver *runtimeapi.CgroupDriver
	// Version is reported as runtime_version.
	Version string
	// Logger receives lifecycle logs. Required.
	Logger *slog.Logger
	// Registry receives the runtime's metrics; nil registers nothing.
	Registry prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// StateDir, when set, is where the runtime keeps its sandboxes,
	// containers and images (see state.go), so a restarted crisim finds
	// them again and re-adopts the container processes still running.
	// One crisim per directory. In ModeProcess it needs Shim.
	StateDir string
	// Shim starts container shims; required in ModeProcess with a
	// StateDir (a container crisim started itself would lose its output
	// pipes when crisim ends).
	Shim *Shim
	// KillOnShutdown makes Shutdown kill every container. Without a
	// StateDir Shutdown always does (nothing could re-adopt them); with
	// one, by default it leaves them running for the next crisim.
	KillOnShutdown bool
	// startInFlight, for tests, runs when a restart finds a container's
	// start lock held by a shim of the crisim before.
	startInFlight func(id string)
}

// What crisim reports for a container whose exit it could not see (its
// process ended while no crisim watched it, or its shim died), as
// containerd does.
const (
	unknownExitCode   = 255
	unknownExitReason = "Unknown"
)

// Runtime is the in-memory CRI runtime. All methods are safe for
// concurrent use.
type Runtime struct {
	opts    Options
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics
	events  *broker

	mu         sync.Mutex
	closed     bool
	sandboxes  map[string]*sandbox
	containers map[string]*container
	sbNames    map[string]string // reserved sandbox name -> id
	ctrNames   map[string]string // reserved sandboxID/name/attempt -> id
	images     map[string]*image // by name
	ips        map[netip.Addr]bool
	nextIP     netip.Addr
	running    sync.WaitGroup // process and timer goroutines
	// keep: Shutdown left the containers running; nothing is recorded
	// any more, the next crisim will find out.
	keep bool

	store   *store        // nil without a StateDir
	boot    string        // this boot's id
	cwd     string        // working directory of containers that name none
	closing chan struct{} // closed by Shutdown: adoption watchers stop

	// afterShimStart, for tests, runs between a shim's start and the
	// StartContainer that started it taking mu again.
	afterShimStart func(*shimRunner)
	stats          *statsSampler // stats.go
	streams        streams       // streaming.go
}

// New builds a Runtime.
func New(opts Options) (*Runtime, error) {
	if opts.Logger == nil {
		return nil, fmt.Errorf("%w: crisim: Logger is required", ErrInvalid)
	}
	if opts.Mode == "" {
		opts.Mode = ModeProcess
	}
	if _, err := ParseMode(string(opts.Mode)); err != nil {
		return nil, err
	}
	if d := opts.CgroupDriver; d != nil {
		if _, ok := runtimeapi.CgroupDriver_name[int32(*d)]; !ok {
			return nil, fmt.Errorf("%w: crisim: CgroupDriver %d is not systemd or cgroupfs", ErrInvalid, *d)
		}
	}
	if opts.EventBuffer <= 0 {
		opts.EventBuffer = DefaultEventBuffer
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Runtime{
		opts:       opts,
		log:        opts.Logger,
		now:        opts.Now,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		sbNames:    map[string]string{},
		ctrNames:   map[string]string{},
		images:     map[string]*image{},
		ips:        map[netip.Addr]bool{},
		nextIP:     fakePodCIDR.Addr().Next().Next(), // 10.88.0.2
		boot:       bootID(),
		closing:    make(chan struct{}),
		stats:      newStatsSampler(),
	}
	r.cwd, _ = os.Getwd()
	r.events = newBroker(opts.EventBuffer)
	m, err := newMetrics(opts.Registry, func() float64 { return float64(r.events.count()) })
	if err != nil {
		return nil, err
	}
	r.metrics = m
	r.events.onOverflow = m.eventOverflows.Inc
	if opts.StateDir != "" {
		if opts.Mode == ModeProcess && (opts.Shim == nil || opts.Shim.Path == "") {
			return nil, fmt.Errorf("%w: crisim: a StateDir in process mode needs a Shim", ErrInvalid)
		}
		st, err := openStore(opts.StateDir)
		if err != nil {
			return nil, err
		}
		r.store = st
		if err := r.restore(); err != nil {
			st.close()
			return nil, err
		}
	}
	return r, nil
}

// Mode is the runtime's execution mode.
func (r *Runtime) Mode() Mode { return r.opts.Mode }

// Shutdown ends every event stream and then either kills every container
// and waits for their exits to be recorded (without a StateDir, or with
// KillOnShutdown), or leaves them running, recorded as RUNNING for the
// next crisim to re-adopt. Calls after the first return at once; every
// later CRI call fails with Unavailable.
func (r *Runtime) Shutdown() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	kill := r.store == nil || r.opts.KillOnShutdown
	var runs []runner
	for _, c := range r.containers {
		if c.run != nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			runs = append(runs, c.run)
		}
	}
	if !kill {
		r.keep = true
		close(r.closing)
	}
	r.mu.Unlock()
	r.events.close()
	if !kill {
		r.mu.Lock()
		r.store.close()
		r.mu.Unlock()
		r.log.Info("crisim runtime stopped; containers left running for the next crisim", "running", len(runs), "state_dir", r.store.dir)
		return
	}
	for _, run := range runs {
		run.kill()
	}
	r.running.Wait()
	r.mu.Lock()
	if r.store != nil {
		r.store.close()
	}
	r.mu.Unlock()
	r.log.Info("crisim runtime stopped", "killed", len(runs))
}

func (r *Runtime) nowNano() int64 { return r.now().UnixNano() }

// newID returns a 64-hex-digit id, like containerd's.
func newID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkOpen must be called with mu held.
func (r *Runtime) checkOpen() error {
	if r.closed {
		return ErrShuttingDown
	}
	return nil
}

// allocIP returns a free fake pod IP; mu must be held.
func (r *Runtime) allocIP() (netip.Addr, error) {
	size := 1<<(32-fakePodCIDR.Bits()) - 3 // minus network, .1 gateway, broadcast
	for range size {
		ip := r.nextIP
		r.nextIP = ip.Next()
		if !fakePodCIDR.Contains(r.nextIP) || r.nextIP == lastAddr(fakePodCIDR) {
			r.nextIP = fakePodCIDR.Addr().Next().Next()
		}
		if !r.ips[ip] {
			r.ips[ip] = true
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%w: fake pod CIDR %s is exhausted", ErrFailedPrecondition, fakePodCIDR)
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	n |= 1<<(32-p.Bits()) - 1
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// sandbox is a pod sandbox. Fields after id are guarded by Runtime.mu.
type sandbox struct {
	id          string
	meta        *runtimeapi.PodSandboxMetadata
	labels      map[string]string
	annotations map[string]string
	logDir      string
	hostNetwork bool
	nsOptions   *runtimeapi.NamespaceOption
	handler     string
	reservedAs  string
	ip          netip.Addr
	state       runtimeapi.PodSandboxState
	createdAt   int64
	listed      *runtimeapi.PodSandbox // listItem's kept message
}

// container is a container. Fields are guarded by Runtime.mu.
type container struct {
	id          string
	sandboxID   string
	meta        *runtimeapi.ContainerMetadata
	image       *runtimeapi.ImageSpec
	imageRef    string
	command     []string
	args        []string
	workingDir  string
	env         []string
	labels      map[string]string
	annotations map[string]string
	logPath     string // full path, "" when the sandbox or config has none
	stopSignal  runtimeapi.Signal
	// resources are the Linux resources of the config, then of the last
	// UpdateContainerResources; reported in the status (crisim applies
	// no cgroups).
	resources  *runtimeapi.LinuxContainerResources
	reservedAs string
	sim        simSpec
	user       *processCred  // nil: crisim's own user
	pathMap    []pathMapping // mounts.go
	// stdin, stdinOnce and tty are the CRI config's: a standard input
	// kept open for attach, closed after the first attach; a terminal.
	stdin, stdinOnce, tty bool

	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	message    string
	run        runner // nil until started
	log        *logWriter
	listed     *runtimeapi.Container // listItem's kept message
	// in is crisim's end of the running container's standard input (or
	// terminal); nil when it has none, or was started by an earlier
	// crisim.
	in       *stdinEnd
	starting bool // a shim is being started, without mu held
}

// runner is a started container's execution, process or simulated.
type runner interface {
	// stop asks the container to end, forcibly after timeout, and returns
	// once it has exited and its exit is recorded, or when ctx ends.
	stop(ctx context.Context, timeout time.Duration) error
	// kill ends the container at once, without waiting.
	kill()
	// exited is closed once the exit is recorded.
	exited() <-chan struct{}
	// reopenLog reopens the container's log file (after a rotation) and
	// returns once the file exists again, or ctx ends.
	reopenLog(ctx context.Context) error
}

// Version names the runtime.
func (r *Runtime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	v := r.opts.Version
	if v == "" {
		v = "dev"
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: RuntimeName, RuntimeVersion: v, RuntimeApiVersion: "v1"}, nil
}

// userNamespaces reports whether sandboxes may ask for their own user
// namespace (Options.UserNamespaces).
func (r *Runtime) userNamespaces() bool {
	return r.opts.UserNamespaces && r.opts.Mode == ModeSimulated
}

// Status reports the runtime and its (fake) network ready, and its one
// handler's features.
func (r *Runtime) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		}},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: r.userNamespaces()}}},
	}
	if req.GetVerbose() {
		resp.Info = map[string]string{"mode": string(r.opts.Mode), "fake_pod_cidr": fakePodCIDR.String()}
	}
	return resp, nil
}

// RuntimeConfig reports no Linux configuration unless a cgroup driver
// was configured (Options.CgroupDriver): crisim runs containers as plain
// host processes and makes no cgroups, so by default a client that would
// make pod cgroups (the executor) makes none; a kubelet, which
// from 1.38 needs a driver, is given the configured one.
func (r *Runtime) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	if r.opts.CgroupDriver == nil {
		return &runtimeapi.RuntimeConfigResponse{}, nil
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: *r.opts.CgroupDriver}}, nil
}

// UpdateRuntimeConfig accepts and logs the config; crisim has no network
// to reconfigure.
func (r *Runtime) UpdateRuntimeConfig(_ context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	r.log.Info("runtime config update ignored", "pod_cidr", req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr())
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
