package pleg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/syncpod/syncpod/internal/promreg"
	"github.com/syncpod/syncpod/pleg/cache"
	"github.com/syncpod/syncpod/pleg/core"
	"github.com/syncpod/syncpod/pleg/diff"
	"github.com/syncpod/syncpod/pleg/fanout"
	"github.com/syncpod/syncpod/pleg/termination"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is the part of the CRI runtime service (k8s.io/cri-api's
// RuntimeService, e.g. the k8s.io/cri-client remote client) the PLEG
// uses. Every call gets a context with a timeout.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

// Evented modes (the --evented flag).
const (
	EventedAuto = "auto" // use GetContainerEvents when the runtime offers it
	EventedOn   = "on"   // require it: Run fails when the runtime answers Unimplemented
	EventedOff  = "off"  // relist only
)

// Options configure a PLEG. Zero durations and counts take the defaults.
type Options struct {
	// Runtime is the CRI runtime. Required.
	Runtime Runtime
	// Logger receives the PLEG's logs. Required.
	Logger *slog.Logger
	// Registry receives the syncpod_pleg_* metrics. Required.
	Registry prometheus.Registerer
	// RelistPeriod is a fixed relist period in relist mode. Zero (the
	// default) chooses it after every relist from what relists cost, within
	// RelistBudget.
	RelistPeriod time.Duration
	// RelistBudget bounds the adaptive relist period (zero:
	// core.DefaultRelistBudget, 1 % of a core between 100 ms and the
	// kubelet's 1 s).
	RelistBudget core.RelistBudget
	// CPUTime is the CPU time the process has used so far (default: user
	// plus system time from getrusage); a relist's cost is the wall time of
	// its lists and diff (standing for the runtime's work) plus the CPU
	// time spent meanwhile.
	CPUTime func() time.Duration
	// RelistThreshold: unhealthy when the last successful relist is older
	// (default 3 min, R-13.1).
	RelistThreshold time.Duration
	// Evented is EventedAuto (default), EventedOn or EventedOff.
	Evented string
	// EventedRelistPeriod is the safety-net relist period in evented mode
	// (default 300 s, R-13.1).
	EventedRelistPeriod time.Duration
	// InspectParallelism bounds concurrent pod inspections (default 8).
	InspectParallelism int
	// InspectTimeout bounds one pod's inspection (default 10 s).
	InspectTimeout time.Duration
	// InspectPatience is how long a relist waits for one pod's inspection
	// (default 5 s); one that takes longer goes on without holding the
	// relist (see inspectPatiently). At InspectTimeout or more, relists
	// wait for every inspection.
	InspectPatience time.Duration
	// ListTimeout bounds each list call (default 30 s).
	ListTimeout time.Duration
	// EventedMaxFailures: stream failures in a row after which the PLEG
	// stops retrying every EventedRetryDelay and backs off (default 5,
	// the kubelet gives evented mode up for good there).
	EventedMaxFailures int
	// EventedRetryDelay is the pause before re-opening a failed stream
	// (default 1 s).
	EventedRetryDelay time.Duration
	// EventedBackoff is the pause before re-opening the stream after
	// EventedMaxFailures failures in a row, doubling with every further
	// failure up to EventedBackoffMax (defaults 10 s and 300 s). A stream
	// that stays up longer than EventedBackoffMax resets the count.
	EventedBackoff    time.Duration
	EventedBackoffMax time.Duration
	// EventedConfirm: a stream that stays open this long, or delivers an
	// event, puts the PLEG in evented mode (default 1 s). A runtime without
	// the RPC answers Unimplemented at once, so the PLEG never claims
	// evented mode for it.
	EventedConfirm time.Duration
	// Wake is the runtime's own event service (nil: none). In relist mode,
	// when the runtime offers no CRI container events, its task events wake
	// relists and the periodic relist is a safety net.
	Wake WakeSource
	// WakePeriod is the relist-mode period while the Wake stream is up
	// (default the kubelet's 1 s; a fixed RelistPeriod takes precedence).
	WakePeriod time.Duration
	// WakeSettle is the pause before the first follow-up relist of a woken
	// one, each next one waiting twice as long (default 25 ms; see
	// runRelist): the runtime's events reach the PLEG before the runtime's
	// own CRI handler has recorded the change.
	WakeSettle time.Duration
	// WakeConfirm: a Wake stream that stays open this long, or delivers an
	// event, is up (default 1 s).
	WakeConfirm time.Duration
	// WakeRetry is the pause before re-opening a failed Wake stream,
	// doubling while streams fail before they are up up to WakeBackoffMax,
	// which is also the pause after Unimplemented (defaults 1 s and 300 s).
	WakeRetry      time.Duration
	WakeBackoffMax time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ReadTail reads the end of an exited container's termination-message
	// file or log (default termination.ReadTail, the local file system).
	ReadTail termination.TailReader
}

func (o *Options) defaults() error {
	var errs []error
	if o.ReadTail == nil {
		o.ReadTail = termination.ReadTail
	}
	if o.Runtime == nil {
		errs = append(errs, errors.New("Runtime is required"))
	}
	if o.Logger == nil {
		errs = append(errs, errors.New("Logger is required"))
	}
	if o.Registry == nil {
		errs = append(errs, errors.New("Registry is required"))
	}
	switch o.Evented {
	case "":
		o.Evented = EventedAuto
	case EventedAuto, EventedOn, EventedOff:
	default:
		errs = append(errs, fmt.Errorf("evented: %q is not auto, on or off", o.Evented))
	}
	def := func(d *time.Duration, v time.Duration, name string) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			errs = append(errs, fmt.Errorf("%s: must be positive, got %s", name, *d))
		}
	}
	if o.RelistPeriod < 0 {
		errs = append(errs, fmt.Errorf("relist period: must be positive or zero (adaptive), got %s", o.RelistPeriod))
	}
	if o.RelistBudget == (core.RelistBudget{}) {
		o.RelistBudget = core.DefaultRelistBudget
	}
	if b := o.RelistBudget; b.Share <= 0 || b.Min <= 0 || b.Max < b.Min {
		errs = append(errs, fmt.Errorf("relist budget: want a positive share and 0 < min <= max, got %+v", b))
	}
	if o.CPUTime == nil {
		o.CPUTime = processCPU
	}
	def(&o.RelistThreshold, 3*time.Minute, "relist threshold")
	def(&o.EventedRelistPeriod, 300*time.Second, "evented relist period")
	def(&o.InspectTimeout, 10*time.Second, "inspect timeout")
	def(&o.InspectPatience, 5*time.Second, "inspect patience")
	def(&o.ListTimeout, 30*time.Second, "list timeout")
	def(&o.EventedRetryDelay, time.Second, "evented retry delay")
	def(&o.EventedBackoff, 10*time.Second, "evented backoff")
	def(&o.EventedBackoffMax, 300*time.Second, "evented backoff max")
	def(&o.EventedConfirm, time.Second, "evented confirm")
	def(&o.WakePeriod, time.Second, "wake period")
	def(&o.WakeSettle, 25*time.Millisecond, "wake settle")
	def(&o.WakeConfirm, time.Second, "wake confirm")
	def(&o.WakeRetry, time.Second, "wake retry")
	def(&o.WakeBackoffMax, 300*time.Second, "wake backoff max")
	if o.InspectParallelism == 0 {
		o.InspectParallelism = 8
	}
	if o.InspectParallelism < 0 {
		errs = append(errs, fmt.Errorf("inspect parallelism: must be positive, got %d", o.InspectParallelism))
	}
	if o.EventedMaxFailures == 0 {
		o.EventedMaxFailures = 5
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return errors.Join(errs...)
}

