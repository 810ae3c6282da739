package prober

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/syncpod/syncpod/internal/probe"
	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// Execer runs a command in a container (CRI ExecSync): the executor's,
// for exec probes.
type Execer = probe.Execer

// OutputExecer is an Execer that also returns the command's output, which
// becomes the message of an Unhealthy event as with the kubelet.
type OutputExecer = probe.OutputExecer

// Kind is the kind of a probe.
type Kind int

// The probe kinds.
const (
	Liveness Kind = iota
	Readiness
	Startup
)

func (k Kind) String() string {
	return [...]string{"liveness", "readiness", "startup"}[k]
}

// UnhealthyMessage is the kubelet's Unhealthy event message for a failed
// attempt of a k probe with output.
func UnhealthyMessage(k Kind, output string) string {
	return [...]string{"Liveness", "Readiness", "Startup"}[k] + " probe failed: " + output
}

// Options configure a Manager.
type Options struct {
	// Exec runs exec probes. Without it exec probes never conclude.
	Exec Execer
	// OnChange is called (outside any lock) whenever a result of a pod
	// changes, so the pod can be synced.
	OnChange func(podUID string)
	// Logger receives probe failures at debug level. Default: discard.
	Logger *slog.Logger
	// OnUnhealthy is called (outside any lock) after every failed attempt
	// with the kubelet's Unhealthy event message, "Liveness probe failed:
	// <output>". Nil records nothing.
	OnUnhealthy func(podUID, container, message string)
}

// Manager runs probe workers for every probed, running container of the
// pods it is told about. Its methods are safe for concurrent use.
type Manager struct {
	opts Options

	mu   sync.Mutex
	pods map[string]map[workerKey]*worker // pod uid → workers
	wg   sync.WaitGroup
}

type workerKey struct {
	containerID string
	kind        Kind
}

// worker probes one container with one probe. Its result fields are
// guarded by Manager.mu.
type worker struct {
	name      string // container name
	probe     *syncpodv1.Probe
	target    probe.Target
	startedAt time.Time
	hasStart  bool // the container has a startup probe
	cancel    context.CancelFunc

	result  syncpodv1.ProbeResult
	last    probe.Outcome
	run     int  // consecutive attempts with outcome last
	onHold  bool // liveness/startup failed: wait for a new container
	stopped bool
}

// New returns a manager with no pods.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OnChange == nil {
		opts.OnChange = func(string) {}
	}
	return &Manager{opts: opts, pods: map[string]map[workerKey]*worker{}}
}

// initialResult is the kubelet's result before a probe concludes.
func initialResult(k Kind) syncpodv1.ProbeResult {
	switch k {
	case Readiness:
		return syncpodv1.ProbeResult_PROBE_RESULT_FAILURE
	case Liveness:
		return syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
	}
	return syncpodv1.ProbeResult_PROBE_RESULT_UNSPECIFIED
}

// Sync makes the pod's workers match its running containers: one worker
// per probe of the newest running instance of each container (init
// sidecars included) in the newest sandbox; workers of containers that
// stopped or were replaced end, and their results are dropped.
func (m *Manager) Sync(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod) {
	m.SyncFrom(pod, observed, nil)
}

// SyncFrom is Sync for a pod whose last reported status is last: a new
// worker for a container that status already reports, as after a
// restart of the planner, starts from what it reported, as the kubelet
// does since 1.35: a startup probe that had succeeded (the
// container Started) is not run again, and a readiness probe of a
// container Ready in a Ready pod stays Success until failure_threshold
// failures say otherwise; anything else starts as for a new container.
// No container is reported NotReady only because the planner restarted.
func (m *Manager) SyncFrom(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod, last *syncpodv1.PodStatus) {
	uid := pod.GetUid()
	want := desiredWorkers(pod, observed)

	m.mu.Lock()
	defer m.mu.Unlock()
	have := m.pods[uid]
	if have == nil {
		have = map[workerKey]*worker{}
		m.pods[uid] = have
	}
	for key, w := range have {
		if _, ok := want[key]; !ok {
			m.stopLocked(w)
			delete(have, key)
		}
	}
	for _, key := range sortedKeys(want) {
		if _, ok := have[key]; ok {
			continue
		}
		w := want[key]
		w.result = resumedResult(key, last)
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		have[key] = w
		m.wg.Add(1)
		go m.runWorker(ctx, uid, key, w)
	}
	if len(have) == 0 {
		delete(m.pods, uid)
	}
}

