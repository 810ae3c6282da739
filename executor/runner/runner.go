package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/executor/backoff"
	"github.com/syncpod/syncpod/executor/runtimeclient"
	"github.com/syncpod/syncpod/executor/userns"
	"github.com/syncpod/syncpod/executor/volumes"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// DefaultLogDir is where pod log directories live, as with the kubelet.
const DefaultLogDir = "/var/log/pods"

// DefaultMaxParallelPods bounds how many pods are created and started at
// once (the planner runs as many syncs at once, podworkers'
// DefaultMaxConcurrent: with the same bound no sync waits here for a
// slot). Stopping takes no slot, so whatever the bound, a deletion never
// queues behind other pods' grace periods. With 16, a burst of 250 pods
// on containerd 2.4 (2-core VM) started at a steady 4 a second, the
// runtime's calls waiting on one another more than on the CPU; the
// kubelet, all 250 in flight, reached over 15 a second and had them all
// running in 55 s against 63 s (make bench-density, 2026-11-27, one
// round on a loaded machine).
const DefaultMaxParallelPods = 64

// DefaultSandboxStartSpacing is the least time between the starts of two
// RunPodSandbox calls. Ten sandboxes asked for at once and begun together
// all reach each stage of the runtime's work (the shim's start, runc's
// create, then the containers' create and start) together, and wait
// together; begun 4 ms apart they overlap one another's waits. Measured
// side by side with the kubelet on containerd 2.4.2 (make bench-versus,
// 10 pods by file, 2-core VM, 2026-11-26): the last of the ten started at
// 0.99-1.07x the kubelet's begun together, 0.96-0.97x begun 4 ms apart
// (the kubelet's own pod workers begin them 35-40 ms apart over the ten);
// with at most 4 pods at once instead, 1.11x. A single pod is not delayed,
// nor are pods on a runtime that creates a sandbox faster than this (a
// call that ends lets the next begin at once): crisim's 2,000 simulated
// pods are not held back to one per 4 ms.
const DefaultSandboxStartSpacing = 4 * time.Millisecond

// DefaultGracePeriod is the termination grace period of a pod that sets
// none (the Kubernetes API default), as every module counts it.
const DefaultGracePeriod = validation.DefaultGracePeriodSeconds

// MinGracePeriod is the floor of every stop's grace period.
const MinGracePeriod = validation.MinGracePeriodSeconds

// Config configures a Runner.
type Config struct {
	// Runtime is the CRI runtime service, wrapped with runtimeclient.NewRuntime (or
	// NewLazyRuntime) so calls have timeouts and classified errors, and
	// each pass can record its calls. Required.
	Runtime *runtimeclient.Runtime
	// Images is the CRI image service, wrapped likewise. Required.
	Images *runtimeclient.Images
	// Backoff is the crash-loop back-off store. Required.
	Backoff *backoff.Store
	// Clock tells the time for back-off decisions; nil means the wall clock.
	Clock backoff.Clock
	// Logger; nil discards.
	Logger *slog.Logger
	// Metrics; nil records nothing.
	Metrics *Metrics
	// LogDir is the root of pod log directories; empty means DefaultLogDir.
	LogDir string
	// MaxParallelPods bounds how many pods are created and started at once
	// (stopping is not bounded); 0 means DefaultMaxParallelPods.
	MaxParallelPods int
	// SandboxStartSpacing is the least time between the starts of two
	// RunPodSandbox calls while earlier ones are still running (one that
	// ends lets the next begin at once); DefaultSandboxStartSpacing is the
	// executor's default, 0 begins them all at once.
	SandboxStartSpacing time.Duration
	// ImagePullBackoffInitial and ImagePullBackoffMax shape the image pull
	// back-off (kubelet: 10 s and 300 s); zero means those.
	ImagePullBackoffInitial, ImagePullBackoffMax time.Duration
	// PodDir is the root of per-pod directories (managed /etc/hosts,
	// termination-log files). Empty means no such files are made and the
	// containers get neither mount.
	PodDir string
	// HostsFile is the node's hosts file copied for host-network pods;
	// empty means /etc/hosts.
	HostsFile string
	// ResolvConf is the node's resolver configuration used for the pods'
	// DNS; empty means /etc/resolv.conf.
	ResolvConf string
	// Security holds the node's seccomp settings.
	Security SecurityOptions
	// MemoryCapacity is the node's memory in bytes for Burstable OOM
	// scores; 0 means MachineMemory().
	MemoryCapacity int64
	// Volumes materialises pod volumes; nil refuses pods with volumes
	// (CreateContainerConfigError).
	Volumes *volumes.Manager
	// NodeName and HostIP answer the downward API's spec.nodeName and
	// status.hostIP.
	NodeName, HostIP string
	// Cgroups configures the pod and QoS cgroups; the zero value makes
	// none.
	Cgroups CgroupOptions
	// PodResizer resizes the pod cgroup around its containers' in-place
	// updates; nil: the pod cgroups of Cgroups, when there are.
	PodResizer PodResizer
	// UserNamespaces is the range of host IDs pods with host_users false
	// get their user namespaces from; the zero value means
	// userns.Default().
	UserNamespaces userns.Range
}

