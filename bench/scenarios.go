package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options shape a run.
type Options struct {
	// Runs is how often the single-pod start is measured (default 5).
	Runs int
	// Kills is how many pods get their container killed once (default 10).
	Kills int
	// Big runs the 50-pod rows.
	Big bool
	// Idle is how long idle cost is sampled (0: not measured).
	Idle time.Duration
	// PIDs are the agent's processes, for the idle cost.
	PIDs []int
	// Only, when non-empty, runs only these rows (by a prefix of the
	// measure name, e.g. "desired").
	Only []string
	// Timeout bounds each wait (default 2 min).
	Timeout time.Duration
	// Settle bounds the wait after each deletion for the agent to remove
	// the pods' sandboxes, so no measurement overlaps the previous one's
	// teardown (default 5 s; negative: no wait).
	Settle time.Duration
	// Floor, when set, is the raw-CRI agent on the same runtime: the
	// paired row alternates its single-pod starts with the agent's, so
	// both see the same load (agents other than "cri" only).
	Floor *RawCRI
	// Scale, when positive, runs the many-pods rows with that many pods
	// (on crisim in simulated mode; see scale), reading the PLEG's
	// metrics at PLEGMetrics and pulling Image first.
	Scale       int
	PLEGMetrics string
	Image       string
	// Logger receives progress.
	Logger *slog.Logger
}