// SubscriberBuffer is the buffer of one Watch subscriber, in events (the
// kubelet's event channel holds 1000, R-13.1).
const SubscriberBuffer = 1000

// PLEG is the pod lifecycle event generator. Create it with New and start
// it with Run.
type PLEG struct {
	opts    Options
	log     *slog.Logger
	metrics *Metrics
	cache   *cache.Cache
	fan     *fanout.Broadcaster

	mode       atomic.Int32 // plegv1.PlegMode
	lastRelist atomic.Int64 // unix nanos of the last successful relist's start
	kick       chan struct{}
	// wake asks for a relist and its follow-ups; wakeUp: the
	// runtime's event stream is up.
	wake   chan struct{}
	wakeUp atomic.Bool

	// podRelists queues on-demand single-pod relists; pending
	// dedupes them: uid → the newest status the queued request's callers
	// wait for.
	podRelists chan podRelist
	pendingMu  sync.Mutex
	pending    map[string]time.Time

	// stragglers are the pods whose inspection outlasted the inspect
	// patience and still runs (inspectPatiently).
	stragglersMu sync.Mutex
	stragglers   map[string]bool

	// relistMu serialises relists (global and single-pod); the fields
	// below it belong to the relist.
	relistMu  sync.Mutex
	lastStart time.Time
	// costs are the last relists' costs (a ring of relistCosts), from
	// which the adaptive period is chosen.
	costs    []time.Duration
	costNext int

	// adaptive is the relist-mode period chosen from the costs (nanos;
	// zero with a fixed RelistPeriod).
	adaptive atomic.Int64

	// core is the state relists and runtime events both change: the
	// records, the cache writes and the order of their events.
	core *core.State
}

