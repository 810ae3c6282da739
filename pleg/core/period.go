package core

import (
	"slices"
	"time"
)

// RelistBudget is what the adaptive relist period is chosen
// from: the share of one core relisting may use, and the bounds of the
// period.
type RelistBudget struct {
	// Share of one core the relists may use on average (0.01: 1 %).
	Share float64
	// Min and Max bound the period.
	Min, Max time.Duration
	// Step: the period is rounded up to a multiple of it, so relists whose
	// costs differ by noise keep one period (zero: no rounding).
	Step time.Duration
}

// DefaultRelistBudget is the budget of a PLEG relisting at the default
// period: 1 % of a core, between 100 ms and the kubelet's 1 s,
// in steps of 10 ms.
var DefaultRelistBudget = RelistBudget{Share: 0.01, Min: 100 * time.Millisecond, Max: time.Second, Step: 10 * time.Millisecond}

// RelistPeriod is the relist period that keeps relisting within budget
// the median of the recent relists' costs divided by the share
// (a relist that costs 1 ms every 100 ms uses 1 % of a core), rounded up
// to the step and kept between the bounds. costs are what each recent
// relist cost the node for being periodic: the PLEG loop counts the wall
// time of its lists and diff plus the CPU time the process spent
// meanwhile, the wall time standing for the runtime's work answering the
// lists, which the PLEG waits for (on containerd 1.6 its CPU per list was
// 0.75 to 0.8 of the wall time); inspections are left out, as each change
// costs one whatever the period. The median, not the mean: the few slow
// lists of a runtime busy starting a burst of containers are not what
// relisting costs, and with the mean they held the period at a second for
// the next several relists, so deaths just after a burst were seen late.
// No costs, or a share that is not positive, give Max; so does a last
// relist whose lists failed (failing): a runtime that does not answer is
// asked again no more often than the kubelet asks, and its failures are
// not logged ten times a second.
func RelistPeriod(costs []time.Duration, failing bool, b RelistBudget) time.Duration {
	if len(costs) == 0 || b.Share <= 0 || failing {
		return b.Max
	}
	sorted := make([]time.Duration, len(costs))
	for i, c := range costs {
		sorted[i] = max(c, 0)
	}
	slices.Sort(sorted)
	n := len(sorted)
	median := float64(sorted[n/2])
	if n%2 == 0 {
		median = (float64(sorted[n/2-1]) + float64(sorted[n/2])) / 2
	}
	want := median / b.Share
	if want >= float64(b.Max) {
		return b.Max
	}
	p := time.Duration(want)
	if b.Step > 0 && p%b.Step != 0 {
		p += b.Step - p%b.Step
	}
	return min(max(p, b.Min), b.Max)
}