// Run measures agent a on runtime rt: every row of Measures the agent
// offers a way in for.
func Run(ctx context.Context, rt *Runtime, a Agent, o Options) ([]Result, error) {
	if o.Runs <= 0 {
		o.Runs = 5
	}
	if o.Kills <= 0 {
		o.Kills = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Settle == 0 {
		o.Settle = 5 * time.Second
	}
	s := &run{rt: rt, a: a, o: o, tag: randTag()}
	var out []Result
	offers := func(v Via) bool {
		for _, w := range a.Vias() {
			if w == v {
				return true
			}
		}
		return false
	}
	// A row runs when any of its measures is selected; it may measure
	// more than one (the paired rounds of 10 pods time their start and
	// their deletion).
	type row struct {
		measures []string
		fn       func(context.Context) ([]Result, error)
	}
	var rows []row
	add := func(measure string, fn func(context.Context) (Result, error)) {
		rows = append(rows, row{[]string{measure}, func(ctx context.Context) ([]Result, error) {
			res, err := fn(ctx)
			return []Result{res}, err
		}})
	}
	for _, v := range []Via{ViaAPI, ViaFile} {
		if !offers(v) {
			continue
		}
		m := map[Via][3]string{ViaAPI: {MeasureStartAPI, Measure10API, Measure50API}, ViaFile: {MeasureStartFile, Measure10File, Measure50File}}[v]
		add(m[0], func(ctx context.Context) (Result, error) { return s.single(ctx, m[0], v) })
		add(m[1], func(ctx context.Context) (Result, error) { return s.burst(ctx, m[1], v, 10) })
		if o.Big {
			add(m[2], func(ctx context.Context) (Result, error) { return s.burst(ctx, m[2], v, 50) })
		}
	}
	if offers(ViaCLI) {
		add(MeasureStartCLI, func(ctx context.Context) (Result, error) { return s.single(ctx, MeasureStartCLI, ViaCLI) })
	}
	if a.Name() != "cri" {
		via := a.Vias()[0]
		if o.Floor != nil {
			add(MeasureStartPaired, func(ctx context.Context) (Result, error) { return s.paired(ctx, MeasureStartPaired, via) })
			if via != ViaFile && offers(ViaFile) {
				add(MeasureStartFilePaired, func(ctx context.Context) (Result, error) { return s.paired(ctx, MeasureStartFilePaired, ViaFile) })
			}
		}
		add(MeasureDelete10, func(ctx context.Context) (Result, error) { return s.delete(ctx, via, 10) })
		if o.Floor != nil {
			rows = append(rows, row{[]string{Measure10Paired, MeasureDeletePaired}, func(ctx context.Context) ([]Result, error) {
				burst, del, err := s.pairedTen(ctx, via, 10)
				return []Result{burst, del}, err
			}})
		}
		add(MeasureReplacement, func(ctx context.Context) (Result, error) { return s.replacement(ctx, via) })
		// Its floor is an evented agent: on a runtime without CRI events
		// (containerd 1.6) it would never replace anything.
		if o.Floor != nil && selected(o.Only, MeasureReplacementPaired) {
			if rt.OffersEvents(ctx) {
				add(MeasureReplacementPaired, func(ctx context.Context) (Result, error) { return s.pairedReplacement(ctx, via) })
			} else {
				o.Logger.Info("not measured: its raw-CRI floor follows the runtime's CRI events, which this runtime does not offer", "measure", MeasureReplacementPaired)
			}
		}
		if o.Idle > 0 && len(o.PIDs) > 0 {
			add(MeasureIdleCPU, func(ctx context.Context) (Result, error) { return s.idle(ctx, via) })
		}
	}
	if o.Scale > 0 && a.Name() != "cri" && selected(o.Only, MeasureScaleStart) {
		o.Logger.Info("measuring", "agent", a.Name(), "measure", MeasureScaleStart, "pods", o.Scale)
		res, err := s.scale(ctx, a.Vias()[0])
		out = append(out, res...)
		if err != nil {
			return out, fmt.Errorf("%s: %s: %w", a.Name(), MeasureScaleStart, err)
		}
		return out, nil
	}
	for _, r := range rows {
		if !slices.ContainsFunc(r.measures, func(m string) bool { return selected(o.Only, m) }) {
			continue
		}
		o.Logger.Info("measuring", "agent", a.Name(), "measure", strings.Join(r.measures, "; "))
		results, err := r.fn(ctx)
		if err != nil {
			return out, fmt.Errorf("%s: %s: %w", a.Name(), strings.Join(r.measures, "; "), err)
		}
		for _, res := range results {
			if res.Measure == MeasureIdleCPU {
				rss := res
				rss.Measure, rss.Value, rss.Unit = MeasureIdleRSS, res.Seconds.Quantile(0), "MB"
				res.Seconds, res.Note = nil, ""
				out = append(out, res, rss)
				continue
			}
			o.Logger.Info("measured", "agent", a.Name(), "measure", res.Measure, "result", res.cell())
			out = append(out, res)
		}
	}
	return out, nil
}

func selected(only []string, m string) bool {
	if len(only) == 0 {
		return true
	}
	for _, p := range only {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

type run struct {
	rt  *Runtime
	a   Agent
	o   Options
	tag string
	n   int
}

func randTag() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// names returns n fresh pod names.
func (s *run) names(n int) []string {
	out := make([]string, n)
	for i := range out {
		s.n++
		out[i] = fmt.Sprintf("bench-%s-%d", s.tag, s.n)
	}
	return out
}

func (s *run) sandboxNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = s.a.SandboxName(n)
	}
	return out
}

// up asks for pods and waits until they run; it returns their start
// times, counted from just before asking. The runtime is watched while the
// agent is asked, not after: an agent whose Apply returns only once its
// pods run (the raw-CRI floor) so bears the same looks at the runtime
// (every PollInterval where it offers no events) as the agents that return
// at once and work after. (A floor whose calls ran with nobody listing
// the runtime would not compare with the kubelet's and syncpod's, which
// run under a list every 10 ms on containerd 1.6.)
func (s *run) up(ctx context.Context, names []string, via Via) (time.Time, map[string]Started, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	waitCtx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	t0 := time.Now()
	applied := make(chan error, 1)
	go func() {
		err := s.a.Apply(ctx, names, via)
		if err != nil {
			stopWait()
		}
		applied <- err
	}()
	started, err := s.rt.WaitStarted(waitCtx, s.sandboxNames(names), nil)
	if aerr := <-applied; aerr != nil {
		return t0, nil, aerr
	}
	return t0, started, err
}

// down removes pods and waits until their sandboxes stopped; it returns
// when that was seen, counted from just before asking.
func (s *run) down(ctx context.Context, names []string, via Via) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	t0 := time.Now()
	if err := s.a.Delete(ctx, names, via); err != nil {
		return 0, err
	}
	at, err := s.rt.WaitStopped(ctx, s.sandboxNames(names))
	if err != nil {
		return 0, err
	}
	if s.o.Settle > 0 {
		// Not part of the measure: the runtime settles before the next.
		if _, err := s.rt.WaitGone(ctx, s.sandboxNames(names), s.o.Settle); err != nil {
			return 0, err
		}
	}
	return at.Sub(t0), nil
}