// resumedResult is the first result of worker key: what last reported of
// its container (SyncFrom), else the kubelet's initial result.
func resumedResult(key workerKey, last *syncpodv1.PodStatus) syncpodv1.ProbeResult {
	var cs *syncpodv1.ContainerStatus
	for _, c := range slices.Concat(last.GetInitContainerStatuses(), last.GetContainerStatuses()) {
		if c.GetContainerId() != "" && c.GetContainerId() == key.containerID {
			cs = c
		}
	}
	switch {
	case cs == nil:
	case key.kind == Startup && cs.GetStarted():
		return syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
	case key.kind == Readiness && cs.GetReady() && podReady(last):
		return syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
	}
	return initialResult(key.kind)
}

func podReady(st *syncpodv1.PodStatus) bool {
	for _, c := range st.GetConditions() {
		if c.GetType() == "Ready" {
			return c.GetStatus() == syncpodv1.ConditionStatus_CONDITION_STATUS_TRUE
		}
	}
	return false
}

// Remove stops every worker of a pod and drops its results.
func (m *Manager) Remove(podUID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.pods[podUID] {
		m.stopLocked(w)
	}
	delete(m.pods, podUID)
}

// Stop ends every worker and waits for them.
func (m *Manager) Stop() {
	m.mu.Lock()
	for uid, ws := range m.pods {
		for _, w := range ws {
			m.stopLocked(w)
		}
		delete(m.pods, uid)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

func (m *Manager) stopLocked(w *worker) {
	w.stopped = true
	w.cancel()
}

// Results returns the pod's current results, one entry per probed
// container instance, sorted by container name. Kinds without a probe are
// left unspecified.
func (m *Manager) Results(podUID string) []*syncpodv1.ContainerProbeResults {
	m.mu.Lock()
	defer m.mu.Unlock()
	byID := map[string]*syncpodv1.ContainerProbeResults{}
	for key, w := range m.pods[podUID] {
		r := byID[key.containerID]
		if r == nil {
			r = &syncpodv1.ContainerProbeResults{Name: w.name, ContainerId: key.containerID}
			byID[key.containerID] = r
		}
		switch key.kind {
		case Liveness:
			r.Liveness = w.result
		case Readiness:
			r.Readiness = w.result
		case Startup:
			r.Startup = w.result
		}
	}
	out := make([]*syncpodv1.ContainerProbeResults, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *syncpodv1.ContainerProbeResults) int {
		return cmp.Or(cmp.Compare(a.GetName(), b.GetName()), cmp.Compare(a.GetContainerId(), b.GetContainerId()))
	})
	return out
}

func (m *Manager) runWorker(ctx context.Context, uid string, key workerKey, w *worker) {
	defer m.wg.Done()
	tick := time.NewTicker(probe.Period(w.probe))
	defer tick.Stop()
	for {
		if m.probeOnce(ctx, uid, key, w) {
			m.opts.OnChange(uid)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probeOnce makes one attempt if the rules allow it and reports whether
// the worker's result changed.
func (m *Manager) probeOnce(ctx context.Context, uid string, key workerKey, w *worker) bool {
	m.mu.Lock()
	skip := w.stopped || w.onHold ||
		(key.kind == Startup && w.result == syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS) ||
		(key.kind != Startup && w.hasStart && !m.startedLocked(uid, key.containerID)) ||
		time.Since(w.startedAt) < time.Duration(w.probe.GetInitialDelaySeconds())*time.Second
	m.mu.Unlock()
	if skip {
		return false
	}

	out, detail := probe.Attempt(ctx, m.opts.Exec, w.probe, w.target)
	if ctx.Err() != nil || out == probe.Error {
		if out == probe.Error && ctx.Err() == nil {
			m.opts.Logger.Debug("probe could not run", "pod_uid", uid, "container", w.name, "probe", key.kind.String(), "err", detail)
		}
		return false
	}
	if out == probe.Failure {
		m.opts.Logger.Debug("probe failed", "pod_uid", uid, "container", w.name, "probe", key.kind.String(), "detail", detail)
		if m.opts.OnUnhealthy != nil {
			m.opts.OnUnhealthy(uid, w.name, UnhealthyMessage(key.kind, detail))
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if w.stopped {
		return false
	}
	if out == w.last {
		w.run++
	} else {
		w.last, w.run = out, 1
	}
	next := syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
	threshold := probe.SuccessThreshold(w.probe)
	if out == probe.Failure {
		next, threshold = syncpodv1.ProbeResult_PROBE_RESULT_FAILURE, probe.FailureThreshold(w.probe)
	}
	if w.run < threshold || w.result == next {
		return false
	}
	w.result = next
	if next == syncpodv1.ProbeResult_PROBE_RESULT_FAILURE && key.kind != Readiness {
		// The container is about to be killed: stop probing it.
		w.onHold = true
	}
	return true
}

// startedLocked reports whether the container's startup probe succeeded.
func (m *Manager) startedLocked(uid, containerID string) bool {
	w := m.pods[uid][workerKey{containerID, Startup}]
	return w != nil && w.result == syncpodv1.ProbeResult_PROBE_RESULT_SUCCESS
}

// desiredWorkers lists the workers the pod's running containers need.
func desiredWorkers(pod *syncpodv1.Pod, observed *syncpodv1.ObservedPod) map[workerKey]*worker {
	want := map[workerKey]*worker{}
	newest := newestSandbox(observed)
	if newest == nil {
		return want
	}
	host := newest.GetIp()
	if pod.GetSpec().GetHostNetwork() || newest.GetHostNetwork() || host == "" {
		host = "127.0.0.1"
	}
	specs := append(slices.Clone(pod.GetSpec().GetInitContainers()), pod.GetSpec().GetContainers()...)
	for _, c := range specs {
		inst := newestInstance(observed, c.GetName(), newest.GetId())
		if inst == nil || inst.GetState() != syncpodv1.ContainerState_CONTAINER_STATE_RUNNING {
			continue
		}
		t := probe.Target{ContainerID: inst.GetId(), Host: host}
		started := inst.GetStartedAt().AsTime()
		for kind, p := range map[Kind]*syncpodv1.Probe{Liveness: c.GetLivenessProbe(), Readiness: c.GetReadinessProbe(), Startup: c.GetStartupProbe()} {
			if p == nil || p.GetHandler() == nil {
				continue
			}
			want[workerKey{inst.GetId(), kind}] = &worker{
				name: c.GetName(), probe: p, target: t, startedAt: started,
				hasStart: c.GetStartupProbe().GetHandler() != nil,
			}
		}
	}
	return want
}

func newestSandbox(o *syncpodv1.ObservedPod) *syncpodv1.ObservedSandbox {
	sbs, _ := plan.NewestFirst(o)
	if len(sbs) == 0 {
		return nil
	}
	return sbs[0]
}

func newestInstance(o *syncpodv1.ObservedPod, name, sandboxID string) *syncpodv1.ObservedContainer {
	_, cs := plan.NewestFirst(o)
	for _, c := range cs {
		if c.GetName() == name && c.GetSandboxId() == sandboxID {
			return c
		}
	}
	return nil
}

func sortedKeys(m map[workerKey]*worker) []workerKey {
	keys := make([]workerKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b workerKey) int {
		return cmp.Or(cmp.Compare(a.containerID, b.containerID), cmp.Compare(a.kind, b.kind))
	})
	return keys
}
