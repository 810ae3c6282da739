package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/syncpod/syncpod/bench"
)

// A goal is a bound syncpod holds itself to against the kubelet on one
// row, and what the run measured of it: the ratio, whether the bound held
// and, where it did not, what the run's own samples say limits the row.
type goal struct {
	row      string
	bound    string
	measured string
	met      bool
	limit    string
}

// writeGoals prints the goals of a section after its tables: a line
// saying what they are, then one row each. Nothing when there are none.
func writeGoals(b *strings.Builder, intro string, goals []goal) {
	if len(goals) == 0 {
		return
	}
	b.WriteString(intro + "\n\n")
	b.WriteString("| row | goal | measured | | what limits it |\n| --- | --- | --- | --- | --- |\n")
	for _, g := range goals {
		verdict := "met"
		if !g.met {
			verdict = "**not met**"
		}
		limit := g.limit
		if limit == "" {
			limit = "—"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", g.row, g.bound, g.measured, verdict, limit)
	}
	b.WriteString("\n")
}

// The single-node goals: every row at most this share of the kubelet's
// time, idle CPU at most idleBound of its CPU.
const (
	rowBound  = 0.9
	idleBound = 0.2
)

// sectionGoals are the single-node goals a section of the kubelet beside
// syncpod measured: its starts, bursts, deletions and replacements at most
// rowBound of the kubelet's time, its idle CPU at most idleBound. A row
// that misses says where its time went: the runtime's share of the start
// (Split), and the raw-CRI floor that alternated with syncpod on one
// runtime (Floor): what no agent can go under.
func sectionGoals(s Section) []goal {
	cols, by := bench.Columns(s.Reports)
	if !hasAgents(cols, "kubelet", "syncpod") {
		return nil
	}
	k, sp := by["kubelet"], by["syncpod"]
	var out []goal
	add := func(row, measure string, bound float64, limit func(ratio float64) string) {
		a, c := k[measure], sp[measure]
		ratio, text, ok := ratioOf(a, c)
		if !ok {
			return
		}
		g := goal{row: row, bound: fmt.Sprintf("≤ %.1f×", bound), measured: text, met: ratio <= bound}
		if !g.met && limit != nil {
			g.limit = limit(ratio)
		}
		out = append(out, g)
	}
	add("start from a manifest file", bench.MeasureStartFileVersus, rowBound, func(ratio float64) string {
		return startLimit(k[bench.MeasureStartFileVersus], sp[bench.MeasureStartFileVersus], sp[bench.MeasureStartFilePaired])
	})
	add("10 pods at once from files, last started", bench.Measure10FileVersus, rowBound, func(ratio float64) string {
		return floorLimit(ratio, sp[bench.Measure10Paired], "started its 10 pods")
	})
	add("delete those 10 pods, all stopped", bench.MeasureDelete10Versus, rowBound, func(ratio float64) string {
		return floorLimit(ratio, sp[bench.MeasureDeletePaired], "stopped its 10 pods")
	})
	add("replacement of a killed container", bench.MeasureReplacement, rowBound, func(ratio float64) string {
		return floorLimit(ratio, sp[bench.MeasureReplacementPaired], "replaced its container")
	})
	add("idle CPU, both at once", bench.MeasureIdleVersus, idleBound, nil)
	add("`kubectl apply` → Running, through a kube-apiserver", bench.MeasureAPIServerRunning, rowBound, func(ratio float64) string {
		return apiLimit(k, sp)
	})
	return out
}

func hasAgents(cols []string, names ...string) bool {
	for _, n := range names {
		if !slices.Contains(cols, n) {
			return false
		}
	}
	return true
}

// ratioOf is syncpod's result c over the kubelet's a as the table's last
// column gives it (bench.Ratio), and its text with the interval.
func ratioOf(a, c *bench.Result) (float64, string, bool) {
	r, ok := bench.Ratio(a, c, "kubelet")
	if !ok {
		return 0, "", false
	}
	if ci := c.PerRoundCI; ci != nil && c.PairedWith == "kubelet" {
		return r, fmt.Sprintf("%.2f× (95 %% CI %.2f–%.2f×)", r, ci[0], ci[1]), true
	}
	return r, fmt.Sprintf("%.2f×", r), true
}

// startLimit says how a start split: the part before the runtime's first
// work (the agent's) and the runtime's part, for both agents, and what
// syncpod's time would be against the kubelet's with no part of its own;
// then the floor beside syncpod, where the run has it.
func startLimit(k, sp, paired *bench.Result) string {
	if k == nil || sp == nil || k.Split == nil || sp.Split == nil {
		return floorNote(paired, "started its pod")
	}
	kt := k.Seconds.Quantile(0.5)
	sRun, sTo := sp.Split.Runtime.Quantile(0.5), sp.Split.ToSandbox.Quantile(0.5)
	kRun, kTo := k.Split.Runtime.Quantile(0.5), k.Split.ToSandbox.Quantile(0.5)
	best := round2(sRun / kt)
	text := fmt.Sprintf("the runtime: sandbox created → started took %s of syncpod's %s (the kubelet's: %s of %s); "+
		"syncpod's part before the sandbox was %s (the kubelet's %s), so with none at all it would take %.2f× the kubelet's time",
		bench.FormatDuration(sRun), bench.FormatDuration(sp.Seconds.Quantile(0.5)), bench.FormatDuration(kRun), bench.FormatDuration(kt), bench.FormatDuration(sTo), bench.FormatDuration(kTo), best)
	text += reach(best, rowBound*kt-sRun, sTo)
	if f := floorNote(paired, "started its pod"); f != "" {
		text += "; " + f
	}
	return text
}

// floorLimit says what the floor alternating with syncpod took and, at the
// floor's pace, what syncpod's ratio to the kubelet would be.
func floorLimit(ratio float64, paired *bench.Result, did string) string {
	f := floorNote(paired, did)
	if f == "" || !(paired.FloorRatio > 0) {
		return f
	}
	if paired.FloorRatio <= 1 {
		return f + ": syncpod already goes at the floor's pace, so the runtime's own time is the limit"
	}
	at := round2(ratio / paired.FloorRatio)
	text := f + fmt.Sprintf("; at the floor's pace syncpod would take about %.2f× the kubelet's time", at)
	if at > rowBound {
		text += fmt.Sprintf(", still above %.1f×: the runtime's own time is the limit", rowBound)
	} else {
		text += fmt.Sprintf(": syncpod's own time over the floor (%.0f %%) is what misses", (paired.FloorRatio-1)*100)
	}
	return text
}

// floorNote is the floor's median time alternating with syncpod and
// syncpod's median per-pair ratio to it, or "" when the run has no such
// row.
func floorNote(paired *bench.Result, did string) string {
	if paired == nil || len(paired.Floor) == 0 || !(paired.FloorRatio > 0) {
		return ""
	}
	return fmt.Sprintf("a raw CRI client alternating with syncpod on one runtime %s in %s, syncpod %.2f× its time",
		did, bench.FormatDuration(paired.Floor.Quantile(0.5)), paired.FloorRatio)
}

// apiLimit splits the API-server path into the node's share and the
// runtime's for both agents.
func apiLimit(k, sp map[string]*bench.Result) string {
	kn, sn := k[bench.MeasureAPIServerNode], sp[bench.MeasureAPIServerNode]
	kr, sr := k[bench.MeasureAPIServerRuntime], sp[bench.MeasureAPIServerRuntime]
	kt := k[bench.MeasureAPIServerRunning]
	if kn == nil || sn == nil || kr == nil || sr == nil || kt == nil {
		return ""
	}
	best := round2(sr.Seconds.Quantile(0.5) / kt.Seconds.Quantile(0.5))
	text := fmt.Sprintf("the runtime's share (sandbox created → started) was %s for syncpod and %s for the kubelet, "+
		"the node's share %s and %s; with no share of its own syncpod would take %.2f× the kubelet's time",
		bench.FormatDuration(sr.Seconds.Quantile(0.5)), bench.FormatDuration(kr.Seconds.Quantile(0.5)), bench.FormatDuration(sn.Seconds.Quantile(0.5)), bench.FormatDuration(kn.Seconds.Quantile(0.5)), best)
	return text + reach(best, rowBound*kt.Seconds.Quantile(0.5)-sr.Seconds.Quantile(0.5), sn.Seconds.Quantile(0.5))
}

// reach says whether a start whose agent took no time at all, best times
// the kubelet's, would meet rowBound, and if so how small syncpod's own
// share (it was own seconds) would have to be: at most need seconds.
func reach(best, need, own float64) string {
	if best > rowBound {
		return fmt.Sprintf(": %.1f× is out of reach on this runtime", rowBound)
	}
	return fmt.Sprintf(": to meet %.1f× syncpod's own share would have to be at most %s (it was %s)", rowBound, bench.FormatDuration(max(need, 0)), bench.FormatDuration(own))
}

// round2 rounds to the two decimals the document prints, so that a
// verdict agrees with the number beside it.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// The hollow-node goals: a syncpod node at most scaleBound of a kubemark
// node's CPU and memory, fewer API requests, and pods started as fast or
// faster.
const scaleBound = 0.5

// scaleGoals are the hollow-node goals one node count's runs measured, a
// kubemark side and a syncpod side. A CPU row that misses names where
// syncpod's process spent its CPU (its profile, when the run took one);
// the idle requests name the lease renewals both make.
func scaleGoals(reps []bench.ScaleReport) []goal {
	var km, sp *bench.ScaleReport
	for i := range reps {
		switch reps[i].Side {
		case "kubemark":
			km = &reps[i]
		case "syncpod":
			sp = &reps[i]
		}
	}
	if km == nil || sp == nil {
		return nil
	}
	var out []goal
	add := func(row string, bound float64, strict bool, a, b float64, limit func() string) {
		if !(a > 0) || math.IsNaN(b) {
			return
		}
		r := round2(b / a)
		g := goal{row: row, measured: fmt.Sprintf("%.2f×", r), met: r <= bound}
		g.bound = fmt.Sprintf("≤ %.1f×", bound)
		if strict {
			// Fewer by the printed ratio: rates that round to parity
			// (5.98 against 5.99 a minute) are not fewer.
			g.bound, g.met = fmt.Sprintf("< %.0f×", bound), r < bound
		}
		if !g.met && limit != nil {
			g.limit = limit()
		}
		out = append(out, g)
	}
	profile := func() string { return profileLimit(sp.Profile) }
	add("CPU idle", scaleBound, false, km.Idle.Usage.CPU, sp.Idle.Usage.CPU, nil)
	add("CPU time under load per pod", scaleBound, false, cpuPerPod(*km), cpuPerPod(*sp), profile)
	add("memory (PSS) idle", scaleBound, false, km.Idle.Usage.PSS, sp.Idle.Usage.PSS, nil)
	add("memory (PSS) peak under load", scaleBound, false, km.Load.Usage.PeakPSS, sp.Load.Usage.PeakPSS, nil)
	leases := func() string {
		k, s := km.Idle.Requests.ByClass["update leases"], sp.Idle.Requests.ByClass["update leases"]
		return fmt.Sprintf("the lease: both renew it every 10 s plus up to 4 %% at random, as the kubelet does (%.2f and %.2f of their %.2f and %.2f requests a minute)",
			k, s, km.Idle.Requests.Total, sp.Idle.Requests.Total)
	}
	add("API requests a minute, idle", 1, true, km.Idle.Requests.Total, sp.Idle.Requests.Total, leases)
	add("API requests a minute, under load", 1, true, km.Load.Requests.Total, sp.Load.Requests.Total, nil)
	add("pod startup p50", 1, false, km.Startup.Percentiles(0.5)[0], sp.Startup.Percentiles(0.5)[0], nil)
	add("pod startup p99", 1, false, km.Startup.Percentiles(0.99)[0], sp.Startup.Percentiles(0.99)[0], nil)
	return out
}

// profileLimit names the largest shares of syncpod's CPU under load.
func profileLimit(p *bench.ProfileSummary) string {
	if p == nil || len(p.Shares) == 0 {
		return "no profile was taken in this run"
	}
	shares := slices.Clone(p.Shares)
	slices.SortStableFunc(shares, func(a, b bench.ProfileShare) int { return cmp.Compare(b.Share, a.Share) })
	var parts []string
	for _, s := range shares[:min(len(shares), 5)] {
		parts = append(parts, fmt.Sprintf("%s %.0f %%", s.Category, s.Share*100))
	}
	return "where syncpod's CPU went under load (its profile, above): " + strings.Join(parts, ", ")
}

// writeProfiles prints each run's CPU profile summary.
func writeProfiles(b *strings.Builder, reps []bench.ScaleReport) {
	for _, r := range reps {
		p := r.Profile
		if p == nil || len(p.Shares) == 0 {
			continue
		}
		fmt.Fprintf(b, "Where %s's process spent its CPU under load: a CPU profile over the %.0f s of the creates and the deletes, "+
			"%.1f s of CPU for its %d nodes; a category's share is that of the samples with one of its functions anywhere in their stack, "+
			"so a sample counts in each category it holds:\n\n", r.Side, p.Seconds, p.CPUSeconds, r.Nodes)
		b.WriteString("| work | share of the CPU |\n| --- | --- |\n")
		for _, s := range p.Shares {
			fmt.Fprintf(b, "| %s | %.1f %% |\n", s.Category, s.Share*100)
		}
		b.WriteString("\n")
	}
}