func (s *run) single(ctx context.Context, measure string, via Via) (res Result, err error) {
	res = Result{Measure: measure, Agent: s.a.Name()}
	var toSandbox Sample
	defer func() {
		res.Note = fmt.Sprintf("[→ sandbox created %s]", FormatDuration(toSandbox.Quantile(0.5)))
	}()
	for range s.o.Runs {
		names := s.names(1)
		var t0 time.Time
		var started map[string]Started
		t0, started, err = s.up(ctx, names, via)
		if err != nil {
			return res, err
		}
		st := started[s.a.SandboxName(names[0])]
		res.Seconds.Add(st.Started.Sub(t0))
		toSandbox.Add(st.SandboxCreated.Sub(t0))
		if _, err := s.down(ctx, names, via); err != nil {
			return res, err
		}
	}
	return res, nil
}

// paired alternates single-pod starts of the floor and of the agent (its
// pod given through via) on the same runtime (floor first in even rounds,
// the agent first in odd ones), so a load that changes over the run
// weighs on both alike. The result is the agent's, as measure; the note
// gives the floor's median, the median of the per-pair ratios and where
// each spent its time.
func (s *run) paired(ctx context.Context, measure string, via Via) (Result, error) {
	res := Result{Measure: measure, Agent: s.a.Name()}
	floor := &run{rt: s.rt, a: s.o.Floor, o: s.o, tag: s.tag + "f"}
	var floorS, ratios, toSandbox, floorToSandbox Sample
	one := func(r *run, v Via) (Started, time.Duration, error) {
		names := r.names(1)
		t0, started, err := r.up(ctx, names, v)
		if err != nil {
			return Started{}, 0, err
		}
		st := started[r.a.SandboxName(names[0])]
		if _, err := r.down(ctx, names, v); err != nil {
			return Started{}, 0, err
		}
		st.SandboxCreated = time.Time{}.Add(st.SandboxCreated.Sub(t0))
		return st, st.Started.Sub(t0), nil
	}
	for i := range s.o.Runs {
		var agentD, floorD time.Duration
		for k := range 2 {
			if (k == 0) == (i%2 == 0) {
				st, d, err := one(floor, ViaAPI)
				if err != nil {
					return res, fmt.Errorf("floor: %w", err)
				}
				floorD = d
				floorS.Add(d)
				floorToSandbox.Add(st.SandboxCreated.Sub(time.Time{}))
				continue
			}
			st, d, err := one(s, via)
			if err != nil {
				return res, err
			}
			agentD = d
			res.Seconds.Add(d)
			toSandbox.Add(st.SandboxCreated.Sub(time.Time{}))
		}
		ratios = append(ratios, agentD.Seconds()/floorD.Seconds())
	}
	res.setFloor(floorS, ratios)
	res.Note = fmt.Sprintf("[%s; raw CRI alternating: %s, → sandbox created %s; %s: → sandbox created %s; %s; raw CRI calls: %s]",
		via, FormatDuration(floorS.Quantile(0.5)), FormatDuration(floorToSandbox.Quantile(0.5)), s.a.Name(), FormatDuration(toSandbox.Quantile(0.5)),
		pairRatio(ratios), s.o.Floor.CallSummary())
	return res, nil
}

