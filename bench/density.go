package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Density: a whole node under many pods, measured the way the upstream
// node-throughput and density tests and the pod-startup SLI measure it.
// Two nodes of one kube-apiserver, the kubelet's and syncpod's, each on
// its own identical runtime, both running all along; their turns
// alternate round by round (one first in even rounds, the other in odd
// ones). A pod's startup latency is from its create request being sent
// (the client's clock, as the upstream e2e_node density test takes it:
// metadata.creationTimestamp has whole seconds only) to the first watch
// event that shows it Running with every container running and started
// (the SLI's "all containers reported started, observed through a
// watch").

// DensityOptions are the sizes of a density run.
type DensityOptions struct {
	// Rounds each agent runs (each round: the throughput row, then each
	// burst).
	Rounds int
	// Pods created at Rate pods per second for the throughput row.
	Pods int
	Rate float64
	// Bursts are pod counts created at once; the first one is also idled
	// at (the idle cost).
	Bursts []int
	// Idle is the window the agent's CPU is sampled over at the first
	// burst's pods, after IdleSettle (0: no idle row).
	Idle, IdleSettle time.Duration
	// Churn, with ChurnRate, is how long pods are created and deleted
	// at ChurnRate pods/s each on top of the last burst's pods once they
	// run, the oldest deleted first (0: no churn).
	Churn     time.Duration
	ChurnRate float64
	// ChurnWait bounds the wait after the churn for its pods to start
	// and its deleted ones to be gone (0: Timeout); a node not done by
	// then is reported behind, the run goes on.
	ChurnWait time.Duration
	// Parallel is how many create or delete requests a burst has in
	// flight at once.
	Parallel int
	Image    string
	// Timeout bounds each wait (all started, all gone).
	Timeout time.Duration
	// Quiet bounds the wait before each turn for the machine to be
	// quiet: its cores less than QuietBusy percent busy over a few
	// seconds (0: no wait), so that what the other side's turn left the
	// machine doing (its runtime catching up after a churn) does not
	// load this one.
	Quiet     time.Duration
	QuietBusy float64
	Logger    *slog.Logger
}

// DensitySide is one node of a density run.
type DensitySide struct {
	// Agent names it in the report (kubelet, syncpod).
	Agent string
	// Node is its Node object's name.
	Node string
	// Runtime is its own runtime (nil: what its pods leave is not
	// cleared between turns).
	Runtime *Runtime
	// PIDs are its processes (the idle cost; none: no idle row).
	PIDs []int
	// PLEGMetrics is the Prometheus endpoint with its PLEG's relist
	// duration histogram PLEGMetric (empty: no relist row), read through
	// MetricsClient (nil: http.DefaultClient).
	PLEGMetrics   string
	PLEGMetric    string
	MetricsClient *http.Client
	// RuntimePIDs are its runtime's daemon processes (containerd; none:
	// its CPU over the churn is not taken).
	RuntimePIDs []int
	// RuntimeMetrics is its runtime's Prometheus endpoint with the gRPC
	// server's counters and handling-time histograms (containerd's
	// /v1/metrics; empty: the bursts' CRI calls are not taken).
	RuntimeMetrics string
}

// DensityReport is everything a density run measured, both agents.
type DensityReport struct {
	Started  time.Time         `json:"started"`
	Load     [3]float64        `json:"load"`
	LoadEnd  [3]float64        `json:"load_end"`
	Runtimes map[string]string `json:"runtimes"`
	// Processes is how many processes each agent ran as (its PIDs).
	Processes map[string]int `json:"processes,omitempty"`
	// Agents in the order of the report's columns (the first is the
	// ratios' denominator).
	Agents []string `json:"agents"`
	Pods   int      `json:"pods"`
	Rate   float64  `json:"rate"`
	Bursts []int    `json:"bursts"`
	// IdleSeconds is the idle CPU window.
	IdleSeconds float64 `json:"idle_seconds"`
	// Parallel is how many requests a burst had in flight.
	Parallel int `json:"parallel"`
	// ChurnSeconds and ChurnRate: the churn's length and rate (0: none).
	ChurnSeconds float64        `json:"churn_seconds,omitempty"`
	ChurnRate    float64        `json:"churn_rate,omitempty"`
	Rounds       []DensityRound `json:"rounds"`
}

// DensityRound is one agent's turn of one round.
type DensityRound struct {
	Round int    `json:"round"`
	Agent string `json:"agent"`
	// First says this agent ran first in its round.
	First bool       `json:"first"`
	Load  [3]float64 `json:"load"`
	// Busy is how busy the machine's cores were, in percent of all of
	// them, over the last few seconds before the turn began, after
	// waiting Waited seconds for them to be quiet (DensityOptions.Quiet).
	Busy   float64 `json:"busy,omitempty"`
	Waited float64 `json:"waited,omitempty"`
	// Startup is the startup latency of each of the Pods pods created at
	// Rate, in seconds.
	Startup Sample         `json:"startup"`
	Bursts  []DensityBurst `json:"bursts"`
	Idle    *DensityIdle   `json:"idle,omitempty"`
	Churn   *DensityChurn  `json:"churn,omitempty"`
}