// Runner carries out change sets. Safe for concurrent use.
type Runner struct {
	rt      *runtimeclient.Runtime
	img     *runtimeclient.Images
	store   *backoff.Store
	clock   backoff.Clock
	log     *slog.Logger
	m       *Metrics
	logDir  string
	sem     chan struct{}
	pulls   *memBackoff
	podsMu  sync.Mutex
	podLock map[string]*podLock

	// spacing is Config.SandboxStartSpacing; nextSandbox is the earliest
	// time the next RunPodSandbox may begin, and sandboxDone is closed
	// (and replaced) whenever one ends.
	spacing     time.Duration
	spacingMu   sync.Mutex
	nextSandbox time.Time
	sandboxDone chan struct{}

	podRoot    string
	hostsFile  string
	resolvConf string
	security   SecurityOptions
	memCap     int64
	volumes    *volumes.Manager
	// nodeName and hostIP feed the downward API.
	nodeName, hostIP string
	// cg makes the pod cgroups; nil: none.
	cg         *podCgroups
	podResizer PodResizer
	userns     userns.Range
}

type podLock struct {
	ch   chan struct{}
	refs int
}

// New builds a Runner.
func New(cfg Config) (*Runner, error) {
	if cfg.Runtime == nil || cfg.Images == nil || cfg.Backoff == nil {
		return nil, errors.New("runner: Runtime, Images and Backoff are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = backoff.WallClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LogDir == "" {
		cfg.LogDir = DefaultLogDir
	}
	if cfg.HostsFile == "" {
		cfg.HostsFile = "/etc/hosts"
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = "/etc/resolv.conf"
	}
	if cfg.MemoryCapacity <= 0 {
		cfg.MemoryCapacity = MachineMemory()
	}
	if cfg.MaxParallelPods <= 0 {
		cfg.MaxParallelPods = DefaultMaxParallelPods
	}
	if cfg.ImagePullBackoffInitial <= 0 {
		cfg.ImagePullBackoffInitial = 10 * time.Second
	}
	if cfg.ImagePullBackoffMax <= 0 {
		cfg.ImagePullBackoffMax = 300 * time.Second
	}
	var cg *podCgroups
	if cfg.Cgroups.PerQOS {
		cg = &podCgroups{opts: cfg.Cgroups, nodeCPU: nodeMilliCPU(), nodeMem: cfg.MemoryCapacity}
	}
	r := &Runner{
		cg: cg,
		rt: cfg.Runtime, img: cfg.Images, store: cfg.Backoff, clock: cfg.Clock,
		log: cfg.Logger, m: cfg.Metrics, logDir: cfg.LogDir,
		sem:     make(chan struct{}, cfg.MaxParallelPods),
		pulls:   newMemBackoff(cfg.ImagePullBackoffInitial, cfg.ImagePullBackoffMax),
		podLock: map[string]*podLock{},
		spacing: max(cfg.SandboxStartSpacing, 0), sandboxDone: make(chan struct{}),
		podRoot: cfg.PodDir, hostsFile: cfg.HostsFile, resolvConf: cfg.ResolvConf,
		security: cfg.Security, memCap: cfg.MemoryCapacity,
		volumes: cfg.Volumes, nodeName: cfg.NodeName, hostIP: cfg.HostIP,
		podResizer: cfg.PodResizer,
		userns:     cfg.UserNamespaces,
	}
	if r.userns == (userns.Range{}) {
		r.userns = userns.Default()
	}
	if err := r.userns.Check(); err != nil {
		return nil, fmt.Errorf("runner: user namespace range: %w", err)
	}
	if r.podResizer == nil {
		r.podResizer = cgroupResizer{r}
	}
	return r, nil
}

// lockPod serializes passes of one pod. It does not take one of the
// MaxParallelPods slots: a pass takes one (acquireSlot) only for the work
// that loads the node, creating and starting; stopping is mostly waiting
// out grace periods, and a deletion must never queue behind other pods'.
func (r *Runner) lockPod(ctx context.Context, uid string) (func(), error) {
	r.podsMu.Lock()
	l := r.podLock[uid]
	if l == nil {
		l = &podLock{ch: make(chan struct{}, 1)}
		r.podLock[uid] = l
	}
	l.refs++
	r.podsMu.Unlock()
	drop := func() {
		r.podsMu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(r.podLock, uid)
		}
		r.podsMu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
	return func() {
		<-l.ch
		drop()
	}, nil
}

// acquireSlot takes one of the MaxParallelPods slots, bounding the pods
// being created and started at once.
func (r *Runner) acquireSlot(ctx context.Context) (func(), error) {
	select {
	case r.sem <- struct{}{}:
		return func() { <-r.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sandboxTurn waits for this pass's turn to begin a RunPodSandbox: the
// spacing after the previous one began, or as soon as one of those in
// flight ends, whichever comes first (so a runtime that creates sandboxes
// faster than the spacing, crisim's simulated mode, is never held back:
// each call that ends lets the next begin). The wait ends early with ctx.
// The returned func is called when the RunPodSandbox call has ended.
func (r *Runner) sandboxTurn(ctx context.Context) (ended func(), err error) {
	if r.spacing <= 0 {
		return func() {}, nil
	}
	ended = func() {
		r.spacingMu.Lock()
		r.nextSandbox = time.Time{} // the next may begin at once
		close(r.sandboxDone)
		r.sandboxDone = make(chan struct{})
		r.spacingMu.Unlock()
	}
	for {
		r.spacingMu.Lock()
		now := time.Now()
		if !now.Before(r.nextSandbox) {
			r.nextSandbox = now.Add(r.spacing)
			r.spacingMu.Unlock()
			return ended, nil
		}
		wait, done := r.nextSandbox.Sub(now), r.sandboxDone
		r.spacingMu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-done:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// pass is the state of one ApplyActions call.
type pass struct {
	r *Runner
	// rt and img are the Runner's, recording the pass's CRI calls for
	// the response's cri_calls.
	rt       *runtimeclient.Runtime
	img      *runtimeclient.Images
	pod      *syncpodv1.Pod
	observed *syncpodv1.ObservedPod
	actions  *syncpodv1.PodActions
	steps    []*executorv1.StepResult
	abort    error
	// sandboxID is the sandbox containers start in.
	sandboxID string
	retryAt   time.Time
	// releaseSlot gives back the MaxParallelPods slot; nil until taken.
	releaseSlot func()
	// src are the ConfigMaps and Secrets the pod may read.
	src volumes.Sources
	// early are the image statuses read while the sandbox is created
	// (readImagesEarly), by image.
	early map[string]*earlyImage
	// userns is the pod's user namespace (userNamespace); nil until
	// known.
	userns *runtimeapi.UserNamespace
	// imageVolumes are the pulls of the pod's image volumes, by volume
	// name (pullImageVolumes); nil until the first container start.
	imageVolumes map[string]imageVolumePull
}

// ApplyActions carries out actions for pod, planned from observed. The
// error is non-nil only when the pass could not run (ctx ended while
// waiting, runtime unavailable, back-off store failure); step failures are
// reported in the response.
func (r *Runner) ApplyActions(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions) (*executorv1.ApplyActionsResponse, error) {
	return r.applyActions(ctx, pod, observed, actions, volumes.Sources{})
}

func (r *Runner) applyActions(ctx context.Context, pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, actions *syncpodv1.PodActions, src volumes.Sources) (*executorv1.ApplyActionsResponse, error) {
	release, err := r.lockPod(ctx, pod.GetUid())
	if err != nil {
		return nil, err
	}
	defer release()
	if observed == nil {
		observed = &syncpodv1.ObservedPod{}
	}
	calls := &runtimeclient.CallLog{}
	p := &pass{r: r, rt: r.rt.WithCallLog(calls), img: r.img.WithCallLog(calls),
		pod: pod, observed: observed, actions: actions, sandboxID: actions.GetSandboxId(), src: src}
	p.run(ctx)
	if p.releaseSlot != nil {
		p.releaseSlot()
	}
	if p.abort != nil {
		return nil, p.abort
	}
	resp := &executorv1.ApplyActionsResponse{Steps: p.steps, SandboxId: p.sandboxID, CriCalls: callTimings(calls.Calls())}
	if !p.retryAt.IsZero() {
		resp.RetryAt = timestamppb.New(p.retryAt)
	}
	return resp, nil
}

func (p *pass) run(ctx context.Context) {
	a := p.actions
	if a.GetKillPod() {
		if !p.killPod(ctx) {
			p.skipRest("pod kill failed")
			return
		}
		if a.GetCreateSandbox() {
			p.purgeInitContainers(ctx)
		}
	} else {
		for _, k := range a.GetContainersToKill() {
			if !p.killContainer(ctx, k) {
				p.skipRest("container kill failed")
				return
			}
		}
		// every container restarts in place, in the sandbox kept.
		if !p.resetContainers(ctx) {
			p.skipRest("container reset failed")
			return
		}
	}
	if p.abort != nil {
		return
	}
	if !a.GetCreateSandbox() || !a.GetKillPod() {
		p.pruneInitContainers(ctx)
	}
	if p.abort != nil {
		return
	}
	if a.GetCreateSandbox() || len(a.GetEphemeralContainersToStart())+len(a.GetInitContainersToStart())+len(a.GetContainersToStart()) > 0 {
		release, err := p.r.acquireSlot(ctx)
		if err != nil {
			p.abort = err
			return
		}
		p.releaseSlot = release
	}
	if !a.GetCreateSandbox() && len(a.GetEphemeralContainersToStart())+len(a.GetInitContainersToStart())+len(a.GetContainersToStart()) > 0 {
		// The kubelet makes sure of the pod cgroup on every sync of a
		// running pod; here it also counts the pod for the QoS cgroups.
		if _, err := p.ensurePodCgroup(ctx); err != nil {
			p.r.log.Warn("cannot make sure of the pod cgroup", "pod_uid", p.pod.GetUid(), "err", err)
		}
	}
	if a.GetCreateSandbox() {
		p.readImagesEarly(ctx)
		defer p.earlyDone()
		if !p.createSandbox(ctx) {
			p.skipStarts(a, "sandbox creation failed")
			return
		}
	}
	// resize the running containers in place (and the pod cgroup
	// around them); a failed resize does not stop the starts.
	p.resize(ctx)
	if p.abort != nil {
		return
	}
	// ephemeral containers before init containers, each on its own,
	// so that a pod whose initialisation fails can still be debugged.
	for _, cs := range a.GetEphemeralContainersToStart() {
		p.startContainer(ctx, cs, kindEphemeral)
		if p.abort != nil {
			return
		}
	}
	for i, cs := range a.GetInitContainersToStart() {
		ok, sidecar := p.startInit(ctx, cs)
		if p.abort != nil {
			return
		}
		if !ok && !sidecar {
			p.skipStartsOf(nil, a.GetInitContainersToStart()[i+1:], a.GetContainersToStart(),
				fmt.Sprintf("init container %s did not start", cs.GetName()))
			return
		}
	}
	for _, cs := range a.GetContainersToStart() {
		p.startContainer(ctx, cs, kindRegular)
		if p.abort != nil {
			return
		}
	}
}

// fail records err as the pass's abort reason when it means the runtime
// (or the store) is unusable; it reports whether it did.
func (p *pass) fatal(err error) bool {
	if errors.Is(err, runtimeclient.ErrUnavailable) || errors.Is(err, backoff.ErrStore) {
		if p.abort == nil {
			p.abort = err
		}
		return true
	}
	return false
}

type stepOpt func(*executorv1.StepResult)

func withReason(reason, msg string) stepOpt {
	return func(s *executorv1.StepResult) { s.Reason, s.Message = reason, msg }
}

func withMessage(msg string) stepOpt { return func(s *executorv1.StepResult) { s.Message = msg } }

func withImageVolume(ref string) stepOpt {
	return func(s *executorv1.StepResult) { s.ImageVolumeReference = ref }
}

func withContainer(id string) stepOpt { return func(s *executorv1.StepResult) { s.ContainerId = id } }

func (p *pass) withUntil(t time.Time) stepOpt {
	if p.retryAt.IsZero() || t.Before(p.retryAt) {
		p.retryAt = t
	}
	return func(s *executorv1.StepResult) { s.BackoffUntil = timestamppb.New(t) }
}

func (p *pass) add(step executorv1.Step, target string, outcome executorv1.Outcome, began time.Time, opts ...stepOpt) *executorv1.StepResult {
	s := stepResult(step, target, outcome, began, opts...)
	p.steps = append(p.steps, s)
	return s
}

// stepResult is a step that took since began (zero: no duration).
func stepResult(step executorv1.Step, target string, outcome executorv1.Outcome, began time.Time, opts ...stepOpt) *executorv1.StepResult {
	s := &executorv1.StepResult{Step: step, Target: target, Outcome: outcome}
	if !began.IsZero() {
		s.Duration = durationpb.New(time.Since(began))
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (p *pass) skipRest(why string) {
	a := p.actions
	if a.GetCreateSandbox() {
		p.add(executorv1.Step_STEP_CREATE_SANDBOX, "", executorv1.Outcome_OUTCOME_SKIPPED, time.Time{}, withMessage(why))
	}
	p.skipStarts(a, why)
}

// skipStarts records every start of a as skipped.
func (p *pass) skipStarts(a *syncpodv1.PodActions, why string) {
	p.skipStartsOf(a.GetEphemeralContainersToStart(), a.GetInitContainersToStart(), a.GetContainersToStart(), why)
}

func (p *pass) skipStartsOf(ephemeral, inits, ctrs []*syncpodv1.ContainerStart, why string) {
	for _, cs := range ephemeral {
		p.add(executorv1.Step_STEP_START_EPHEMERAL_CONTAINER, cs.GetName(), executorv1.Outcome_OUTCOME_SKIPPED, time.Time{}, withMessage(why))
	}
	for _, cs := range inits {
		p.add(executorv1.Step_STEP_START_INIT_CONTAINER, cs.GetName(), executorv1.Outcome_OUTCOME_SKIPPED, time.Time{}, withMessage(why))
	}
	for _, cs := range ctrs {
		p.add(executorv1.Step_STEP_START_CONTAINER, cs.GetName(), executorv1.Outcome_OUTCOME_SKIPPED, time.Time{}, withMessage(why))
	}
}

// podDesc names the pod as the kubelet does in messages: name_ns(uid).
func podDesc(pod *syncpodv1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.GetName(), namespace(pod), pod.GetUid())
}

func namespace(pod *syncpodv1.Pod) string {
	return validation.NamespaceOrDefault(pod.GetNamespace())
}

// callTimings converts a pass's CRI calls for the response, in the order
// they began.
func callTimings(calls []runtimeclient.Call) []*executorv1.CriCallTiming {
	if len(calls) == 0 {
		return nil
	}
	slices.SortStableFunc(calls, func(a, b runtimeclient.Call) int { return a.Start.Compare(b.Start) })
	out := make([]*executorv1.CriCallTiming, len(calls))
	for i, c := range calls {
		out[i] = &executorv1.CriCallTiming{Operation: c.Op, StartedAt: timestamppb.New(c.Start), Duration: durationpb.New(c.Took), Failed: c.Failed}
	}
	return out
}
