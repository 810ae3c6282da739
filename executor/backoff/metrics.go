package backoff

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/promreg"
)

// Metrics are the back-off store's gauges, read from the store at scrape
// time: syncpod_executor_backoff_entries (stored entries) and
// syncpod_executor_containers_in_backoff (entries whose start is being
// held back right now). A read error reports -1.
type Metrics struct {
	entries   prometheus.GaugeFunc
	inBackoff prometheus.GaugeFunc
}

// NewMetrics creates the gauges of s and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer, s *Store) (*Metrics, error) {
	read := func(pick func(entries, in int) int) func() float64 {
		return func() float64 {
			e, in, err := s.Stats()
			if err != nil {
				s.cfg.Logger.Warn("back-off metrics read failed", "err", err)
				return -1
			}
			return float64(pick(e, in))
		}
	}
	m := &Metrics{
		entries: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "syncpod", Subsystem: "executor", Name: "backoff_entries",
			Help: "Crash-loop back-off entries in the store.",
		}, read(func(e, _ int) int { return e })),
		inBackoff: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "syncpod", Subsystem: "executor", Name: "containers_in_backoff",
			Help: "Containers whose restart is currently held back by crash-loop back-off.",
		}, read(func(_, in int) int { return in })),
	}
	if err := promreg.Register(reg, m.entries, m.inBackoff); err != nil {
		return nil, err
	}
	return m, nil
}
