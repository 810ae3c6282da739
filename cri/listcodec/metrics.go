package listcodec

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncpod/syncpod/internal/promreg"
)

// DecodeMetrics expose, at scrape time, what a client Codec's decoding
// cache did: syncpod_pleg_cri_list_items_total{decoding="decoded"|"reused"}
// (list items decoded, and items reused unchanged from an earlier answer)
// and syncpod_pleg_cri_list_items_cached (items kept). The names are the
// PLEG's: it is the client that decodes the list answers.
type DecodeMetrics struct {
	decoded, reused prometheus.CounterFunc
	cached          prometheus.GaugeFunc
}

// NewDecodeMetrics creates c's decoding metrics and registers them on reg
// (nil: not registered).
func NewDecodeMetrics(reg prometheus.Registerer, c *Codec) (*DecodeMetrics, error) {
	items := func(decoding string, n func(Stats) int) prometheus.CounterFunc {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "syncpod_pleg_cri_list_items_total",
			Help:        "Sandboxes and containers in the runtime's list answers, by decoding: decoded, or reused (encoded as in an earlier answer, so not decoded again).",
			ConstLabels: prometheus.Labels{"decoding": decoding},
		}, func() float64 { return float64(n(c.Stats())) })
	}
	m := &DecodeMetrics{
		decoded: items("decoded", func(s Stats) int { return s.Decoded }),
		reused:  items("reused", func(s Stats) int { return s.Reused }),
		cached: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "syncpod_pleg_cri_list_items_cached",
			Help: "Decoded sandboxes and containers kept for the next list answers.",
		}, func() float64 { return float64(c.Stats().Kept) }),
	}
	if err := promreg.Register(reg, m.decoded, m.reused, m.cached); err != nil {
		return nil, err
	}
	return m, nil
}