// New builds a PLEG from opts; it does not touch the runtime.
func New(opts Options) (*PLEG, error) {
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("pleg: %w", err)
	}
	p := &PLEG{
		opts:       opts,
		log:        opts.Logger,
		cache:      cache.New(),
		kick:       make(chan struct{}, 1),
		wake:       make(chan struct{}, 1),
		podRelists: make(chan podRelist, PodRelistQueue),
		pending:    map[string]time.Time{},
		stragglers: map[string]bool{},
	}
	var m *Metrics
	p.fan = fanout.New(fanout.Counters{
		Discarded: func() { m.Discarded.Inc() },
		Resync:    func() { m.Resyncs.Inc() },
	}, opts.Now)
	m, err := newMetrics(opts.Registry, func() float64 {
		n := p.lastRelist.Load()
		if n == 0 {
			return 0
		}
		return float64(n) / 1e9
	}, func() float64 { return float64(p.fan.Subscribers()) })
	if err != nil {
		return nil, fmt.Errorf("pleg: metrics: %w", err)
	}
	p.metrics = m
	if opts.RelistPeriod == 0 {
		p.adaptive.Store(int64(opts.RelistBudget.Max)) // until a relist's cost is known
	}
	if err := promreg.Register(opts.Registry, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "syncpod_pleg_relist_period_seconds",
		Help: "The relist period in use: in relist mode the adaptive one chosen from what relists cost (R-13.10), the safety net while the runtime's events wake relists (R-34) or --relist-period, in evented mode the safety-net period.",
	}, func() float64 { return p.period().Seconds() })); err != nil {
		return nil, fmt.Errorf("pleg: metrics: %w", err)
	}
	p.core = core.New(p.cache, p.publish)
	p.setMode(plegv1.PlegMode_PLEG_MODE_RELIST)
	return p, nil
}

// Mode is the mode in use.
func (p *PLEG) Mode() plegv1.PlegMode { return plegv1.PlegMode(p.mode.Load()) }

func (p *PLEG) setMode(m plegv1.PlegMode) {
	old := plegv1.PlegMode(p.mode.Swap(int32(m)))
	p.metrics.Mode.WithLabelValues("relist").Set(b2f(m == plegv1.PlegMode_PLEG_MODE_RELIST))
	p.metrics.Mode.WithLabelValues("evented").Set(b2f(m == plegv1.PlegMode_PLEG_MODE_EVENTED))
	if old != m {
		p.log.Info("pleg mode", "mode", modeName(m), "relist_period", p.period().String())
		p.kickRelist()
	}
}