// pairedTen alternates rounds of the agent and of the floor on the same
// runtime, floor first in even rounds, Runs/2 rounds (at least 2). A
// round starts n pods at once and then deletes them (the floor by
// StopGracefully: the same grace period, containers in parallel, then
// the sandboxes). It returns the agent's starts (n pods at once → last
// started) and deletions (→ all sandboxes stopped), each noting the
// floor's median and the median per-pair ratio.
func (s *run) pairedTen(ctx context.Context, via Via, n int) (burst, del Result, err error) {
	burst = Result{Measure: Measure10Paired, Agent: s.a.Name()}
	del = Result{Measure: MeasureDeletePaired, Agent: s.a.Name()}
	floor := &run{rt: s.rt, a: s.o.Floor, o: s.o, tag: s.tag + "d"}
	var floorUp, floorDown, upRatios, downRatios Sample
	defer func() {
		burst.setFloor(floorUp, upRatios)
		del.setFloor(floorDown, downRatios)
		burst.Note = fmt.Sprintf("[%s; raw CRI alternating: %s; %s]",
			via, FormatDuration(floorUp.Quantile(0.5)), pairRatio(upRatios))
		del.Note = fmt.Sprintf("[%s; raw CRI alternating (StopContainer with the %d s grace in parallel, then StopPodSandbox): %s; %s]",
			via, GracePeriod, FormatDuration(floorDown.Quantile(0.5)), pairRatio(downRatios))
	}()
	stopFloor := func(ctx context.Context, names []string) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
		defer cancel()
		t0 := time.Now()
		if err := s.o.Floor.StopGracefully(ctx, names); err != nil {
			return 0, err
		}
		at, err := s.rt.WaitStopped(ctx, names)
		if err != nil {
			return 0, err
		}
		if err := s.o.Floor.Delete(ctx, names, ViaAPI); err != nil {
			return 0, err
		}
		return at.Sub(t0), nil
	}
	for i := range max(s.o.Runs/2, 2) {
		var agentUp, agentDown, fUp, fDown time.Duration
		for k := range 2 {
			if (k == 0) == (i%2 == 0) {
				names := floor.names(n)
				t0, started, err := floor.up(ctx, names, ViaAPI)
				if err != nil {
					return burst, del, fmt.Errorf("floor: %w", err)
				}
				fUp = lastStarted(started).Sub(t0)
				if fDown, err = stopFloor(ctx, names); err != nil {
					return burst, del, fmt.Errorf("floor: %w", err)
				}
				floorUp.Add(fUp)
				floorDown.Add(fDown)
				continue
			}
			names := s.names(n)
			t0, started, err := s.up(ctx, names, via)
			if err != nil {
				return burst, del, err
			}
			agentUp = lastStarted(started).Sub(t0)
			if agentDown, err = s.down(ctx, names, via); err != nil {
				return burst, del, err
			}
			burst.Seconds.Add(agentUp)
			del.Seconds.Add(agentDown)
		}
		upRatios = append(upRatios, agentUp.Seconds()/fUp.Seconds())
		downRatios = append(downRatios, agentDown.Seconds()/fDown.Seconds())
	}
	return burst, del, nil
}

// setFloor records the floor's samples and the median of the per-pair
// ratios agent / floor on r (nothing when no pair completed).
func (r *Result) setFloor(floor, ratios Sample) {
	if len(floor) == 0 || len(ratios) == 0 {
		return
	}
	r.Floor, r.FloorRatio = floor, ratios.Quantile(0.5)
}

// pairRatio is the note of a row paired with the floor: the median of
// the per-pair ratios agent / floor, with its 95 % confidence interval
// (MedianCI) when there were pairs enough for one.
func pairRatio(ratios Sample) string {
	out := fmt.Sprintf("median per-pair ratio %.2f×", ratios.Quantile(0.5))
	if lo, hi, ok := ratios.MedianCI(0.95); ok {
		out += fmt.Sprintf(" (95 %% CI %.2f–%.2f×)", lo, hi)
	}
	return out
}

// lastStarted is the latest start among started.
func lastStarted(started map[string]Started) time.Time {
	var last time.Time
	for _, st := range started {
		if st.Started.After(last) {
			last = st.Started
		}
	}
	return last
}

func (s *run) burst(ctx context.Context, measure string, via Via, n int) (Result, error) {
	res := Result{Measure: measure, Agent: s.a.Name()}
	names := s.names(n)
	t0, started, err := s.up(ctx, names, via)
	if err != nil {
		return res, err
	}
	res.Seconds.Add(lastStarted(started).Sub(t0))
	_, err = s.down(ctx, names, via)
	return res, err
}

