package crisim

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/promreg"
)

// metrics are the runtime's Prometheus metrics.
type metrics struct {
	containers     *prometheus.GaugeVec
	sandboxes      *prometheus.GaugeVec
	operations     *prometheus.CounterVec
	exits          *prometheus.CounterVec
	pulls          *prometheus.CounterVec
	events         *prometheus.CounterVec
	eventOverflows prometheus.Counter
	attachBehind   prometheus.Counter
}

// newMetrics creates the runtime's metrics and registers them on reg (nil:
// not registered), with eventSubscribers read at scrape time.
func newMetrics(reg prometheus.Registerer, eventSubscribers func() float64) (*metrics, error) {
	m := &metrics{
		containers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncpod_crisim_containers",
			Help: "Containers by state (created, running, exited).",
		}, []string{"state"}),
		sandboxes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "syncpod_crisim_sandboxes",
			Help: "Pod sandboxes by state (ready, notready).",
		}, []string{"state"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_crisim_operations_total",
			Help: "CRI calls handled, by operation and gRPC code.",
		}, []string{"operation", "code"}),
		exits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_crisim_container_exits_total",
			Help: "Container exits by reason (Completed, Error, StartError).",
		}, []string{"reason"}),
		pulls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_crisim_image_pulls_total",
			Help: "Image pulls by result (pulled, failed).",
		}, []string{"result"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "syncpod_crisim_events_total",
			Help: "Container events published, by type.",
		}, []string{"type"}),
		eventOverflows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_crisim_event_subscriber_overflows_total",
			Help: "GetContainerEvents streams closed because the subscriber fell behind.",
		}),
		attachBehind: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "syncpod_crisim_attach_sessions_behind_total",
			Help: "Attach sessions ended because they fell behind the container's output.",
		}),
	}
	for _, s := range []string{"created", "running", "exited"} {
		m.containers.WithLabelValues(s)
	}
	for _, s := range []string{"ready", "notready"} {
		m.sandboxes.WithLabelValues(s)
	}
	subscribers := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "syncpod_crisim_event_subscribers",
		Help: "Open GetContainerEvents streams.",
	}, eventSubscribers)
	if err := promreg.Register(reg, m.containers, m.sandboxes, m.operations, m.exits, m.pulls, m.events, m.eventOverflows, m.attachBehind, subscribers); err != nil {
		return nil, err
	}
	return m, nil
}