func modeName(m plegv1.PlegMode) string {
	if m == plegv1.PlegMode_PLEG_MODE_EVENTED {
		return "evented"
	}
	return "relist"
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// period is the relist period of the current mode.
func (p *PLEG) period() time.Duration {
	if p.Mode() == plegv1.PlegMode_PLEG_MODE_EVENTED {
		return p.opts.EventedRelistPeriod
	}
	return p.relistModePeriod()
}

// relistModePeriod is the period of relist mode: the fixed one, the
// safety net while the runtime's events wake relists, or the
// adaptive one last chosen.
func (p *PLEG) relistModePeriod() time.Duration {
	if p.opts.RelistPeriod > 0 {
		return p.opts.RelistPeriod
	}
	if p.wakeUp.Load() {
		return p.opts.WakePeriod
	}
	return time.Duration(p.adaptive.Load())
}

// relistPeriodName names the relist-mode period for logs: the fixed one,
// or "adaptive".
func (p *PLEG) relistPeriodName() string {
	if p.opts.RelistPeriod > 0 {
		return p.opts.RelistPeriod.String()
	}
	return "adaptive"
}

// relistCosts is how many recent relists the adaptive period averages.
const relistCosts = 8

// relisted records what a relist cost and whether its lists failed and,
// with the adaptive period, chooses the next period from the recent costs
// . The caller holds relistMu.
func (p *PLEG) relisted(cost time.Duration, failed bool) {
	if p.opts.RelistPeriod > 0 {
		return
	}
	if len(p.costs) < relistCosts {
		p.costs = append(p.costs, cost)
	} else {
		p.costs[p.costNext] = cost
		p.costNext = (p.costNext + 1) % relistCosts
	}
	next := core.RelistPeriod(p.costs, failed, p.opts.RelistBudget)
	if old := time.Duration(p.adaptive.Swap(int64(next))); old != next {
		p.log.Debug("relist period", "period", next.String(), "was", old.String(), "last_cost", cost.String())
	}
}

// threshold is the health threshold of the current mode: in evented mode
// at least twice the safety-net period (10 min with the defaults, R-13.1).
func (p *PLEG) threshold() time.Duration {
	if p.Mode() == plegv1.PlegMode_PLEG_MODE_EVENTED {
		return max(p.opts.RelistThreshold, 2*p.opts.EventedRelistPeriod)
	}
	return p.opts.RelistThreshold
}

// kickRelist asks the relist loop to relist now (and re-read its period).
func (p *PLEG) kickRelist() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run relists immediately and then every period, and runs the evented
// stream unless disabled, until ctx is done (then it returns nil). When
// the runtime offers no CRI container events (or evented mode is off) it
// keeps the Wake stream open instead. It returns an error only when
// --evented=on and the runtime lacks the event stream.
func (p *PLEG) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	if p.opts.Evented != EventedOff {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.runEvented(ctx); err != nil {
				errc <- err
				cancel()
				return
			}
			// runEvented returns early only for a runtime without CRI
			// events: the PLEG relists for good.
			if ctx.Err() == nil && p.opts.Wake != nil {
				p.runWake(ctx)
			}
		}()
	} else if p.opts.Wake != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.runWake(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.runPodRelists(ctx)
	}()
	p.runRelist(ctx)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// wakeFollowUps is how many follow-up relists a woken relist gets
// WakeSettle after it, then each twice as long after the one
// before (25, 50, 100 and 200 ms with the defaults).
const wakeFollowUps = 4