func (s *run) delete(ctx context.Context, via Via, n int) (Result, error) {
	res := Result{Measure: MeasureDelete10, Agent: s.a.Name()}
	names := s.names(n)
	if _, _, err := s.up(ctx, names, via); err != nil {
		return res, err
	}
	took, err := s.down(ctx, names, via)
	res.Seconds.Add(took)
	return res, err
}

// replacement kills each pod's container once (a pod of its own for every
// kill, so no crash-loop back-off applies) and measures from the old
// container's finish to the new one's start. The note splits it where
// the runtime's timestamps allow: old finished → new created (the runtime
// handling the exit, its event or the agent's relist, the agent's sync),
// and new created → started (the runtime's start); on a runtime with CRI
// events, also old finished → the runtime's CONTAINER_STOPPED event.
func (s *run) replacement(ctx context.Context, via Via) (Result, error) {
	res := Result{Measure: MeasureReplacement, Agent: s.a.Name()}
	names := s.names(s.o.Kills)
	_, first, err := s.up(ctx, names, via)
	if err != nil {
		return res, err
	}
	evctx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	stops := s.rt.FollowStops(evctx)
	var split replaceSplit
	for _, n := range names {
		d, err := s.killOne(ctx, n, first, stops, &split)
		if err != nil {
			return res, err
		}
		res.Seconds.Add(d)
	}
	res.Note = "[" + split.String() + "]"
	_, err = s.down(ctx, names, via)
	return res, err
}

// replaceSplit is where replacements spent their time, by the runtime's
// timestamps.
type replaceSplit struct{ toCreate, toStart, toEvent Sample }

func (r replaceSplit) String() string {
	out := fmt.Sprintf("finished → created %s, created → started %s", FormatDuration(r.toCreate.Quantile(0.5)), FormatDuration(r.toStart.Quantile(0.5)))
	if len(r.toEvent) > 0 {
		// The runtime's own share: exit to its CRI event (evented agents
		// cannot act before it; relisting ones see the exit no earlier).
		out += fmt.Sprintf("; finished → runtime's stop event %s", FormatDuration(r.toEvent.Quantile(0.5)))
	}
	return out
}

// killOne kills pod name's first container (first: from up) and waits
// for its replacement to run; it returns old finished → new started and
// adds the split to sp.
func (s *run) killOne(ctx context.Context, name string, first map[string]Started, stops *StopEvents, sp *replaceSplit) (time.Duration, error) {
	sb := s.a.SandboxName(name)
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	old := first[sb].ID
	finished, err := s.rt.Kill(ctx, old)
	if err != nil {
		return 0, err
	}
	started, err := s.rt.WaitStarted(ctx, []string{sb}, map[string]bool{old: true})
	if err != nil {
		return 0, err
	}
	sp.toCreate.Add(started[sb].Created.Sub(finished))
	sp.toStart.Add(started[sb].Started.Sub(started[sb].Created))
	if at, ok := stops.At(old); ok {
		sp.toEvent.Add(at.Sub(finished))
	}
	return started[sb].Started.Sub(finished), nil
}

