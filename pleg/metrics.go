package pleg

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/promreg"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
)

// Metrics are the PLEG's Prometheus metrics, after the kubelet's.
type Metrics struct {
	RelistDuration   prometheus.Histogram
	RelistInterval   prometheus.Histogram
	Events           *prometheus.CounterVec
	Discarded        prometheus.Counter
	Resyncs          prometheus.Counter
	InspectionErrors prometheus.Counter
	// InspectionStragglers counts inspections that outlasted the inspect
	// patience (a relist went on without them).
	InspectionStragglers prometheus.Counter
	RelistErrors         prometheus.Counter
	RunningPods          prometheus.Gauge
	RunningContainers    prometheus.Gauge
	EventedErrors        prometheus.Counter
	EventedConnections   prometheus.Counter
	Mode                 *prometheus.GaugeVec
	PodRelistDuration    prometheus.Histogram
	PodRelistsDropped    prometheus.Counter
	// RuntimeEvents counts CRI container events by what became of them:
	// applied, stale (older than the cached status; a DELETED one still
	// removes) or ignored (no syncpod sandbox, R-14.1).
	RuntimeEvents *prometheus.CounterVec
	// EventLag is how old a CRI container event is when applied: the
	// evented PLEG's backlog.
	EventLag prometheus.Histogram
	// WakeStream is 1 while the runtime's own event stream wakes relists
	// Wakes counts the events that woke one.
	WakeStream prometheus.Gauge
	Wakes      prometheus.Counter
}

// newMetrics creates the metrics and registers them on reg (nil: not
// registered), with lastSeen (the
// Unix time of the last successful relist) and subscribers read from
// live state.
func newMetrics(reg prometheus.Registerer, lastSeen, subscribers func() float64) (*Metrics, error) {
	m := &Metrics{
		RelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "syncpod_pleg_relist_duration_seconds", Help: "Duration of one relist: list, diff, inspect, publish.",
			// Prometheus' defaults, and 75 and 150 ms: with only 50 and
			// 100 ms, a relist of 60 ms and one of 100 ms were the same.
			Buckets: []float64{.005, .01, .025, .05, .075, .1, .15, .25, .5, 1, 2.5, 5, 10},
		}),
		RelistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "syncpod_pleg_relist_interval_seconds", Help: "Time between the starts of two relists.",
			Buckets: prometheus.DefBuckets,
		}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_pleg_events_total", Help: "Lifecycle events published, by type (CONTAINER_CHANGED counted though never sent).",
		}, []string{"type"}),
		Discarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_discarded_events_total", Help: "Events not delivered to a subscriber whose buffer was full (replaced by one RESYNC).",
		}),
		Resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_resyncs_total", Help: "RESYNC events owed to subscribers that fell behind.",
		}),
		InspectionErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_inspection_errors_total", Help: "Pod inspections that failed (the pod is re-inspected next relist).",
		}),
		InspectionStragglers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_inspection_stragglers_total", Help: "Pod inspections that outlasted the inspect patience: relists went on without them, and their results were dropped (the pod is re-inspected).",
		}),
		RelistErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_relist_errors_total", Help: "Relists whose list calls failed.",
		}),
		RunningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "syncpod_pleg_running_pods", Help: "Pods with a ready sandbox at the last relist.",
		}),
		RunningContainers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "syncpod_pleg_running_containers", Help: "Running containers at the last relist.",
		}),
		EventedErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_evented_stream_errors_total", Help: "CRI container-event stream failures.",
		}),
		EventedConnections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_evented_stream_connections_total", Help: "CRI container-event streams established.",
		}),
		Mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncpod_pleg_mode", Help: "1 for the PLEG mode in use (relist or evented), 0 otherwise.",
		}, []string{"mode"}),
		PodRelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "syncpod_pleg_pod_relist_duration_seconds",
			Help:    "Duration of one on-demand single-pod relist, run when GetPodStatus cannot be answered from the cache (R-13.7).",
			Buckets: prometheus.DefBuckets,
		}),
		PodRelistsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_pod_relists_dropped_total", Help: "On-demand pod relist requests not queued because the queue was full (a global relist is run instead).",
		}),
		RuntimeEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_pleg_runtime_events_total", Help: "CRI container events received, by result: applied, stale or ignored.",
		}, []string{"result"}),
		EventLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "syncpod_pleg_runtime_event_lag_seconds", Help: "Age of a CRI container event when the PLEG applied it (its backlog).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		WakeStream: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "syncpod_pleg_wake_stream", Help: "1 while the runtime's own event stream (containerd's Events service) wakes relists and the periodic relist is a safety net (R-34), 0 otherwise.",
		}),
		Wakes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_pleg_wakes_total", Help: "Runtime task events that woke a relist (R-34).",
		}),
	}
	for _, r := range []string{"applied", "stale", "ignored"} {
		m.RuntimeEvents.WithLabelValues(r)
	}
	cs := []prometheus.Collector{
		m.RelistDuration, m.RelistInterval, m.Events, m.Discarded, m.Resyncs, m.InspectionErrors, m.InspectionStragglers, m.RelistErrors,
		m.RunningPods, m.RunningContainers, m.EventedErrors, m.EventedConnections, m.Mode,
		m.PodRelistDuration, m.PodRelistsDropped, m.RuntimeEvents, m.EventLag, m.WakeStream, m.Wakes,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "syncpod_pleg_last_seen_timestamp_seconds", Help: "Unix time of the last successful relist (0 before the first).",
		}, lastSeen),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "syncpod_pleg_subscribers", Help: "Open Watch subscriptions.",
		}, subscribers),
	}
	if err := promreg.Register(reg, cs...); err != nil {
		return nil, err
	}
	for _, t := range []plegv1.PodLifecycleEventType{
		plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_STARTED,
		plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_DIED,
		plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_REMOVED,
		plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_POD_SYNC,
		plegv1.PodLifecycleEventType_POD_LIFECYCLE_EVENT_TYPE_CONTAINER_CHANGED,
	} {
		m.Events.WithLabelValues(eventLabel(t))
	}
	return m, nil
}

// eventLabel is the metric label of an event type: CONTAINER_DIED...
func eventLabel(t plegv1.PodLifecycleEventType) string {
	s := t.String()
	const p = "POD_LIFECYCLE_EVENT_TYPE_"
	if len(s) > len(p) {
		return s[len(p):]
	}
	return s
}