// runRelist relists now and then every period, at once when kicked, and
// when woken by a runtime event at once and then wakeFollowUps times more
// containerd 1.6's CRI plugin records an exit some 15 to 20 ms
// after the task's deletion event, the last event of an exit. Woken
// relists start at least WakeSettle apart, so a burst of events (pods
// starting) relists at most every WakeSettle.
func (p *PLEG) runRelist(ctx context.Context) {
	followUps, step := 0, time.Duration(0)
	for {
		started := time.Now()
		p.Relist(ctx)
		d := p.period()
		if followUps > 0 {
			d = min(d, step)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			if followUps > 0 {
				followUps--
				step *= 2
			}
		case <-p.kick:
			t.Stop()
		case <-p.wake:
			t.Stop()
			followUps, step = wakeFollowUps, p.opts.WakeSettle
			if wait := p.opts.WakeSettle - time.Since(started); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
	}
}

// Healthy reports whether the last successful relist is recent enough
// with the reason when it is not.
func (p *PLEG) Healthy() (bool, string) {
	n := p.lastRelist.Load()
	if n == 0 {
		return false, "pleg has yet to be successful"
	}
	since := p.opts.Now().Sub(time.Unix(0, n))
	if th := p.threshold(); since > th {
		return false, fmt.Sprintf("pleg was last seen active %s ago; threshold is %s", since.Round(time.Millisecond), th)
	}
	return true, ""
}

// RunHealth checks Healthy every interval (default: a tenth of the
// threshold, between 100 ms and 1 s) and calls set with the result, every
// time (so a status overwritten elsewhere is corrected). Transitions are
// logged with the reason. It returns nil when ctx is done.
func (p *PLEG) RunHealth(ctx context.Context, interval time.Duration, set func(serving bool)) error {
	if interval <= 0 {
		interval = min(max(p.opts.RelistThreshold/10, 100*time.Millisecond), time.Second)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	was := true
	first := true
	for {
		ok, reason := p.Healthy()
		set(ok)
		switch {
		case !ok && (was || first):
			p.log.Warn("pleg unhealthy: health NOT_SERVING", "reason", reason)
		case ok && !was:
			p.log.Info("pleg healthy again: health SERVING")
		}
		was, first = ok, false
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Subscribe opens a Watch subscription (see package fanout); the caller
// must Close it.
func (p *PLEG) Subscribe(podUIDs []string) *fanout.Subscription {
	return p.fan.Subscribe(SubscriberBuffer, podUIDs)
}

// GetPodStatus waits until the cache holds a status of uid current after
// newerThan (zero: any), or ctx is done (its error). When the cache cannot
// answer at once, that one pod is relisted on demand, so the
// caller waits for a single pod's inspection rather than for the next
// relist. In evented mode a status is current only up to the last runtime
// event actually applied (never up to "now" because the stream is open),
// so a caller never gets a status older than it asked for while events
// are still queued.
func (p *PLEG) GetPodStatus(ctx context.Context, uid string, newerThan time.Time) (*syncpodv1.ObservedPod, error) {
	if pod, ok := p.cache.Peek(uid, newerThan); ok {
		return pod, nil
	}
	p.requestPodRelist(uid, newerThan)
	return p.cache.GetNewerThan(ctx, uid, newerThan)
}

// ListPodStatuses returns every cached status sorted by uid, the cache's
// global timestamp and the mode.
func (p *PLEG) ListPodStatuses() ([]*syncpodv1.ObservedPod, time.Time, plegv1.PlegMode) {
	pods, ts := p.cache.List()
	return pods, ts, p.Mode()
}

// publish sends events with their pod's status (nil: none) and counts
// them; CONTAINER_CHANGED is counted but not sent.
func (p *PLEG) publish(events []diff.Event, observed *syncpodv1.ObservedPod, at time.Time) {
	ts := timestamppb.New(at)
	for _, e := range events {
		p.metrics.Events.WithLabelValues(eventLabel(e.Type)).Inc()
		if !diff.Sent(e.Type) {
			continue
		}
		p.fan.Publish(&plegv1.PodLifecycleEvent{PodUid: e.PodUID, Type: e.Type, ContainerId: e.ContainerID, Time: ts, Observed: observed})
	}
}

// Subscribers is the number of open Watch subscriptions.
func (p *PLEG) Subscribers() int { return p.fan.Subscribers() }
