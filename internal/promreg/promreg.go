package promreg

import "github.com/prometheus/client_golang/prometheus"

// Register registers cs on reg in order and returns the first error (a
// name registered twice, say), leaving the collectors after it
// unregistered. A nil reg registers nothing: the collectors still count,
// for components run without a /metrics endpoint and for tests that read
// them directly.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
