package timeline

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/internal/promreg"
	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
)

// Trigger sources.
const (
	SourceStore  = "store"  // a new pod, a spec change or a deletion
	SourceResync = "resync" // the periodic resync, or one after a PLEG reconnect
	SourceTimer  = "timer"  // a back-off or error-retry wake-up, or no recorded trigger
	SourceProbe  = "probe"  // a probe result changed
	// SourceEviction is the eviction check finding an emptyDir over its
	// sizeLimit.
	SourceEviction = "eviction"
	// SourceShutdown is the node's graceful shutdown ending the pod.
	SourceShutdown = "shutdown"
	// SourcePLEG prefixes a PLEG event's type: "pleg:CONTAINER_DIED".
	SourcePLEG = "pleg:"
)

// Stage names the syncer marks. CRI calls are StageCRI + operation.
const (
	StageQueued     = "queued"
	StageStatusRead = "status_read"
	StagePlan       = "plan"
	StageExecutor   = "executor"
	// StageStatusAfter is the read, after an executor call that changed
	// the runtime, of the status the sync then stores.
	StageStatusAfter   = "status_after_apply"
	StageStatusWritten = "status_written"
	StageCRI           = "cri:"
	// stageTotal is only a metric label: trigger to end.
	stageTotal = "total"
)

// Recorder keeps pending triggers and each pod's last sync timeline. Create
// with New; safe for concurrent use.
type Recorder struct {
	now func() time.Time
	log *slog.Logger

	stage *prometheus.HistogramVec
	lag   *prometheus.HistogramVec

	mu      sync.Mutex
	pending map[string]pending
	last    map[string]*plannerv1.PodSyncTimeline
}

type pending struct {
	source  string
	at      time.Time
	eventAt time.Time
}

// New returns a recorder whose metrics are registered on reg (nil: not
// registered). now is the clock (nil: time.Now).
func New(reg prometheus.Registerer, now func() time.Time) (*Recorder, error) {
	if now == nil {
		now = time.Now
	}
	r := &Recorder{
		now:     now,
		log:     slog.New(slog.DiscardHandler),
		pending: map[string]pending{},
		last:    map[string]*plannerv1.PodSyncTimeline{},
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "syncpod", Subsystem: "planner", Name: "sync_stage_duration_seconds",
			Help: "Time of each stage of a pod sync: queued (trigger to start), status_read, plan, executor, " +
				"cri_<operation> (each CRI call the executor made), status_after_apply, status_written, total (trigger to end).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"stage"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "syncpod", Subsystem: "planner", Name: "sync_trigger_lag_seconds",
			Help:    "From the change a PLEG event reports (its time) to the planner receiving the event, by PLEG event type.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"event"}),
	}
	if err := promreg.Register(reg, r.stage, r.lag); err != nil {
		return nil, err
	}
	return r, nil
}

// SetLogger makes the recorder log every completed timeline at debug
// level ("pod sync timeline", with its stages as name@offset+duration).
// Call it before the recorder is used.
func (r *Recorder) SetLogger(l *slog.Logger) {
	if r != nil && l != nil {
		r.log = l
	}
}

// Triggered notes that a sync of uid was asked for by source; eventAt is
// when the change happened for a PLEG trigger (zero otherwise). The first
// trigger since the pod's last sync began is the one its next sync
// reports (later ones coalesce into it).
func (r *Recorder) Triggered(uid, source string, eventAt time.Time) {
	if r == nil {
		return
	}
	now := r.now()
	if !eventAt.IsZero() && strings.HasPrefix(source, SourcePLEG) {
		r.lag.WithLabelValues(strings.TrimPrefix(source, SourcePLEG)).Observe(max(now.Sub(eventAt), 0).Seconds())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pending[uid]; !ok {
		r.pending[uid] = pending{source: source, at: now, eventAt: eventAt}
	}
}

// Begin starts the timeline of a sync of uid, taking its pending trigger
// (none: a timer wake-up, triggered now).
func (r *Recorder) Begin(uid string) *Sync {
	if r == nil {
		return nil
	}
	now := r.now()
	r.mu.Lock()
	p, ok := r.pending[uid]
	delete(r.pending, uid)
	r.mu.Unlock()
	if !ok {
		p = pending{source: SourceTimer, at: now}
	}
	s := &Sync{r: r, uid: uid, t: &plannerv1.PodSyncTimeline{Trigger: p.source, TriggeredAt: timestamppb.New(p.at)}, at: p.at}
	if !p.eventAt.IsZero() {
		s.t.EventAt = timestamppb.New(p.eventAt)
	}
	s.add(StageQueued, p.at, now.Sub(p.at))
	return s
}

// Last returns a copy of uid's last completed sync timeline, nil when none.
func (r *Recorder) Last(uid string) *plannerv1.PodSyncTimeline {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.last[uid]
	if t == nil {
		return nil
	}
	return proto.Clone(t).(*plannerv1.PodSyncTimeline)
}

// Forget drops what is kept of uid (the pod is gone).
func (r *Recorder) Forget(uid string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, uid)
	delete(r.last, uid)
}

