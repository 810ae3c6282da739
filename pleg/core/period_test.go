package core

import (
	"testing"
	"time"
)

// TestRelistPeriod pins the adaptive relist period: the median
// recent cost over the share, rounded up to the step, between the bounds.
func TestRelistPeriod(t *testing.T) {
	ms := time.Millisecond
	us := time.Microsecond
	def := DefaultRelistBudget
	for _, tc := range []struct {
		name    string
		costs   []time.Duration
		failing bool
		b       RelistBudget
		want    time.Duration
	}{
		{"no relist yet: the kubelet's period", nil, false, def, time.Second},
		{"cheap relists: the floor", []time.Duration{200 * us, 300 * us}, false, def, 100 * ms},
		{"1 ms relists at 1 %: 100 ms", []time.Duration{ms, ms, ms}, false, def, 100 * ms},
		{"1.5 ms relists: 150 ms", []time.Duration{1500 * us}, false, def, 150 * ms},
		{"rounded up to the step", []time.Duration{1234 * us}, false, def, 130 * ms},
		{"on a step: kept", []time.Duration{1200 * us}, false, def, 120 * ms},
		{"two relists: their mean, not the last", []time.Duration{ms, 3 * ms}, false, def, 200 * ms},
		{"a burst's few slow lists among cheap ones do not move it", []time.Duration{ms, 21 * ms, ms, ms, 40 * ms, ms, ms, ms}, false, def, 100 * ms},
		{"most relists costly: it follows them", []time.Duration{ms, 3 * ms, 3 * ms, 3 * ms, ms}, false, def, 300 * ms},
		{"the middle one of an odd count", []time.Duration{ms, 2 * ms, 5 * ms}, false, def, 200 * ms},
		{"costly relists: the kubelet's 1 s", []time.Duration{15 * ms}, false, def, time.Second},
		{"very costly relists: still 1 s", []time.Duration{time.Hour}, false, def, time.Second},
		{"negative costs count as nothing", []time.Duration{-5 * ms, 2 * ms}, false, def, 100 * ms},
		{"a larger share: shorter periods", []time.Duration{4 * ms}, false, RelistBudget{Share: 0.1, Min: 10 * ms, Max: time.Second}, 40 * ms},
		{"no step: exact", []time.Duration{1234 * us}, false, RelistBudget{Share: 0.01, Min: 100 * ms, Max: time.Second}, 123400 * us},
		{"the last lists failed: the kubelet's 1 s", []time.Duration{200 * us}, true, def, time.Second},
		{"no share: the maximum", []time.Duration{ms}, false, RelistBudget{Min: 100 * ms, Max: time.Second}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RelistPeriod(tc.costs, tc.failing, tc.b); got != tc.want {
				t.Errorf("RelistPeriod(%v) = %v, want %v", tc.costs, got, tc.want)
			}
		})
	}
}