// DensityChurn is pods created and deleted at a rate on top of a burst's
// pods.
type DensityChurn struct {
	// Pods is how many ran all along (the burst's).
	Pods int `json:"pods"`
	// Startup is the startup latency of each churned pod seen started.
	Startup Sample `json:"startup"`
	// Created is how many were created; Failed how many of those the
	// node failed before they started (e.g. refused: OutOfpods), by
	// reason; NotStarted how many others were deleted before seen
	// started.
	Created    int            `json:"created"`
	Failed     map[string]int `json:"failed,omitempty"`
	NotStarted int            `json:"not_started"`
	// Planned is how many create-and-delete pairs the churn's rate and
	// length make; Seconds how long sending them took (a pair is not
	// sent past the churn's length: an API server that cannot take them
	// sends fewer). CreateFailed and DeleteFailed are the requests the
	// API server failed.
	Planned      int     `json:"planned,omitempty"`
	Seconds      float64 `json:"seconds,omitempty"`
	CreateFailed int     `json:"create_failed,omitempty"`
	DeleteFailed int     `json:"delete_failed,omitempty"`
	// NotSettled are the pods left of the churn neither started nor
	// failed, NotGone those it deleted not yet gone, when the wait after
	// it ended (DensityOptions.ChurnWait); Behind says in words what fell
	// behind (the node, the API server), empty when nothing did.
	NotSettled int      `json:"not_settled,omitempty"`
	NotGone    int      `json:"not_gone,omitempty"`
	Behind     []string `json:"behind,omitempty"`
	// Cleared is how many pod sandboxes the node had still not removed
	// when the deletion after a churn it fell behind in was given up
	// on; the bench then stopped and removed them itself, through the
	// CRI, over ClearedSeconds (ClearFailed: not all of them went, as
	// a note in Behind says), so the other side's turn does not share
	// the machine with this runtime's backlog.
	Cleared        int     `json:"cleared,omitempty"`
	ClearedSeconds float64 `json:"cleared_seconds,omitempty"`
	ClearFailed    bool    `json:"clear_failed,omitempty"`
	// Watch is how often the bench's pod watch was opened again during
	// the churn (an event it resumed or relisted after is seen late: the
	// status ages then include the watch's gap).
	Watch WatchStats `json:"watch,omitzero"`
	// CPUPercent is the agent's CPU over the churn (without processes: 0).
	CPUPercent float64 `json:"cpu_percent"`
	// RuntimeCPUPercent is its runtime daemon's CPU over the churn, in
	// percent of one core (without RuntimePIDs: 0); HostBusyPercent how
	// busy the machine's cores were over it, in percent of all of them
	// (/proc/stat).
	RuntimeCPUPercent float64 `json:"runtime_cpu_percent,omitempty"`
	HostBusyPercent   float64 `json:"host_busy_percent,omitempty"`
	// StatusAge is how far the API server's pod status was behind the
	// runtime at each change over the churn (StatusAges), in seconds;
	// StatusAgeMissed how many of the exits are the runtime look that
	// no longer listed the container (at most StatusAgePoll late).
	StatusAge       Sample `json:"status_age,omitempty"`
	StatusAgeMissed int    `json:"status_age_missed,omitempty"`
	// StatusAgeStart and StatusAgeExit are StatusAge split: the ages of
	// the containers' starts, and of their exits.
	StatusAgeStart Sample `json:"status_age_start,omitempty"`
	StatusAgeExit  Sample `json:"status_age_exit,omitempty"`
	// StatusAgeUnseen are the changes the watch had not shown when the
	// wait after the churn ended, counted until then (their true age is
	// more).
	StatusAgeUnseen int `json:"status_age_unseen,omitempty"`
	// RelistP99 is the upper bound of the bucket of the PLEG's relist
	// durations that holds their p99 over the churn, in seconds, of
	// Relists relists (0 relists: not measured or none ran); with
	// RelistP99Beyond, the p99 is past the last finite bucket, whose
	// bound RelistP99 then is.
	RelistP99       float64 `json:"relist_p99,omitempty"`
	RelistP99Beyond bool    `json:"relist_p99_beyond,omitempty"`
	Relists         int     `json:"relists,omitempty"`
}

// DensityBurst is a number of pods created at once.
type DensityBurst struct {
	Pods int `json:"pods"`
	// AllRunning is from the first create sent to the last pod seen
	// started; AllGone from the first delete sent to the last pod's
	// object removed (seen deleted through the watch), in seconds.
	AllRunning float64 `json:"all_running"`
	AllGone    float64 `json:"all_gone"`
	// RuntimeStarted is from the first create sent to the last
	// container started as the node's runtime reports it (0: no runtime
	// to ask): what AllRunning adds to it is the node's reporting.
	RuntimeStarted float64 `json:"runtime_started,omitempty"`
	// Startup is each pod's startup latency in the burst.
	Startup Sample `json:"startup"`
	// StartCRI is the CRI calls the node's runtime served from just
	// before the first create to the last pod seen started, DeleteCRI
	// from just before the first delete to the last pod seen gone (nil:
	// not taken).
	StartCRI  *CRIWindow `json:"start_cri,omitempty"`
	DeleteCRI *CRIWindow `json:"delete_cri,omitempty"`
}

// DensityIdle is the agent's cost at Pods idle pods: CPU over the window,
// resident memory then, and before the round's first pod (EmptyRSSMB).
type DensityIdle struct {
	Pods       int       `json:"pods"`
	CPUPercent float64   `json:"cpu_percent"`
	RSSMB      float64   `json:"rss_mb"`
	EmptyRSSMB float64   `json:"empty_rss_mb"`
	EachMB     []float64 `json:"each_mb"`
	// AnonMB and FileMB split RSSMB: the anonymous pages (heaps,
	// stacks) and the file-backed ones (the binaries' pages in use).
	AnonMB float64 `json:"anon_mb,omitempty"`
	FileMB float64 `json:"file_mb,omitempty"`
}

// RSSPerPodKB is the resident memory the agent grew by per idle pod, in
// kB (0 without pods).
func (d DensityIdle) RSSPerPodKB() float64 {
	if d.Pods <= 0 {
		return 0
	}
	return (d.RSSMB - d.EmptyRSSMB) * 1024 / float64(d.Pods)
}

