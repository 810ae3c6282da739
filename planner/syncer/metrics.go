package syncer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/promreg"
)

// metrics are the syncer's Prometheus metrics.
type metrics struct {
	syncs          *prometheus.CounterVec
	syncDuration   prometheus.Histogram
	plegReconnects prometheus.Counter
	removed        *prometheus.CounterVec
	orphans        prometheus.Counter
	shutdownStart  prometheus.Gauge
	shutdownEnd    prometheus.Gauge
	evictions      *prometheus.CounterVec
}

// newMetrics creates the syncer's metrics and registers them on reg (nil:
// not registered), with workersKnown read at scrape time.
func newMetrics(reg prometheus.Registerer, workersKnown func() float64) (*metrics, error) {
	m := &metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_planner_pod_syncs_total",
			Help: "Pod syncs by result (ok, error).",
		}, []string{"result"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "syncpod_planner_pod_sync_duration_seconds",
			Help:    "Time of one pod sync: status wait, plan, executor call and status write (the kubelet's pod_worker_duration_seconds).",
			Buckets: prometheus.DefBuckets,
		}),
		plegReconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_planner_pleg_watch_reconnects_total",
			Help: "Times the PLEG Watch stream was lost and reconnected.",
		}),
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_planner_removed_total",
			Help: "Dead containers and sandboxes removed, by kind (container, sandbox).",
		}, []string{"kind"}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_planner_orphaned_pods_killed_total",
			Help: "Runtime pods labelled as syncpod's but not desired, killed by housekeeping (the kubelet's orphaned_runtime_pods_total).",
		}),
		shutdownStart: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "syncpod_planner_graceful_shutdown_start_time_seconds",
			Help: "When the last graceful node shutdown started, Unix seconds (the kubelet's graceful_shutdown_start_time_seconds).",
		}),
		shutdownEnd: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "syncpod_planner_graceful_shutdown_end_time_seconds",
			Help: "When the last graceful node shutdown ended, Unix seconds (the kubelet's graceful_shutdown_end_time_seconds).",
		}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_planner_evictions_total",
			Help: "Pods evicted under node pressure, by eviction signal (the kubelet's evictions).",
		}, []string{"signal"}),
	}
	m.syncs.WithLabelValues("ok")
	m.syncs.WithLabelValues("error")
	m.removed.WithLabelValues("container")
	m.removed.WithLabelValues("sandbox")
	workers := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "syncpod_planner_pod_workers",
		Help: "Pods with a sync worker (desired pods being kept).",
	}, workersKnown)
	if err := promreg.Register(reg, m.syncs, m.syncDuration, m.plegReconnects, m.removed, m.orphans, m.shutdownStart, m.shutdownEnd, m.evictions, workers); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) observeSync(_ string, took time.Duration, err error) {
	m.syncDuration.Observe(took.Seconds())
	if err != nil {
		m.syncs.WithLabelValues("error").Inc()
		return
	}
	m.syncs.WithLabelValues("ok").Inc()
}