// pairedReplacement alternates kills of the agent's containers with kills
// of the floor's on the same runtime (floor first in even rounds), Kills
// of each. The floor replaces its containers the moment the runtime's
// CRI event says they stopped (RawCRI.FollowReplacements): CreateContainer
// and StartContainer, nothing else, so its time is the runtime's exit
// handling, its event and its Create+Start. The result is the agent's;
// the note gives the floor's median, its split and calls, and the median
// of the per-pair ratios.
func (s *run) pairedReplacement(ctx context.Context, via Via) (Result, error) {
	res := Result{Measure: MeasureReplacementPaired, Agent: s.a.Name()}
	floor := &run{rt: s.rt, a: s.o.Floor, o: s.o, tag: s.tag + "r"}
	evctx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	if err := s.o.Floor.FollowReplacements(evctx); err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	stops := s.rt.FollowStops(evctx)
	fnames, names := floor.names(s.o.Kills), s.names(s.o.Kills)
	_, ffirst, err := floor.up(ctx, fnames, ViaAPI)
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	_, first, err := s.up(ctx, names, via)
	if err != nil {
		return res, err
	}
	var floorS, ratios Sample
	var split, floorSplit replaceSplit
	for i := range s.o.Kills {
		var agentD, floorD time.Duration
		for k := range 2 {
			if (k == 0) == (i%2 == 0) {
				d, err := floor.killOne(ctx, fnames[i], ffirst, stops, &floorSplit)
				if err != nil {
					if rerr := s.o.Floor.ReplaceErr(); rerr != nil {
						err = fmt.Errorf("%w (%v)", err, rerr)
					}
					return res, fmt.Errorf("floor: %w", err)
				}
				floorD = d
				floorS.Add(d)
				continue
			}
			d, err := s.killOne(ctx, names[i], first, stops, &split)
			if err != nil {
				return res, err
			}
			agentD = d
			res.Seconds.Add(d)
		}
		ratios = append(ratios, agentD.Seconds()/floorD.Seconds())
	}
	res.setFloor(floorS, ratios)
	res.Note = fmt.Sprintf("[%s: %s; raw CRI alternating: %s (p99 %s), %s; its calls: %s; %s]",
		s.a.Name(), split, FormatDuration(floorS.Quantile(0.5)), FormatDuration(floorS.Quantile(0.99)), floorSplit, s.o.Floor.ReplaceSummary(), pairRatio(ratios))
	stopEvents()
	if err := s.o.Floor.Delete(ctx, fnames, ViaAPI); err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	_, err = s.down(ctx, names, via)
	return res, err
}

// idle runs 10 pods and samples the agent's processes' CPU time over the
// idle period and their resident memory at its end. The RSS rides in
// Seconds[0] until Run splits it out.
func (s *run) idle(ctx context.Context, via Via) (Result, error) {
	res := Result{Measure: MeasureIdleCPU, Agent: s.a.Name(), Unit: "% of a core"}
	names := s.names(10)
	if _, _, err := s.up(ctx, names, via); err != nil {
		return res, err
	}
	// Let the start-up work settle first.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return res, err
	}
	before, err := cpuTicks(s.o.PIDs)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := sleep(ctx, s.o.Idle); err != nil {
		return res, err
	}
	after, err := cpuTicks(s.o.PIDs)
	if err != nil {
		return res, err
	}
	res.Value = float64(after-before) / clkTck / time.Since(t0).Seconds() * 100
	mem, err := readMemory(s.o.PIDs)
	if err != nil {
		return res, err
	}
	// The RSS row's value and note (Run splits them off).
	res.Seconds, res.Note = Sample{mem.RSS}, mem.note()
	_, err = s.down(ctx, names, via)
	return res, err
}

// clkTck is the kernel's clock tick rate for process times (USER_HZ).
const clkTck = 100

// cpuTicks is the user+system CPU time of pids, in clock ticks.
func cpuTicks(pids []int) (int64, error) {
	var total int64
	for _, pid := range pids {
		t, err := readStatTicks(pid)
		if err != nil {
			return 0, err
		}
		total += t
	}
	return total, nil
}

// memory is the summed resident memory of some processes, in MB: the
// total (VmRSS), and its anonymous part (heaps, stacks) and file-backed
// part (the binaries' pages in use), as /proc/PID/status gives them.
type memory struct {
	RSS, Anon, File float64
	// Each is every process's VmRSS in MB, in the order given.
	Each []float64
}

func (m memory) note() string {
	each := make([]string, len(m.Each))
	for i, v := range m.Each {
		each[i] = fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("[anonymous %.1f MB, file-backed %.1f MB; per process %s MB]", m.Anon, m.File, strings.Join(each, " + "))
}

// readMemory sums the resident memory of pids.
func readMemory(pids []int) (memory, error) {
	var m memory
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return m, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			var into *float64
			switch k {
			case "VmRSS":
				m.Each = append(m.Each, 0)
				into = &m.Each[len(m.Each)-1]
			case "RssAnon":
				into = &m.Anon
			case "RssFile":
				into = &m.File
			default:
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return m, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
			}
			*into += float64(n) / 1024
		}
	}
	for _, v := range m.Each {
		m.RSS += v
	}
	return m, nil
}