// Sync is the timeline of one sync in progress. Stages may be marked from
// one goroutine at a time (the sync's own).
type Sync struct {
	r   *Recorder
	uid string
	at  time.Time // triggered at
	t   *plannerv1.PodSyncTimeline
}

// Stage starts a stage and returns the function that ends it.
func (s *Sync) Stage(name string) (end func()) {
	if s == nil {
		return func() {}
	}
	start := s.r.now()
	return func() { s.add(name, start, s.r.now().Sub(start)) }
}

// CRICalls adds the CRI calls an executor pass reports.
func (s *Sync) CRICalls(calls []*executorv1.CriCallTiming) {
	if s == nil {
		return
	}
	for _, c := range calls {
		s.add(StageCRI+c.GetOperation(), c.GetStartedAt().AsTime(), c.GetDuration().AsDuration())
	}
}

// End completes the timeline with the sync's error (nil: success): its
// stages go into the histograms and it becomes uid's last sync.
func (s *Sync) End(err error) {
	if s == nil {
		return
	}
	total := s.r.now().Sub(s.at)
	slices.SortStableFunc(s.t.Stages, func(a, b *plannerv1.PodSyncStage) int {
		return cmp.Compare(a.GetOffset().AsDuration(), b.GetOffset().AsDuration())
	})
	s.t.Total = durationpb.New(total)
	if err != nil {
		s.t.Error = err.Error()
	}
	for _, st := range s.t.GetStages() {
		s.r.stage.WithLabelValues(metricStage(st.GetName())).Observe(st.GetDuration().AsDuration().Seconds())
	}
	s.r.stage.WithLabelValues(stageTotal).Observe(total.Seconds())
	if s.r.log.Enabled(context.Background(), slog.LevelDebug) {
		var eventLag time.Duration
		if s.t.GetEventAt() != nil {
			eventLag = s.at.Sub(s.t.GetEventAt().AsTime())
		}
		s.r.log.Debug("pod sync timeline", "pod_uid", s.uid, "trigger", s.t.GetTrigger(), "event_lag", eventLag.String(),
			"total", total.String(), "stages", Format(s.t), "err", s.t.GetError())
	}
	s.r.mu.Lock()
	s.r.last[s.uid] = s.t
	s.r.mu.Unlock()
}

func (s *Sync) add(name string, start time.Time, took time.Duration) {
	s.t.Stages = append(s.t.Stages, &plannerv1.PodSyncStage{
		Name: name, Offset: durationpb.New(start.Sub(s.at)), Duration: durationpb.New(max(took, 0)),
	})
}

// Format renders a timeline's stages as "name@offset+duration ...".
func Format(t *plannerv1.PodSyncTimeline) string {
	parts := make([]string, 0, len(t.GetStages()))
	for _, st := range t.GetStages() {
		parts = append(parts, st.GetName()+"@"+st.GetOffset().AsDuration().String()+"+"+st.GetDuration().AsDuration().String())
	}
	return strings.Join(parts, " ")
}

// metricStage is a stage's label: "cri:run_podsandbox" → "cri_run_podsandbox".
func metricStage(name string) string {
	if op, ok := strings.CutPrefix(name, StageCRI); ok {
		return "cri_" + op
	}
	return name
}
