package evictionplan

import (
	"slices"
	"time"
)

// Signals are the node's measurements: the host's memory, its two
// filesystems and its PIDs. A zero capacity means "not measured": no
// threshold of that signal is met.
type Signals struct {
	MemoryAvailableBytes, MemoryCapacityBytes   int64
	NodeFsAvailableBytes, NodeFsCapacityBytes   int64
	NodeFsInodesFree, NodeFsInodes              int64
	ImageFsAvailableBytes, ImageFsCapacityBytes int64
	ImageFsInodesFree, ImageFsInodes            int64
	// Processes is the number of processes and threads; PIDMax the
	// kernel's limit (kernel.pid_max).
	Processes, PIDMax int64
}

// observation is one signal's available amount and capacity.
type observation struct{ available, capacity int64 }

func (s Signals) observe(sig Signal) (observation, bool) {
	var o observation
	switch sig {
	case MemoryAvailable:
		o = observation{s.MemoryAvailableBytes, s.MemoryCapacityBytes}
	case NodeFsAvailable:
		o = observation{s.NodeFsAvailableBytes, s.NodeFsCapacityBytes}
	case NodeFsInodesFree:
		o = observation{s.NodeFsInodesFree, s.NodeFsInodes}
	case ImageFsAvailable:
		o = observation{s.ImageFsAvailableBytes, s.ImageFsCapacityBytes}
	case ImageFsInodesFree:
		o = observation{s.ImageFsInodesFree, s.ImageFsInodes}
	case PIDAvailable:
		o = observation{s.PIDMax - s.Processes, s.PIDMax}
	}
	return o, o.capacity > 0
}

// Met lists the thresholds of ths that signals s meet, in ths's order
// the available amount is below the threshold's value, or,
// with withMinReclaim, below its value plus its minimum reclaim.
func Met(ths []Threshold, s Signals, withMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ths {
		o, ok := s.observe(t.Signal)
		if !ok {
			continue
		}
		want := t.Value.Of(o.capacity)
		if withMinReclaim {
			want += t.MinReclaim.Of(o.capacity)
		}
		if o.available < want {
			out = append(out, t)
		}
	}
	return out
}

// State is what a round remembers for the next one.
type State struct {
	// Met are the thresholds met at the last round (past their grace
	// period): they hold until their minimum reclaim is recovered.
	Met []Threshold
	// FirstObserved is when each threshold now met was first met.
	FirstObserved map[Threshold]time.Time
	// ConditionsLastObserved is when each pressure condition was last
	// met.
	ConditionsLastObserved map[string]time.Time
	// ConditionSignals are, for each condition held, the signals whose
	// thresholds were met at its last sighting.
	ConditionSignals map[string][]Signal
}

// Round is one round's input.
type Round struct {
	Thresholds []Threshold
	Signals    Signals
	Now        time.Time
	// PressureTransitionPeriod holds a condition this long after its
	// signal recovered (--eviction-pressure-transition-period).
	PressureTransitionPeriod time.Duration
}

// Outcome is what a round decides before any pod is looked at.
type Outcome struct {
	// State is the state to give the next round.
	State State
	// Conditions are the pressure conditions the node reports, sorted.
	Conditions []string
	// Acting are the thresholds met past their grace period, memory
	// first; the first is the one to reclaim (Reclaim).
	Acting []Threshold
}

// Reclaim is the threshold to reclaim for, and whether there is one.
func (o Outcome) Reclaim() (Threshold, bool) {
	if len(o.Acting) == 0 {
		return Threshold{}, false
	}
	return o.Acting[0], true
}

// Observe is the eviction manager's bookkeeping: the
// thresholds met now, with those met before that have not yet recovered
// their minimum reclaim; when each was first met; the pressure conditions
// (held for the transition period after their last sighting); and which
// thresholds have been met for their grace period.
func Observe(prev State, r Round) Outcome {
	met := Met(r.Thresholds, r.Signals, false)
	for _, t := range Met(prev.Met, r.Signals, true) {
		if !slices.Contains(met, t) {
			met = append(met, t)
		}
	}
	next := State{FirstObserved: map[Threshold]time.Time{}, ConditionsLastObserved: map[string]time.Time{},
		ConditionSignals: map[string][]Signal{}}
	for _, t := range met {
		at, ok := prev.FirstObserved[t]
		if !ok {
			at = r.Now
		}
		next.FirstObserved[t] = at
	}
	for c, at := range prev.ConditionsLastObserved {
		next.ConditionsLastObserved[c] = at
	}
	seen := map[string][]Signal{}
	for _, t := range met {
		c := t.Signal.Condition()
		next.ConditionsLastObserved[c] = r.Now
		if !slices.Contains(seen[c], t.Signal) {
			seen[c] = append(seen[c], t.Signal)
		}
	}
	var conds []string
	for c, at := range next.ConditionsLastObserved {
		if r.Now.Sub(at) < r.PressureTransitionPeriod {
			conds = append(conds, c)
			if sigs, ok := seen[c]; ok {
				next.ConditionSignals[c] = sigs
			} else {
				next.ConditionSignals[c] = prev.ConditionSignals[c]
			}
		} else {
			delete(next.ConditionsLastObserved, c)
		}
	}
	slices.Sort(conds)
	var acting []Threshold
	for _, t := range met {
		if r.Now.Sub(next.FirstObserved[t]) >= t.GracePeriod {
			acting = append(acting, t)
		}
	}
	// Memory first, the others in their configured order.
	slices.SortStableFunc(acting, func(a, b Threshold) int {
		return boolFirst(a.Signal == MemoryAvailable, b.Signal == MemoryAvailable)
	})
	next.Met = acting
	return Outcome{State: next, Conditions: conds, Acting: acting}
}

// NodeReclaim is what the node frees before it evicts for a signal (the
// kubelet's node-level reclaim, R-26.5): for disk signals on a node whose
// images share its filesystem, the dead containers and the unused
// images; nothing for memory and PIDs.
func NodeReclaim(s Signal) (deadContainers, unusedImages bool) {
	switch s {
	case NodeFsAvailable, NodeFsInodesFree, ImageFsAvailable, ImageFsInodesFree:
		return true, true
	}
	return false, false
}

// boolFirst orders true before false.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
