package bench

import (
	"context"
	"fmt"
	"time"
)

// Measure names of the side-by-side rows (Versus).
const (
	MeasureStartFileVersus = "desired → started, manifest file, alternating the two agents"
	Measure10FileVersus    = "10 pods at once by file → last started, alternating the two agents"
	MeasureDelete10Versus  = "delete those 10 pods → all sandboxes stopped, alternating the two agents"
)

// Versus measures agents a and b side by side, each on its own runtime
// (the kubelet stops pods it does not know, so the two cannot share one),
// both running all along: single-pod starts by manifest file (o.Runs
// rounds) and 10 pods at once by file with their deletion (max(o.Runs/2,
// 2) rounds), a first in even rounds and b first in odd ones. So a load
// that changes over the run weighs on both alike, where separate phases
// minutes apart measured the machine's load as much as the agents. Each
// agent gets its samples; b's results note the median of the per-round
// ratios b / a. After each agent's turn, whatever its pods left in its
// runtime is removed before the next turn (the kubelet keeps exited
// sandboxes until its garbage collection, which would otherwise run in
// the middle of the other agent's measure).
func Versus(ctx context.Context, a, b Agent, art, brt *Runtime, o Options) (ares, bres []Result, err error) {
	if o.Runs <= 0 {
		o.Runs = 5
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Settle == 0 {
		o.Settle = 5 * time.Second
	}
	tag := randTag()
	// clear removes what an agent left of its pods once they stopped (the
	// kubelet removes sandboxes only at its garbage collection, minutes
	// later), outside any measure: so no agent's teardown runs during the
	// other's next round.
	clear := func(r *run, names []string) error {
		set := make(map[string]bool, len(names))
		for _, n := range r.sandboxNames(names) {
			set[n] = true
		}
		return r.rt.RemoveSandboxes(ctx, set)
	}
	ra := &run{rt: art, a: a, o: o, tag: tag + "a"}
	rb := &run{rt: brt, a: b, o: o, tag: tag + "b"}
	type row struct {
		measure string
		rounds  int
		// one measures an agent once and returns its samples, in the
		// order of measures; an unnamed measure (after a named one) is
		// part of the previous one's split, given in its note.
		one      func(r *run) ([]time.Duration, error)
		measures []string
	}
	rows := []row{
		{MeasureStartFileVersus, o.Runs, func(r *run) ([]time.Duration, error) {
			names := r.names(1)
			t0, started, err := r.up(ctx, names, ViaFile)
			if err != nil {
				return nil, err
			}
			st := started[r.a.SandboxName(names[0])]
			if _, err := r.down(ctx, names, ViaFile); err != nil {
				return nil, err
			}
			// The split: the agent's part before the runtime creates
			// the sandbox, and the rest (the runtime's calls and the
			// agent's steps between them).
			return []time.Duration{st.Started.Sub(t0), st.SandboxCreated.Sub(t0), st.Started.Sub(st.SandboxCreated)}, clear(r, names)
		}, []string{MeasureStartFileVersus, "", ""}},
		{Measure10FileVersus, max(o.Runs/2, 2), func(r *run) ([]time.Duration, error) {
			names := r.names(10)
			t0, started, err := r.up(ctx, names, ViaFile)
			if err != nil {
				return nil, err
			}
			var last time.Time
			for _, st := range started {
				if st.Started.After(last) {
					last = st.Started
				}
			}
			del, err := r.down(ctx, names, ViaFile)
			if err != nil {
				return nil, err
			}
			return []time.Duration{last.Sub(t0), del}, clear(r, names)
		}, []string{Measure10FileVersus, MeasureDelete10Versus}},
	}
	for _, rw := range rows {
		if !selected(o.Only, rw.measure) {
			continue
		}
		if o.Logger != nil {
			o.Logger.Info("measuring side by side", "a", a.Name(), "b", b.Name(), "measure", rw.measure)
		}
		as := make([]Result, len(rw.measures))
		bs := make([]Result, len(rw.measures))
		ratios := make([]Sample, len(rw.measures))
		for k, m := range rw.measures {
			as[k] = Result{Measure: m, Agent: a.Name()}
			bs[k] = Result{Measure: m, Agent: b.Name()}
		}
		for i := range rw.rounds {
			var ad, bd []time.Duration
			for k := range 2 {
				if (k == 0) == (i%2 == 0) {
					if ad, err = rw.one(ra); err != nil {
						return nil, nil, fmt.Errorf("%s: %s: %w", a.Name(), rw.measure, err)
					}
					continue
				}
				if bd, err = rw.one(rb); err != nil {
					return nil, nil, fmt.Errorf("%s: %s: %w", b.Name(), rw.measure, err)
				}
			}
			for k := range rw.measures {
				as[k].Seconds.Add(ad[k])
				bs[k].Seconds.Add(bd[k])
				ratios[k] = append(ratios[k], bd[k].Seconds()/ad[k].Seconds())
			}
		}
		for k := range rw.measures {
			bs[k].Note = fmt.Sprintf("median per-round ratio %s / %s %.2f×", b.Name(), a.Name(), ratios[k].Quantile(0.5))
			if rw.measures[k] == "" {
				continue
			}
			if k+2 < len(rw.measures) && rw.measures[k+1] == "" && rw.measures[k+2] == "" {
				split := func(r []Result) string {
					return fmt.Sprintf("→ sandbox created %s, sandbox created → started %s", fmtDur(r[k+1].Seconds.Quantile(0.5)), fmtDur(r[k+2].Seconds.Quantile(0.5)))
				}
				as[k].Note = "[" + split(as) + "]"
				bs[k].Note = "[" + split(bs) + "; " + bs[k].Note + "]"
				continue
			}
			bs[k].Note = "[" + bs[k].Note + "]"
		}
		for k, m := range rw.measures {
			if m != "" {
				ares, bres = append(ares, as[k]), append(bres, bs[k])
			}
		}
	}
	return ares, bres, nil
}
