package store

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/promreg"
)

// Metrics are the store's watch metrics, read from the store at scrape
// time: syncpod_planner_watch_resyncs_total (subscribers that fell behind
// and were sent RESYNC) and syncpod_planner_watchers (open subscriptions).
type Metrics struct {
	resyncs  prometheus.CounterFunc
	watchers prometheus.GaugeFunc
}

// NewMetrics creates the watch metrics of s and registers them on reg
// (nil: not registered).
func NewMetrics(reg prometheus.Registerer, s *Store) (*Metrics, error) {
	m := &Metrics{
		resyncs: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "syncpod_planner_watch_resyncs_total",
			Help: "WatchPods subscribers that fell behind and were sent RESYNC instead of the changes they missed.",
		}, func() float64 { return float64(s.Stats().WatchResyncs) }),
		watchers: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "syncpod_planner_watchers",
			Help: "Open WatchPods subscriptions.",
		}, func() float64 { return float64(s.Stats().Watchers) }),
	}
	if err := promreg.Register(reg, m.resyncs, m.watchers); err != nil {
		return nil, err
	}
	return m, nil
}