// DensityPod is a density pod: host network, one busybox container that
// sleeps without using the CPU and exits at SIGTERM, labelled with the
// run's tag, bound to node.
func DensityPod(name, node, image, tag string) map[string]any {
	p := APIPod(name, node, image)
	meta := p["metadata"].(map[string]any)
	meta["labels"] = map[string]any{"app": "syncpod-bench-density", "run": tag}
	spec := p["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	c["command"] = []any{"sh", "-c", "trap 'exit 0' TERM; sleep 1000000 & wait"}
	return p
}

// watchedPod is what the density and scale runs read of a watch event's
// pod.
type watchedPod struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Name string `json:"name"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase             string `json:"phase"`
		Reason            string `json:"reason"`
		ContainerStatuses []struct {
			Name    string `json:"name"`
			Started *bool  `json:"started"`
			State   struct {
				Running *struct{} `json:"running"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// allStarted says the pod-startup SLI's end: the pod Running and every
// container of its spec reported running and started.
func (p watchedPod) allStarted() bool {
	if p.Status.Phase != "Running" || len(p.Spec.Containers) == 0 {
		return false
	}
	for _, c := range p.Spec.Containers {
		ok := false
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == c.Name {
				ok = s.State.Running != nil && (s.Started == nil || *s.Started)
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// PodTracker keeps, from a pod watch's events, when each pod was first
// seen with all its containers started, when first seen again with one no
// longer running (stopped), and when it was seen deleted. It decides
// nothing else and reads no clock: the time of each event is given.
type PodTracker struct {
	started map[string]time.Time
	stopped map[string]time.Time
	gone    map[string]time.Time
	// failed is the reason of each pod seen Failed before it started
	// (e.g. OutOfpods: the node refused it).
	failed map[string]string
}

// NewPodTracker returns an empty tracker.
func NewPodTracker() *PodTracker {
	return &PodTracker{started: map[string]time.Time{}, stopped: map[string]time.Time{}, gone: map[string]time.Time{}, failed: map[string]string{}}
}

// Observe takes one watch event (a JSON line) received at at. An ERROR
// event or an undecodable one is an error.
func (t *PodTracker) Observe(line []byte, at time.Time) error {
	var ev watchEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return fmt.Errorf("watch event: %w", err)
	}
	if ev.Type == "ERROR" {
		return fmt.Errorf("watch error: %s", ev.Object)
	}
	var p watchedPod
	if err := json.Unmarshal(ev.Object, &p); err != nil {
		return fmt.Errorf("watch event %s: %w", ev.Type, err)
	}
	t.observe(ev.Type, p, at)
	return nil
}

// observe takes pod p of an event of type typ (ADDED, MODIFIED,
// DELETED; others are ignored) received at at.
func (t *PodTracker) observe(typ string, p watchedPod, at time.Time) {
	name := p.Metadata.Name
	switch typ {
	case "DELETED":
		if _, ok := t.gone[name]; !ok {
			t.gone[name] = at
		}
	case "ADDED", "MODIFIED":
		_, started := t.started[name]
		all := p.allStarted()
		if !started && all {
			t.started[name] = at
		}
		if _, ok := t.stopped[name]; started && !ok && !all {
			t.stopped[name] = at
		}
		if _, ok := t.failed[name]; !ok && !started && p.Status.Phase == "Failed" {
			t.failed[name] = p.Status.Reason
		}
	}
}

// Failed says pod name was seen Failed before it started, and why.
func (t *PodTracker) Failed(name string) (string, bool) {
	r, ok := t.failed[name]
	return r, ok
}

// Stopped is when pod name was first seen, after it started, with a
// container no longer running.
func (t *PodTracker) Stopped(name string) (time.Time, bool) {
	at, ok := t.stopped[name]
	return at, ok
}

// Started is when pod name was first seen started.
func (t *PodTracker) Started(name string) (time.Time, bool) {
	at, ok := t.started[name]
	return at, ok
}

// Gone is when pod name was seen deleted.
func (t *PodTracker) Gone(name string) (time.Time, bool) {
	at, ok := t.gone[name]
	return at, ok
}

// wait waits until done(tracker) holds, and returns what it made of the
// tracker then.
func (w *PodWatch) wait(ctx context.Context, what string, done func(*PodTracker) (int, bool)) error {
	for {
		w.mu.Lock()
		left, ok := done(w.tracker)
		err, next, failing := w.err, w.changed, w.failing
		w.mu.Unlock()
		if ok {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the watch ended with %d pods not %s: %w", left, what, err)
		}
		select {
		case <-next:
		case <-ctx.Done():
			if failing != nil {
				return fmt.Errorf("%d pods not %s: %w (the watch failing since its last event: %v)", left, what, ctx.Err(), failing)
			}
			return fmt.Errorf("%d pods not %s: %w", left, what, ctx.Err())
		}
	}
}

// WaitStarted waits until every pod of names was seen started and
// returns when each was.
func (w *PodWatch) WaitStarted(ctx context.Context, names []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	var failed error
	err := w.wait(ctx, "started", func(t *PodTracker) (int, bool) {
		left := 0
		for _, n := range names {
			if at, ok := t.Started(n); ok {
				out[n] = at
			} else if reason, ok := t.Failed(n); ok {
				failed = fmt.Errorf("pod %s failed before it started (%s)", n, reason)
				return 0, true
			} else {
				left++
			}
		}
		return left, left == 0
	})
	if err == nil {
		err = failed
	}
	return out, err
}

// WaitSettled waits until every pod of names was seen started or
// failed.
func (w *PodWatch) WaitSettled(ctx context.Context, names []string) error {
	return w.wait(ctx, "started or failed", func(t *PodTracker) (int, bool) {
		left := 0
		for _, n := range names {
			_, ok1 := t.Started(n)
			_, ok2 := t.Failed(n)
			if !ok1 && !ok2 {
				left++
			}
		}
		return left, left == 0
	})
}

// StartedOf is when each pod of names seen started so far was, and why
// each one seen failed before it started failed.
func (w *PodWatch) StartedOf(names []string) (map[string]time.Time, map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	started := make(map[string]time.Time, len(names))
	failed := map[string]string{}
	for _, n := range names {
		if at, ok := w.tracker.Started(n); ok {
			started[n] = at
		} else if r, ok := w.tracker.Failed(n); ok {
			failed[n] = r
		}
	}
	return started, failed
}

// GoneOf are the pods of names seen deleted so far.
func (w *PodWatch) GoneOf(names []string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, n := range names {
		if _, ok := w.tracker.Gone(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// WaitGone waits until every pod of names was seen deleted and returns
// the last of those times.
func (w *PodWatch) WaitGone(ctx context.Context, names []string) (time.Time, error) {
	var last time.Time
	err := w.wait(ctx, "deleted", func(t *PodTracker) (int, bool) {
		left := 0
		for _, n := range names {
			if at, ok := t.Gone(n); ok {
				last = latest(last, at)
			} else {
				left++
			}
		}
		return left, left == 0
	})
	return last, err
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// StartupLatencies are, for each pod of names in order, its started time
// minus its create time, in seconds; a pod missing from either map is an
// error.
func StartupLatencies(names []string, created, started map[string]time.Time) (Sample, error) {
	s := make(Sample, 0, len(names))
	for _, n := range names {
		c, ok1 := created[n]
		st, ok2 := started[n]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("pod %s: created %v, started %v", n, ok1, ok2)
		}
		s = append(s, st.Sub(c).Seconds())
	}
	return s, nil
}

// createPods creates the pods names on node: every interval one (paced
// from the first, each create sent on time whatever the earlier ones
// take), or with interval 0 all at once, parallel requests in flight. It
// returns when each create was sent.
func (a *APIServer) createPods(ctx context.Context, names []string, node, image, tag string, interval time.Duration, parallel int) (map[string]time.Time, error) {
	var mu sync.Mutex
	created := make(map[string]time.Time, len(names))
	g, gctx := errgroup.WithContext(ctx)
	if interval <= 0 {
		g.SetLimit(max(parallel, 1))
	}
	start := time.Now()
	for i, n := range names {
		if interval > 0 {
			if err := sleep(gctx, time.Until(start.Add(time.Duration(i)*interval))); err != nil {
				break
			}
		}
		g.Go(func() error {
			at := time.Now()
			mu.Lock()
			created[n] = at
			mu.Unlock()
			return a.do(gctx, http.MethodPost, "/api/v1/namespaces/default/pods", DensityPod(n, node, image, tag), nil)
		})
	}
	err := g.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return created, err
}

// deletePods deletes the pods names, parallel requests in flight, and
// returns when the first delete was sent.
func (a *APIServer) deletePods(ctx context.Context, names []string, parallel int) (time.Time, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	start := time.Now()
	for _, n := range names {
		g.Go(func() error {
			err := a.do(gctx, http.MethodDelete, "/api/v1/namespaces/default/pods/"+url.PathEscape(n), nil, nil)
			if isStatus(err, http.StatusNotFound) {
				return nil
			}
			return err
		})
	}
	return start, g.Wait()
}

// Density runs o.Rounds rounds of the density rows on each side, a's
// turn first in even rounds and b's in odd ones: Pods pods created at
// Rate (their startup latencies), then each burst created at once (time
// until all started, and until all deleted), the first burst's pods
// idled at for the agent's CPU and memory.
func (a *APIServer) Density(ctx context.Context, sa, sb DensitySide, o DensityOptions) (DensityReport, error) {
	if o.Rounds <= 0 {
		o.Rounds = 2
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Parallel <= 0 {
		o.Parallel = 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	rep := DensityReport{Started: time.Now(), Load: LoadAverage(), Runtimes: map[string]string{}, Agents: []string{sa.Agent, sb.Agent},
		Pods: o.Pods, Rate: o.Rate, Bursts: o.Bursts, IdleSeconds: o.Idle.Seconds(), Parallel: o.Parallel}
	if o.Churn > 0 && o.ChurnRate > 0 {
		rep.ChurnSeconds, rep.ChurnRate = o.Churn.Seconds(), o.ChurnRate
	}
	rep.Processes = map[string]int{}
	for _, s := range []DensitySide{sa, sb} {
		if s.Runtime != nil {
			rep.Runtimes[s.Agent] = s.Runtime.Version(ctx)
		}
		if len(s.PIDs) > 0 {
			rep.Processes[s.Agent] = len(s.PIDs)
		}
	}
	tag := randTag()
	for r := range o.Rounds {
		order := []DensitySide{sa, sb}
		if r%2 == 1 {
			order = []DensitySide{sb, sa}
		}
		for i, s := range order {
			waited, busy, err := waitQuiet(ctx, o.Quiet, o.QuietBusy, quietWindow)
			if err != nil {
				rep.LoadEnd = LoadAverage()
				return rep, err
			}
			if o.Quiet > 0 {
				o.Logger.Info("machine quiet", "agent", s.Agent, "round", r, "waited", waited.Seconds(), "busy_percent", busy)
			}
			dr, err := a.densityTurn(ctx, s, o, fmt.Sprintf("d%s-%d", tag, r))
			dr.Round, dr.First = r, i == 0
			dr.Busy, dr.Waited = busy, waited.Seconds()
			rep.Rounds = append(rep.Rounds, dr)
			if err != nil {
				rep.LoadEnd = LoadAverage()
				return rep, fmt.Errorf("round %d, %s: %w", r, s.Agent, err)
			}
		}
	}
	rep.LoadEnd = LoadAverage()
	return rep, nil
}

// densityTurn is one side's turn of one round.
func (a *APIServer) densityTurn(ctx context.Context, s DensitySide, o DensityOptions, prefix string) (DensityRound, error) {
	dr := DensityRound{Agent: s.Agent, Load: LoadAverage()}
	log := o.Logger.With("agent", s.Agent, "node", s.Node)
	tag := prefix + "-" + s.Agent
	w, err := a.WatchPods(ctx, "run="+tag)
	if err != nil {
		return dr, err
	}
	defer w.Close()
	var empty memory
	if len(s.PIDs) > 0 {
		if empty, err = readMemory(s.PIDs); err != nil {
			return dr, err
		}
	}
	names := func(row string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%s-%d", tag, row, i)
		}
		return out
	}
	// clear deletes pods and waits until they are gone, then removes
	// what they left in the runtime (the kubelet keeps exited sandboxes
	// until its garbage collection), so nothing of this row runs in the
	// next one.
	// It returns the CRI calls the runtime served until they were gone.
	clear := func(pods []string, timeout time.Duration) (time.Duration, *CRIWindow, error) {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cri0 := s.readCRI(ctx, log)
		start, err := a.deletePods(wctx, pods, o.Parallel)
		if err != nil {
			return 0, nil, err
		}
		last, err := w.WaitGone(wctx, pods)
		if err != nil {
			return 0, nil, err
		}
		calls := s.criSince(ctx, log, cri0)
		if s.Runtime != nil {
			set := make(map[string]bool, len(pods))
			for _, n := range pods {
				set[n] = true
			}
			if err := s.Runtime.RemoveSandboxes(ctx, set); err != nil {
				return 0, nil, err
			}
		}
		return last.Sub(start), calls, nil
	}
	if o.Pods > 0 && o.Rate > 0 {
		pods := names("t", o.Pods)
		wctx, cancel := context.WithTimeout(ctx, o.Timeout+time.Duration(float64(o.Pods)/o.Rate*float64(time.Second)))
		created, err := a.createPods(wctx, pods, s.Node, o.Image, tag, time.Duration(float64(time.Second)/o.Rate), o.Parallel)
		var started map[string]time.Time
		if err == nil {
			started, err = w.WaitStarted(wctx, pods)
		}
		cancel()
		if err == nil {
			dr.Startup, err = StartupLatencies(pods, created, started)
		}
		if err != nil {
			return dr, fmt.Errorf("%d pods at %g/s: %w", o.Pods, o.Rate, err)
		}
		log.Info("throughput", "pods", o.Pods, "rate", o.Rate, "p50", dr.Startup.Quantile(0.5), "p99", dr.Startup.Quantile(0.99))
		if _, _, err := clear(pods, o.Timeout); err != nil {
			return dr, fmt.Errorf("deleting the %d paced pods: %w", o.Pods, err)
		}
	}
	for bi, n := range o.Bursts {
		pods := names(fmt.Sprintf("b%d", n), n)
		b := DensityBurst{Pods: n}
		wctx, cancel := context.WithTimeout(ctx, o.Timeout)
		cri0 := s.readCRI(ctx, log)
		created, err := a.createPods(wctx, pods, s.Node, o.Image, tag, 0, o.Parallel)
		var started map[string]time.Time
		if err == nil {
			started, err = w.WaitStarted(wctx, pods)
		}
		cancel()
		if err == nil {
			b.StartCRI = s.criSince(ctx, log, cri0)
		}
		if err == nil {
			b.Startup, err = StartupLatencies(pods, created, started)
		}
		if err != nil {
			return dr, fmt.Errorf("%d pods at once: %w", n, err)
		}
		var first, last time.Time
		for _, p := range pods {
			if first.IsZero() || created[p].Before(first) {
				first = created[p]
			}
			last = latest(last, started[p])
		}
		b.AllRunning = last.Sub(first).Seconds()
		if s.Runtime != nil {
			// Every container runs (the watch saw them): one listing.
			rctx, cancel := context.WithTimeout(ctx, o.Timeout)
			inRT, err := s.Runtime.WaitStarted(rctx, pods, nil)
			cancel()
			if err != nil {
				return dr, fmt.Errorf("%d pods at once, in the runtime: %w", n, err)
			}
			var lastRT time.Time
			for _, st := range inRT {
				lastRT = latest(lastRT, st.Started)
			}
			b.RuntimeStarted = lastRT.Sub(first).Seconds()
		}
		if bi == 0 && o.Idle > 0 && len(s.PIDs) > 0 {
			idle, err := idleCost(ctx, s.PIDs, o.IdleSettle, o.Idle)
			if err != nil {
				return dr, fmt.Errorf("idle at %d pods: %w", n, err)
			}
			idle.Pods, idle.EmptyRSSMB = n, empty.RSS
			dr.Idle = &idle
			log.Info("idle", "pods", n, "cpu_percent", idle.CPUPercent, "rss_mb", idle.RSSMB, "empty_rss_mb", empty.RSS)
		}
		if bi == len(o.Bursts)-1 && o.Churn > 0 && o.ChurnRate > 0 {
			c, left, err := a.churn(ctx, w, s, o, pods, tag)
			if err != nil {
				return dr, fmt.Errorf("churn on %d pods: %w", n, err)
			}
			dr.Churn, pods = &c, left
			oldest := 0.0
			if len(c.StatusAge) > 0 {
				oldest = slices.Max(c.StatusAge)
			}
			log.Info("churn", "pods", n, "created", c.Created, "planned", c.Planned, "not_started", c.NotStarted, "p50", c.Startup.Quantile(0.5),
				"p99", c.Startup.Quantile(0.99), "cpu_percent", c.CPUPercent, "status_age_max", oldest, "status_age_unseen", c.StatusAgeUnseen,
				"relist_p99", c.RelistP99, "relists", c.Relists, "watch_resumes", c.Watch.Resumes, "watch_relists", c.Watch.Relists, "behind", c.Behind)
		}
		if dr.Churn != nil && bi == len(o.Bursts)-1 {
			// After a churn the node may be behind: the deletion is
			// waited for ChurnWait at most, and a node not done by then
			// is said to be behind, the run going on.
			wait := o.Timeout
			if o.ChurnWait > 0 {
				wait = o.ChurnWait
			}
			gone, calls, err := clear(pods, wait)
			if err != nil && ctx.Err() == nil {
				dr.Churn.Behind = append(dr.Churn.Behind, fmt.Sprintf("%s: deleting the %d pods left after the churn: %v", s.Agent, len(pods), err))
				log.Warn("behind after the churn", "pods", len(pods), "err", err)
				if s.Runtime != nil {
					t0 := time.Now()
					n, err := s.Runtime.RemoveAllSandboxes(ctx, o.Parallel)
					if err != nil && ctx.Err() != nil {
						return dr, err
					}
					dr.Churn.Cleared, dr.Churn.ClearedSeconds = n, time.Since(t0).Seconds()
					if err != nil {
						// The turn's measures are taken: the run goes on,
						// saying so.
						dr.Churn.ClearFailed = true
						dr.Churn.Behind = append(dr.Churn.Behind, fmt.Sprintf("the bench: clearing the %d sandboxes %s left in its runtime: %v", n, s.Agent, err))
						log.Warn("runtime not cleared after the churn", "sandboxes", n, "err", err)
					} else {
						log.Info("runtime cleared after the churn", "sandboxes", n, "seconds", dr.Churn.ClearedSeconds)
					}
				}
				dr.Bursts = append(dr.Bursts, b)
				continue
			}
			if err != nil {
				return dr, fmt.Errorf("deleting %d pods: %w", n, err)
			}
			b.AllGone, b.DeleteCRI = gone.Seconds(), calls
			dr.Bursts = append(dr.Bursts, b)
			log.Info("burst", "pods", n, "all_running", b.AllRunning, "all_gone", b.AllGone)
			continue
		}
		gone, calls, err := clear(pods, o.Timeout)
		if err != nil {
			return dr, fmt.Errorf("deleting %d pods: %w", n, err)
		}
		b.AllGone, b.DeleteCRI = gone.Seconds(), calls
		dr.Bursts = append(dr.Bursts, b)
		log.Info("burst", "pods", n, "all_running", b.AllRunning, "all_gone", b.AllGone)
	}
	return dr, nil
}

// churn creates a pod and deletes the oldest of running (oldest first)
// every 1/o.ChurnRate s for o.Churn, waits (at most o.ChurnWait) until
// the pods it created that are left have started or failed and those it
// deleted are gone, and returns the churned pods' startup latencies,
// the agent's CPU over it, the status ages, and the pods left (as many
// as running). A node that falls behind ends it all the same: what it
// had not done when the wait ended is counted and said (Behind), and a
// request the API server failed is counted, not fatal.
func (a *APIServer) churn(ctx context.Context, w *PodWatch, s DensitySide, o DensityOptions, running []string, tag string) (DensityChurn, []string, error) {
	c := DensityChurn{Pods: len(running)}
	queue := slices.Clone(running)
	interval := time.Duration(float64(time.Second) / o.ChurnRate)
	c.Planned = int(o.Churn.Seconds() * o.ChurnRate)
	var mu sync.Mutex
	created := make(map[string]time.Time, c.Planned)
	// churned are the pods the churn sent a create for (created: those
	// the API server took, and when the create was sent), deleted those
	// it sent a delete for (kept: those whose delete failed).
	var churned, deleted, kept []string
	var before int64
	var err error
	if len(s.PIDs) > 0 {
		if before, err = cpuTicks(s.PIDs); err != nil {
			return c, queue, err
		}
	}
	var truth *RuntimeTruth
	if s.Runtime != nil {
		tctx, stop := context.WithCancel(ctx)
		defer stop()
		truth = s.Runtime.FollowTruth(tctx, tag+"-", StatusAgePoll)
	}
	var h0 histogram
	if s.PLEGMetrics != "" {
		if h0, err = scrapeHistogramWith(ctx, s.metricsClient(), s.PLEGMetrics, s.PLEGMetric); err != nil {
			return c, queue, fmt.Errorf("the PLEG's relists: %w", err)
		}
	}
	w0 := w.Stats()
	var rt0 int64
	if len(s.RuntimePIDs) > 0 {
		if rt0, err = cpuTicks(s.RuntimePIDs); err != nil {
			return c, queue, fmt.Errorf("the runtime's CPU: %w", err)
		}
	}
	host0, hostErr := readHostCPU()
	// Requests in flight are bounded; past the churn's end no new pair is
	// sent (an API server that cannot keep up is counted, not waited
	// for).
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(o.Parallel, 2))
	var createFailed, deleteFailed int
	send := func(f func() error, failed *int) bool {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := f(); err != nil && ctx.Err() == nil {
				mu.Lock()
				*failed++
				mu.Unlock()
				o.Logger.Debug("churn request failed", "err", err)
			}
		}()
		return true
	}
	t0 := time.Now()
	end := t0.Add(o.Churn)
	for i := range c.Planned {
		if err := sleep(ctx, time.Until(t0.Add(time.Duration(i)*interval))); err != nil || time.Now().After(end) {
			break
		}
		name := fmt.Sprintf("%s-c-%d", tag, i)
		old := queue[0]
		queue = append(queue[1:], name)
		churned, deleted = append(churned, name), append(deleted, old)
		ok := send(func() error {
			at := time.Now()
			err := a.do(ctx, http.MethodPost, "/api/v1/namespaces/default/pods", DensityPod(name, s.Node, o.Image, tag), nil)
			if err == nil {
				mu.Lock()
				created[name] = at
				mu.Unlock()
			}
			return err
		}, &createFailed)
		ok = ok && send(func() error {
			err := a.do(ctx, http.MethodDelete, "/api/v1/namespaces/default/pods/"+url.PathEscape(old), nil, nil)
			if err != nil && !isStatus(err, http.StatusNotFound) {
				// Still there: deleted with what is left.
				mu.Lock()
				kept = append(kept, old)
				mu.Unlock()
				return err
			}
			return nil
		}, &deleteFailed)
		if !ok {
			break
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return c, queue, err
	}
	c.Seconds = time.Since(t0).Seconds()
	if len(kept) > 0 {
		queue = append(kept, queue...)
		deleted = slices.DeleteFunc(deleted, func(p string) bool { return slices.Contains(kept, p) })
	}
	c.CreateFailed, c.DeleteFailed = createFailed, deleteFailed
	if len(churned) < c.Planned {
		c.Behind = append(c.Behind, fmt.Sprintf("the API server: %d of %d create-and-delete pairs sent in the churn's %g s", len(churned), c.Planned, o.Churn.Seconds()))
	}
	if createFailed+deleteFailed > 0 {
		c.Behind = append(c.Behind, fmt.Sprintf("the API server: %d creates and %d deletes failed", createFailed, deleteFailed))
	}
	if len(s.PIDs) > 0 {
		after, err := cpuTicks(s.PIDs)
		if err != nil {
			return c, queue, err
		}
		c.CPUPercent = CPUPercent(after-before, time.Since(t0))
	}
	if len(s.RuntimePIDs) > 0 {
		if rt1, err := cpuTicks(s.RuntimePIDs); err == nil {
			c.RuntimeCPUPercent = CPUPercent(rt1-rt0, time.Since(t0))
		}
	}
	if host1, err := readHostCPU(); err == nil && hostErr == nil {
		c.HostBusyPercent = host1.busySince(host0)
	}
	if s.PLEGMetrics != "" {
		h1, err := scrapeHistogramWith(ctx, s.metricsClient(), s.PLEGMetrics, s.PLEGMetric)
		if err != nil {
			return c, queue, fmt.Errorf("the PLEG's relists: %w", err)
		}
		d := h1.sub(h0)
		if c.Relists = int(d.count); c.Relists > 0 {
			c.RelistP99 = d.quantileBound(0.99)
			if math.IsInf(c.RelistP99, 1) && len(d.le) > 1 {
				c.RelistP99, c.RelistP99Beyond = d.le[len(d.le)-2], true
			}
		}
	}
	// The node catches up: the pods left that were created have started
	// or failed, the deleted ones are gone; or the wait ends, and what
	// is not done is what it fell behind by.
	wait := o.ChurnWait
	if wait <= 0 {
		wait = o.Timeout
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var left []string
	mu.Lock()
	for _, p := range queue {
		if _, ok := created[p]; ok {
			left = append(left, p)
		}
	}
	mu.Unlock()
	settleErr := w.WaitSettled(wctx, left)
	var goneErr error
	if settleErr == nil {
		_, goneErr = w.WaitGone(wctx, deleted)
	}
	waited := time.Now()
	if ctx.Err() != nil {
		return c, queue, ctx.Err()
	}
	started, failed := w.StartedOf(churned)
	if settleErr != nil {
		n := 0
		for _, p := range left {
			if _, ok := started[p]; !ok && failed[p] == "" {
				n++
			}
		}
		c.NotSettled = n
		c.Behind = append(c.Behind, fmt.Sprintf("%s: %d of the %d pods left of the churn neither started nor failed %s after it", s.Agent, n, len(left), wait))
	}
	c.NotGone = len(deleted) - len(w.GoneOf(deleted))
	if c.NotGone > 0 && (settleErr != nil || goneErr != nil) {
		c.Behind = append(c.Behind, fmt.Sprintf("%s: %d of the %d pods deleted in the churn not gone %s after it", s.Agent, c.NotGone, len(deleted), wait))
	}
	if truth != nil {
		// A change the status never showed by the wait's end counts
		// until then: its age is at least that.
		c.StatusAgeStart, c.StatusAgeExit, c.StatusAgeMissed, c.StatusAgeUnseen = w.statusAges(churned, deleted, truth, waited)
		c.StatusAge = slices.Concat(c.StatusAgeStart, c.StatusAgeExit)
	}
	ws := w.Stats()
	c.Watch = WatchStats{Resumes: ws.Resumes - w0.Resumes, Relists: ws.Relists - w0.Relists}
	mu.Lock()
	defer mu.Unlock()
	c.Created = len(created)
	for _, p := range churned {
		if _, ok := created[p]; !ok {
			continue
		}
		if at, ok := started[p]; ok {
			c.Startup = append(c.Startup, at.Sub(created[p]).Seconds())
		} else if reason, ok := failed[p]; ok {
			if c.Failed == nil {
				c.Failed = map[string]int{}
			}
			c.Failed[reason]++
		} else {
			c.NotStarted++
		}
	}
	return c, queue, nil
}

// readCRI reads the side's runtime's CRI totals (nil without
// RuntimeMetrics, or when the read fails: then logged, the burst goes
// on without its calls).
func (s DensitySide) readCRI(ctx context.Context, log *slog.Logger) *criReading {
	if s.RuntimeMetrics == "" {
		return nil
	}
	r, err := readCRICounters(ctx, http.DefaultClient, s.RuntimeMetrics)
	if err != nil {
		log.Warn("cannot read the runtime's CRI calls", "err", err)
		return nil
	}
	return &r
}

// criSince is the CRI calls since r0 (nil when r0 is, or the read
// fails).
func (s DensitySide) criSince(ctx context.Context, log *slog.Logger, r0 *criReading) *CRIWindow {
	if r0 == nil {
		return nil
	}
	r := s.readCRI(ctx, log)
	if r == nil {
		return nil
	}
	return r.window(*r0)
}

// metricsClient is the client the PLEG's metrics are read through.
func (s DensitySide) metricsClient() *http.Client {
	if s.MetricsClient != nil {
		return s.MetricsClient
	}
	return http.DefaultClient
}

// statusAges are the status ages (StatusAges) of the churn: the starts
// of the pods it created and the exits of those and of the pods it
// deleted, with how many exits were taken at the look that missed them,
// and how many changes the watch had not shown by end (counted until
// then).
func (w *PodWatch) statusAges(churned, deleted []string, truth *RuntimeTruth, end time.Time) (ofStarts, ofExits Sample, missed, unseen int) {
	started, finished, missed := truth.Times()
	starts := make(map[string]time.Time, len(churned))
	for _, n := range churned {
		if at, ok := started[n]; ok {
			starts[n] = at
		}
	}
	names := slices.Concat(churned, deleted)
	slices.Sort(names)
	names = slices.Compact(names)
	w.mu.Lock()
	defer w.mu.Unlock()
	ofStarts, u1 := StatusAges(names, starts, nil, w.tracker, end)
	ofExits, u2 := StatusAges(names, nil, finished, w.tracker, end)
	return ofStarts, ofExits, missed, u1 + u2
}

// idleCost waits settle, then samples the CPU time of pids over window
// and their resident memory at its end.
func idleCost(ctx context.Context, pids []int, settle, window time.Duration) (DensityIdle, error) {
	var d DensityIdle
	if err := sleep(ctx, settle); err != nil {
		return d, err
	}
	before, err := cpuTicks(pids)
	if err != nil {
		return d, err
	}
	t0 := time.Now()
	if err := sleep(ctx, window); err != nil {
		return d, err
	}
	after, err := cpuTicks(pids)
	if err != nil {
		return d, err
	}
	d.CPUPercent = CPUPercent(after-before, time.Since(t0))
	m, err := readMemory(pids)
	if err != nil {
		return d, err
	}
	d.RSSMB, d.EachMB, d.AnonMB, d.FileMB = m.RSS, m.Each, m.Anon, m.File
	return d, nil
}

// CPUPercent is ticks of CPU time (USER_HZ) used over window, in percent
// of one core.
func CPUPercent(ticks int64, window time.Duration) float64 {
	if window <= 0 {
		return 0
	}
	return float64(ticks) / clkTck / window.Seconds() * 100
}

// readStatTicks reads pid's CPU time in clock ticks.
func readStatTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	t, err := ParseProcStat(string(b))
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return t, nil
}

// DensityRow is one row of the density table: per agent (in the
// report's order) the values shown, of one kind.
type DensityRow struct {
	Measure string
	// Kind says how the values read: KindPercentiles (p50, p90, p99 of
	// seconds, N the samples), KindRounds (seconds: the median of the
	// rounds first, then each round's), or a unit for a mean over the
	// rounds (e.g. "% of a core", "MB").
	Kind   string
	Values [][]float64
	N      []int
}

// The kinds of a DensityRow's values.
const (
	KindPercentiles = "percentiles"
	KindRounds      = "rounds"
	// KindMax reads as KindRounds with the largest of the rounds first.
	KindMax = "max"
)

// DensityPercentiles are the startup rows' quantiles.
var DensityPercentiles = []float64{0.5, 0.9, 0.99}

// DensityRows are the table of a density report: the startup latency
// percentiles of the paced pods, then for each burst its pods' startup
// percentiles, the time until all ran and until all were deleted, then
// the idle cost; startup samples pooled over the rounds, times per round.
// A row no agent measured is left out.
func DensityRows(rep DensityReport) []DensityRow {
	var rows []DensityRow
	pooled := func(measure string, get func(DensityRound) (Sample, bool)) {
		row := DensityRow{Measure: measure, Kind: KindPercentiles}
		any := false
		for _, a := range rep.Agents {
			var all Sample
			for _, r := range rep.Rounds {
				if s, ok := get(r); ok && r.Agent == a {
					all = append(all, s...)
				}
			}
			var v []float64
			if len(all) > 0 {
				any = true
				for _, q := range DensityPercentiles {
					v = append(v, all.Quantile(q))
				}
			}
			row.Values, row.N = append(row.Values, v), append(row.N, len(all))
		}
		if any {
			rows = append(rows, row)
		}
	}
	rounds := func(measure, kind string, get func(DensityRound) (float64, bool)) {
		row := DensityRow{Measure: measure, Kind: kind}
		any := false
		for _, a := range rep.Agents {
			var each Sample
			for _, r := range rep.Rounds {
				if v, ok := get(r); ok && r.Agent == a {
					each = append(each, v)
				}
			}
			var v []float64
			if len(each) > 0 {
				any = true
				first := each.Median()
				if kind == KindMax {
					first = slices.Max(each)
				}
				v = append([]float64{first}, each...)
			}
			row.Values, row.N = append(row.Values, v), append(row.N, len(each))
		}
		if any {
			rows = append(rows, row)
		}
	}
	perRound := func(measure string, get func(DensityRound) (float64, bool)) { rounds(measure, KindRounds, get) }
	mean := func(measure, unit string, get func(DensityRound) (float64, bool)) {
		row := DensityRow{Measure: measure, Kind: unit}
		any := false
		for _, a := range rep.Agents {
			sum, n := 0.0, 0
			for _, r := range rep.Rounds {
				if v, ok := get(r); ok && r.Agent == a {
					sum, n = sum+v, n+1
				}
			}
			var v []float64
			if n > 0 {
				any = true
				v = []float64{sum / float64(n)}
			}
			row.Values, row.N = append(row.Values, v), append(row.N, n)
		}
		if any {
			rows = append(rows, row)
		}
	}
	pooled(fmt.Sprintf("pod startup SLI, %d pods created at %g pods/s (created → all containers started, watched)", rep.Pods, rep.Rate),
		func(r DensityRound) (Sample, bool) { return r.Startup, len(r.Startup) > 0 })
	burst := func(r DensityRound, n int) (DensityBurst, bool) {
		for _, b := range r.Bursts {
			if b.Pods == n {
				return b, true
			}
		}
		return DensityBurst{}, false
	}
	for _, n := range rep.Bursts {
		perRound(fmt.Sprintf("%d pods at once → all running", n), func(r DensityRound) (float64, bool) {
			b, ok := burst(r, n)
			return b.AllRunning, ok
		})
		perRound(fmt.Sprintf("%d pods at once → last container started, the runtime's clock", n), func(r DensityRound) (float64, bool) {
			b, ok := burst(r, n)
			return b.RuntimeStarted, ok && b.RuntimeStarted > 0
		})
		pooled(fmt.Sprintf("%d pods at once: pod startup SLI", n), func(r DensityRound) (Sample, bool) {
			b, ok := burst(r, n)
			return b.Startup, ok && len(b.Startup) > 0
		})
		perRound(fmt.Sprintf("delete %d pods → all gone", n), func(r DensityRound) (float64, bool) {
			b, ok := burst(r, n)
			return b.AllGone, ok && b.AllGone > 0
		})
	}
	if rep.ChurnSeconds > 0 {
		churn := func(r DensityRound) (DensityChurn, bool) {
			if r.Churn == nil {
				return DensityChurn{}, false
			}
			return *r.Churn, true
		}
		base := 0
		for _, r := range rep.Rounds {
			if r.Churn != nil {
				base = r.Churn.Pods
				break
			}
		}
		what := fmt.Sprintf("churn at %d pods, %g pods/s created and deleted for %g s", base, rep.ChurnRate, rep.ChurnSeconds)
		pooled(what+": pod startup SLI", func(r DensityRound) (Sample, bool) {
			c, ok := churn(r)
			return c.Startup, ok && len(c.Startup) > 0
		})
		mean(what+": pods failed by the node before they started", "pods", func(r DensityRound) (float64, bool) {
			c, ok := churn(r)
			n := 0
			for _, v := range c.Failed {
				n += v
			}
			return float64(n), ok
		})
		mean(what+": pods deleted before seen started", "pods", func(r DensityRound) (float64, bool) {
			c, ok := churn(r)
			return float64(c.NotStarted), ok
		})
		mean(what+": agent CPU", "% of a core", func(r DensityRound) (float64, bool) {
			c, ok := churn(r)
			return c.CPUPercent, ok && c.CPUPercent > 0
		})
		mean(what+": the runtime's CPU (containerd, without its shims)", "% of a core", func(r DensityRound) (float64, bool) {
			c, ok := churn(r)
			return c.RuntimeCPUPercent, ok && c.RuntimeCPUPercent > 0
		})
		mean(what+": the machine's CPU busy (all cores, both nodes and the control plane)", "%", func(r DensityRound) (float64, bool) {
			c, ok := churn(r)
			return c.HostBusyPercent, ok && c.HostBusyPercent > 0
		})
		pooled(what+": pod status age (the runtime's change → the API server's status shows it)", func(r DensityRound) (Sample, bool) {
			c, ok := churn(r)
			return c.StatusAge, ok && len(c.StatusAge) > 0
		})
		pooled(what+": status age of the containers' starts", func(r DensityRound) (Sample, bool) {
			c, ok := churn(r)
			return c.StatusAgeStart, ok && len(c.StatusAgeStart) > 0
		})
		pooled(what+": status age of the containers' exits", func(r DensityRound) (Sample, bool) {
			c, ok := churn(r)
			return c.StatusAgeExit, ok && len(c.StatusAgeExit) > 0
		})
		rounds(what+": the oldest status age any pod had", KindMax, func(r DensityRound) (float64, bool) {
			c, ok := churn(r)
			if !ok || len(c.StatusAge) == 0 {
				return 0, false
			}
			return slices.Max(c.StatusAge), true
		})
		perRound(what+": PLEG relist p99 (its histogram bucket's upper bound)", func(r DensityRound) (float64, bool) {
			c, ok := churn(r)
			if c.RelistP99Beyond {
				return math.Inf(1), ok && c.Relists > 0
			}
			return c.RelistP99, ok && c.Relists > 0
		})
		mean(what+": PLEG relists", "relists", func(r DensityRound) (float64, bool) {
			c, ok := churn(r)
			return float64(c.Relists), ok && c.Relists > 0
		})
	}
	idle := func(r DensityRound) (DensityIdle, bool) {
		if r.Idle == nil {
			return DensityIdle{}, false
		}
		return *r.Idle, true
	}
	idlePods := 0
	for _, r := range rep.Rounds {
		if r.Idle != nil {
			idlePods = r.Idle.Pods
			break
		}
	}
	mean(fmt.Sprintf("idle at %d pods: agent CPU (%g s window)", idlePods, rep.IdleSeconds), "% of a core", func(r DensityRound) (float64, bool) {
		d, ok := idle(r)
		return d.CPUPercent, ok
	})
	mean(fmt.Sprintf("idle at %d pods: agent RSS", idlePods), "MB", func(r DensityRound) (float64, bool) {
		d, ok := idle(r)
		return d.RSSMB, ok
	})
	mean(fmt.Sprintf("idle at %d pods: agent RSS per pod", idlePods), "kB", func(r DensityRound) (float64, bool) {
		d, ok := idle(r)
		return d.RSSMB * 1024 / float64(max(d.Pods, 1)), ok
	})
	// The growth over the empty node is the agent's own only in the first
	// round: later ones start from what earlier pods left in its heap.
	mean(fmt.Sprintf("idle at %d pods: agent RSS growth per pod over the fresh agent (first round)", idlePods), "kB", func(r DensityRound) (float64, bool) {
		d, ok := idle(r)
		return d.RSSPerPodKB(), ok && r.Round == 0
	})
	return rows
}

// Cell is agent i's values of the row as text ("—" where it has none).
func (r DensityRow) Cell(i int) string {
	if i >= len(r.Values) || len(r.Values[i]) == 0 {
		return "—"
	}
	v := r.Values[i]
	dur := func(s float64) string {
		if math.IsInf(s, 1) {
			return "past the histogram's last bucket"
		}
		return FormatDuration(s)
	}
	switch r.Kind {
	case KindPercentiles:
		return fmt.Sprintf("%s / %s / %s (n=%d)", dur(v[0]), dur(v[1]), dur(v[2]), r.N[i])
	case KindRounds, KindMax:
		if len(v) == 2 {
			return dur(v[0])
		}
		each := make([]string, len(v)-1)
		for j, x := range v[1:] {
			each[j] = dur(x)
		}
		return fmt.Sprintf("%s (rounds %s)", dur(v[0]), strings.Join(each, ", "))
	}
	return fmt.Sprintf("%.2f %s", v[0], r.Kind)
}

// Ratio is agent b's values over agent a's, value by value for the
// percentiles ("—" where either has none or a's is not positive).
func (r DensityRow) Ratio(a, b int) string {
	if a >= len(r.Values) || b >= len(r.Values) || len(r.Values[a]) == 0 || len(r.Values[b]) == 0 {
		return "—"
	}
	n := 1
	if r.Kind == KindPercentiles {
		n = len(DensityPercentiles)
	}
	parts := make([]string, n)
	for i := range n {
		if !(r.Values[a][i] > 0) || math.IsInf(r.Values[a][i], 0) || math.IsInf(r.Values[b][i], 0) {
			return "—"
		}
		parts[i] = fmt.Sprintf("%.2f×", r.Values[b][i]/r.Values[a][i])
	}
	return strings.Join(parts, " / ")
}

// Median is the middle sample, or the mean of the two middle ones of an
// even count (a few rounds' median: nearest rank would pick the lower of
// two); NaN when empty.
func (s Sample) Median() float64 {
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	v := slices.Clone(s)
	slices.Sort(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// hostCPU is the machine's CPU time from /proc/stat's cpu line, in ticks:
// all of it and the idle part (idle and iowait).
type hostCPU struct{ total, idle int64 }

func readHostCPU() (hostCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostCPU{}, err
	}
	return parseHostCPU(string(b))
}

// parseHostCPU reads /proc/stat's first line (cpu user nice system idle
// iowait irq softirq steal ...).
func parseHostCPU(stat string) (hostCPU, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return hostCPU{}, fmt.Errorf("/proc/stat: no cpu line in %.80q", line)
	}
	var h hostCPU
	// guest and guest_nice (fields 9, 10) are already in user and nice.
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return hostCPU{}, fmt.Errorf("/proc/stat: %w", err)
		}
		h.total += n
		if i == 3 || i == 4 {
			h.idle += n
		}
	}
	return h, nil
}

// waitQuiet waits, at most bound, until the machine's cores were less
// than busy percent busy over a window, and returns how long it waited
// and how busy they were over the last window (bound 0: no wait and
// nothing measured).
func waitQuiet(ctx context.Context, bound time.Duration, busy float64, window time.Duration) (time.Duration, float64, error) {
	if bound <= 0 {
		return 0, 0, nil
	}
	t0 := time.Now()
	for {
		h0, err := readHostCPU()
		if err != nil {
			return 0, 0, err
		}
		if err := sleep(ctx, window); err != nil {
			return 0, 0, err
		}
		h, err := readHostCPU()
		if err != nil {
			return 0, 0, err
		}
		b := h.busySince(h0)
		if b < busy || time.Since(t0) >= bound {
			return time.Since(t0) - window, b, nil
		}
	}
}

// quietWindow is the window waitQuiet reads the machine's CPU over.
const quietWindow = 3 * time.Second

// busySince is the share of the machine's CPU time that was not idle
// since h0, in percent.
func (h hostCPU) busySince(h0 hostCPU) float64 {
	total := h.total - h0.total
	if total <= 0 {
		return 0
	}
	return float64(total-(h.idle-h0.idle)) / float64(total) * 100
}
