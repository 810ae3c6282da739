package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Measure names of the side-by-side rows (Versus).
const (
	MeasureStartFileVersus = "desired → started, manifest file, alternating the two agents"
	Measure10FileVersus    = "10 pods at once by file → last started, alternating the two agents"
	MeasureDelete10Versus  = "delete those 10 pods → all sandboxes stopped, alternating the two agents"
	// MeasureIdleVersus: both agents idle at once with 10 pods each, their
	// processes' CPU over the same window (o.Idle), so that the machine's
	// load weighs on both alike.
	MeasureIdleVersus = "idle, 10 pods each, both agents at once: CPU"
)

// Side is one agent of a side-by-side run: the agent, its own runtime, and
// its processes (PIDs; none: its CPU is not measured).
type Side struct {
	Agent   Agent
	Runtime *Runtime
	PIDs    []int
}

// Versus measures agents a and b side by side, each on its own runtime
// (the kubelet stops pods it does not know, so the two cannot share one),
// both running all along: single-pod starts by manifest file (o.Runs
// rounds) and 10 pods at once by file with their deletion (max(o.Runs/2,
// 2) rounds), a first in even rounds and b first in odd ones. So a load
// that changes over the run weighs on both alike, where separate phases
// minutes apart measured the machine's load as much as the agents. Each
// agent gets its samples; b's results note the median of the per-round
// ratios b / a; when a row fails, the rows done before it are returned
// with the error. Where a side names its processes, the CPU they used from
// the pods being asked for until they all ran is noted too (what the
// agent took from the runtime on the same cores). After each agent's
// turn, whatever its pods left in its runtime is removed before the next
// turn (the kubelet keeps exited sandboxes until its garbage collection,
// which would otherwise run in the middle of the other agent's measure).
func Versus(ctx context.Context, sa, sb Side, o Options) (ares, bres []Result, err error) {
	a, b := sa.Agent, sb.Agent
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
		return r.rt.RemoveSandboxes(ctx, setOf(r.sandboxNames(names)))
	}
	oa, ob := o, o
	oa.PIDs, ob.PIDs = sa.PIDs, sb.PIDs
	ra := &run{rt: sa.Runtime, a: a, o: oa, tag: tag + "a"}
	rb := &run{rt: sb.Runtime, a: b, o: ob, tag: tag + "b"}
	type row struct {
		measure string
		rounds  int
		// one measures an agent once and returns its samples, in the
		// order of measures, and the CPU its processes used to start the
		// pods (negative: not measured); an unnamed measure (after a
		// named one) is part of the previous one's split, given in its
		// note.
		one      func(r *run) ([]time.Duration, time.Duration, error)
		measures []string
	}
	rows := []row{
		{MeasureStartFileVersus, o.Runs, func(r *run) ([]time.Duration, time.Duration, error) {
			names := r.names(1)
			t0, started, cpu, err := r.upCPU(ctx, names, ViaFile)
			if err != nil {
				return nil, 0, err
			}
			st := started[r.a.SandboxName(names[0])]
			if _, err := r.down(ctx, names, ViaFile); err != nil {
				return nil, 0, err
			}
			// The split: the agent's part before the runtime creates
			// the sandbox, and the rest (the runtime's calls and the
			// agent's steps between them).
			return []time.Duration{st.Started.Sub(t0), st.SandboxCreated.Sub(t0), st.Started.Sub(st.SandboxCreated)}, cpu, clear(r, names)
		}, []string{MeasureStartFileVersus, "", ""}},
		{Measure10FileVersus, max(o.Runs/2, 2), func(r *run) ([]time.Duration, time.Duration, error) {
			names := r.names(10)
			t0, started, cpu, err := r.upCPU(ctx, names, ViaFile)
			if err != nil {
				return nil, 0, err
			}
			del, err := r.down(ctx, names, ViaFile)
			if err != nil {
				return nil, 0, err
			}
			return []time.Duration{lastStarted(started).Sub(t0), del}, cpu, clear(r, names)
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
		var acpu, bcpu Sample
		for k, m := range rw.measures {
			as[k] = Result{Measure: m, Agent: a.Name()}
			bs[k] = Result{Measure: m, Agent: b.Name()}
		}
		for i := range rw.rounds {
			var ad, bd []time.Duration
			var ac, bc time.Duration
			for k := range 2 {
				if (k == 0) == (i%2 == 0) {
					if ad, ac, err = rw.one(ra); err != nil {
						return ares, bres, fmt.Errorf("%s: %s: %w", a.Name(), rw.measure, err)
					}
					continue
				}
				if bd, bc, err = rw.one(rb); err != nil {
					return ares, bres, fmt.Errorf("%s: %s: %w", b.Name(), rw.measure, err)
				}
			}
			if ac >= 0 {
				acpu.Add(ac)
			}
			if bc >= 0 {
				bcpu.Add(bc)
			}
			for k := range rw.measures {
				as[k].Seconds.Add(ad[k])
				bs[k].Seconds.Add(bd[k])
				ratios[k] = append(ratios[k], bd[k].Seconds()/ad[k].Seconds())
			}
		}
		for k := range rw.measures {
			if rw.measures[k] == "" {
				continue
			}
			var an, bn []string
			if k+2 < len(rw.measures) && rw.measures[k+1] == "" && rw.measures[k+2] == "" {
				split := func(r []Result) string {
					return fmt.Sprintf("→ sandbox created %s, sandbox created → started %s", FormatDuration(r[k+1].Seconds.Quantile(0.5)), FormatDuration(r[k+2].Seconds.Quantile(0.5)))
				}
				an, bn = append(an, split(as)), append(bn, split(bs))
				as[k].Split = &Split{ToSandbox: as[k+1].Seconds, Runtime: as[k+2].Seconds}
				bs[k].Split = &Split{ToSandbox: bs[k+1].Seconds, Runtime: bs[k+2].Seconds}
			}
			if k == 0 {
				if len(acpu) > 0 {
					an = append(an, "its CPU from asked to started "+FormatDuration(acpu.Quantile(0.5)))
				}
				if len(bcpu) > 0 {
					bn = append(bn, "its CPU from asked to started "+FormatDuration(bcpu.Quantile(0.5)))
				}
			}
			bs[k].PairedWith, bs[k].PerRound = a.Name(), ratios[k].Quantile(0.5)
			ratio := fmt.Sprintf("median per-round ratio %s / %s %.2f×", b.Name(), a.Name(), bs[k].PerRound)
			if lo, hi, ok := ratios[k].MedianCI(0.95); ok {
				bs[k].PerRoundCI = &[2]float64{lo, hi}
				ratio += fmt.Sprintf(" (95 %% CI %.2f–%.2f×)", lo, hi)
			}
			bn = append(bn, ratio)
			if len(an) > 0 {
				as[k].Note = "[" + strings.Join(an, "; ") + "]"
			}
			bs[k].Note = "[" + strings.Join(bn, "; ") + "]"
		}
		for k, m := range rw.measures {
			if m != "" {
				ares, bres = append(ares, as[k]), append(bres, bs[k])
			}
		}
	}
	if o.Idle > 0 && len(sa.PIDs) > 0 && len(sb.PIDs) > 0 && selected(o.Only, MeasureIdleVersus) {
		if o.Logger != nil {
			o.Logger.Info("measuring side by side", "a", a.Name(), "b", b.Name(), "measure", MeasureIdleVersus)
		}
		ai, bi, err := idleBoth(ctx, ra, rb, o.Idle)
		if err != nil {
			return ares, bres, fmt.Errorf("%s: %w", MeasureIdleVersus, err)
		}
		ares, bres = append(ares, ai), append(bres, bi)
	}
	return ares, bres, nil
}

// idleBoth runs 10 pods on each side, lets their start settle, and samples
// both sides' processes' CPU time over the same window of length idle;
// then it removes the pods.
func idleBoth(ctx context.Context, ra, rb *run, idle time.Duration) (Result, Result, error) {
	runs := []*run{ra, rb}
	names := [][]string{ra.names(10), rb.names(10)}
	for i, r := range runs {
		if _, _, err := r.up(ctx, names[i], ViaFile); err != nil {
			return Result{}, Result{}, fmt.Errorf("%s: %w", r.a.Name(), err)
		}
	}
	// Let the start-up work settle first.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return Result{}, Result{}, err
	}
	var before, after [2]int64
	var err error
	for i, r := range runs {
		if before[i], err = cpuTicks(r.o.PIDs); err != nil {
			return Result{}, Result{}, err
		}
	}
	t0 := time.Now()
	if err := sleep(ctx, idle); err != nil {
		return Result{}, Result{}, err
	}
	for i, r := range runs {
		if after[i], err = cpuTicks(r.o.PIDs); err != nil {
			return Result{}, Result{}, err
		}
	}
	window := time.Since(t0).Seconds()
	var res [2]Result
	for i, r := range runs {
		res[i] = Result{Measure: MeasureIdleVersus, Agent: r.a.Name(), Unit: "% of a core",
			Value: float64(after[i]-before[i]) / clkTck / window * 100}
		if _, err := r.down(ctx, names[i], ViaFile); err != nil {
			return Result{}, Result{}, fmt.Errorf("%s: %w", r.a.Name(), err)
		}
		if err := r.rt.RemoveSandboxes(ctx, setOf(r.sandboxNames(names[i]))); err != nil {
			return Result{}, Result{}, err
		}
	}
	return res[0], res[1], nil
}

// setOf is names as a set.
func setOf(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// upCPU is up, and the CPU time the agent's processes (o.PIDs) used from
// just before the pods were asked for until all of them ran; negative when
// the agent names no processes. The kernel counts it in clock ticks
// (10 ms).
func (s *run) upCPU(ctx context.Context, names []string, via Via) (time.Time, map[string]Started, time.Duration, error) {
	if len(s.o.PIDs) == 0 {
		t0, started, err := s.up(ctx, names, via)
		return t0, started, -1, err
	}
	before, err := cpuTicks(s.o.PIDs)
	if err != nil {
		return time.Time{}, nil, 0, err
	}
	t0, started, err := s.up(ctx, names, via)
	if err != nil {
		return t0, started, 0, err
	}
	after, err := cpuTicks(s.o.PIDs)
	if err != nil {
		return t0, started, 0, err
	}
	return t0, started, time.Duration(after-before) * (time.Second / clkTck), nil
}
