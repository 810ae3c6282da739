package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/syncpod/syncpod/bench"
)

// The density goals, syncpod against the kubelet on one node.
const (
	// burstBound: the time until a burst's pods all run, and until they
	// are all gone.
	burstBound = 0.8
	// densityIdleBound: CPU and resident memory with the first burst's
	// pods idle.
	densityIdleBound = 0.5
	// sliBound: the paced pods' startup SLI p99, in seconds (and at most
	// the kubelet's).
	sliBound = 1.0
	// statusAgeBound and relistBound: during the churn, no pod's status
	// older than this, and the PLEG's relist p99 at most this, in
	// seconds.
	statusAgeBound = 2.0
	relistBound    = 0.1
)

// densityGoals are the goals a density run measured: syncpod's column
// against the kubelet's. A burst that misses says what the runtime's own
// clock gives (the last container's start), the idle memory what the
// agents took before their first pod and per pod, the churn how busy the
// machine and the runtime were.
func densityGoals(rep bench.DensityReport) []goal {
	if !hasAgents(rep.Agents, "kubelet", "syncpod") {
		return nil
	}
	var out []goal
	ratioGoal := func(row string, bound float64, k, s float64, limit func(ratio float64) string) {
		if !(k > 0) || math.IsNaN(s) {
			return
		}
		r := round2(s / k)
		g := goal{row: row, bound: fmt.Sprintf("≤ %.1f×", bound), measured: fmt.Sprintf("%.2f× (%s against %s)", r, bench.FormatDuration(s), bench.FormatDuration(k)), met: r <= bound}
		if !g.met && limit != nil {
			g.limit = limit(r)
		}
		out = append(out, g)
	}

	if k, s := pooledStartup(rep, "kubelet"), pooledStartup(rep, "syncpod"); len(k) > 0 && len(s) > 0 {
		kp, sp := k.Quantile(0.99), s.Quantile(0.99)
		out = append(out, goal{
			row:      fmt.Sprintf("pod startup SLI p99, %d pods at %g pods/s", rep.Pods, rep.Rate),
			bound:    fmt.Sprintf("≤ the kubelet's, ≤ %s", bench.FormatDuration(sliBound)),
			measured: fmt.Sprintf("%s against %s", bench.FormatDuration(sp), bench.FormatDuration(kp)),
			met:      sp <= kp && sp <= sliBound,
		})
	}
	for _, n := range rep.Bursts {
		kRun, sRun := burstMedian(rep, "kubelet", n, runningOf), burstMedian(rep, "syncpod", n, runningOf)
		ratioGoal(fmt.Sprintf("%d pods at once → all running", n), burstBound, kRun, sRun, func(float64) string {
			kRt, sRt := burstMedian(rep, "kubelet", n, runtimeOf), burstMedian(rep, "syncpod", n, runtimeOf)
			if !(kRt > 0) || !(sRt > 0) {
				return ""
			}
			text := fmt.Sprintf("the runtime: by its own clock the last container started %s after the first create for syncpod, %s for the kubelet (%.2f×); "+
				"the rest, the node reporting it, was %s and %s", bench.FormatDuration(sRt), bench.FormatDuration(kRt), round2(sRt/kRt), bench.FormatDuration(sRun-sRt), bench.FormatDuration(kRun-kRt))
			if round2(sRt/kRt) > burstBound {
				text += fmt.Sprintf(": the starts themselves, not their reporting, are above %.1f×", burstBound)
			}
			return joinLimits(text, criLimit(rep, n, startCRIOf))
		})
		ratioGoal(fmt.Sprintf("delete %d pods → all gone", n), burstBound,
			burstMedian(rep, "kubelet", n, goneOf), burstMedian(rep, "syncpod", n, goneOf), func(float64) string {
				return criLimit(rep, n, deleteCRIOf)
			})
	}
	ki, si := firstIdle(rep, "kubelet"), firstIdle(rep, "syncpod")
	if ki != nil && si != nil {
		kc, sc := meanIdle(rep, "kubelet", func(d bench.DensityIdle) float64 { return d.CPUPercent }),
			meanIdle(rep, "syncpod", func(d bench.DensityIdle) float64 { return d.CPUPercent })
		km, sm := meanIdle(rep, "kubelet", func(d bench.DensityIdle) float64 { return d.RSSMB }),
			meanIdle(rep, "syncpod", func(d bench.DensityIdle) float64 { return d.RSSMB })
		if kc > 0 {
			r := round2(sc / kc)
			out = append(out, goal{row: fmt.Sprintf("idle at %d pods: CPU", si.Pods), bound: fmt.Sprintf("≤ %.1f×", densityIdleBound),
				measured: fmt.Sprintf("%.2f× (%.2f against %.2f %% of a core)", r, sc, kc), met: r <= densityIdleBound})
		}
		if km > 0 {
			r := round2(sm / km)
			g := goal{row: fmt.Sprintf("idle at %d pods: RSS", si.Pods), bound: fmt.Sprintf("≤ %.1f×", densityIdleBound),
				measured: fmt.Sprintf("%.2f× (%.1f against %.1f MB)", r, sm, km), met: r <= densityIdleBound}
			if !g.met && ki.EmptyRSSMB > 0 && si.EmptyRSSMB > 0 {
				g.limit = fmt.Sprintf("before its first pod syncpod took %.1f MB (the kubelet %.1f MB), %.2f× the kubelet's whole at %d pods; "+
					"each pod added %.0f kB (the kubelet's %.0f kB; first round)",
					si.EmptyRSSMB, ki.EmptyRSSMB, round2(si.EmptyRSSMB/km), si.Pods, si.RSSPerPodKB(), ki.RSSPerPodKB())
				if si.FileMB > 0 && ki.FileMB > 0 {
					g.limit += fmt.Sprintf("; at %d pods %.1f MB of syncpod's were file-backed, its binary's pages in use (the kubelet's %.1f MB), "+
						"%.1f MB anonymous, its heaps and stacks (%.1f MB)", si.Pods, si.FileMB, ki.FileMB, si.AnonMB, ki.AnonMB)
				}
			}
			out = append(out, g)
		}
	}
	kc, sc := worstChurn(rep, "kubelet"), worstChurn(rep, "syncpod")
	if kc != nil && sc != nil {
		limit := fmt.Sprintf("the machine: its cores were %.0f %% busy over syncpod's churn (%.0f %% over the kubelet's), its runtime took %.0f %% of a core (%.0f %%)",
			sc.HostBusyPercent, kc.HostBusyPercent, sc.RuntimeCPUPercent, kc.RuntimeCPUPercent)
		if len(sc.StatusAge) > 0 {
			oldest, kOldest := slices.Max(sc.StatusAge), math.NaN()
			if len(kc.StatusAge) > 0 {
				kOldest = slices.Max(kc.StatusAge)
			}
			g := goal{row: fmt.Sprintf("churn at %d pods, %g pods/s: the oldest status", sc.Pods, rep.ChurnRate), bound: "≤ " + bench.FormatDuration(statusAgeBound),
				measured: fmt.Sprintf("%s (the kubelet's %s)", bench.FormatDuration(oldest), durOrDash(kOldest)), met: oldest <= statusAgeBound}
			if !g.met {
				g.limit = limit
			}
			out = append(out, g)
		}
		if sc.Relists > 0 {
			g := goal{row: fmt.Sprintf("churn at %d pods, %g pods/s: relist p99", sc.Pods, rep.ChurnRate), bound: "≤ " + bench.FormatDuration(relistBound),
				measured: fmt.Sprintf("≤ %s over %d relists (the kubelet's ≤ %s over %d)", bench.FormatDuration(sc.RelistP99), sc.Relists, bench.FormatDuration(kc.RelistP99), kc.Relists),
				met:      sc.RelistP99 <= relistBound && !sc.RelistP99Beyond}
			if !g.met {
				g.limit = limit
			}
			out = append(out, g)
		}
	}
	return out
}

func startCRIOf(b bench.DensityBurst) *bench.CRIWindow  { return b.StartCRI }
func deleteCRIOf(b bench.DensityBurst) *bench.CRIWindow { return b.DeleteCRI }

// criLimit is what the runtimes served in an n-pod burst's phase, as each
// counted it (each agent's first round that read its runtime): the calls,
// how many the runtime had in hand on average, and the method that took
// the most of syncpod's runtime's time, with the kubelet's figures beside
// them; "" when the run did not read the runtimes.
func criLimit(rep bench.DensityReport, n int, of func(bench.DensityBurst) *bench.CRIWindow) string {
	k, s := burstCRI(rep, "kubelet", n, of), burstCRI(rep, "syncpod", n, of)
	if k == nil || s == nil || !(k.Seconds > 0) || !(s.Seconds > 0) {
		return ""
	}
	kt, st := k.Total(), s.Total()
	top := bench.CRICall{}
	for _, c := range s.Calls {
		if c.Seconds > top.Seconds {
			top = c
		}
	}
	text := fmt.Sprintf("the runtime, by its own count: syncpod made %d CRI calls and kept %.0f in its hands on average, the kubelet %d and %.0f",
		st.Calls, st.Seconds/s.Seconds, kt.Calls, kt.Seconds/k.Seconds)
	if top.Calls > 0 {
		kc := k.Call(top.Method)
		text += fmt.Sprintf("; %s took the runtime %s a call for syncpod (%d calls), %s for the kubelet (%d)",
			top.Method, bench.FormatDuration(top.Mean()), top.Calls, bench.FormatDuration(kc.Mean()), kc.Calls)
	}
	if st.Calls <= kt.Calls {
		text += ": syncpod asked no more of the runtime than the kubelet, so the runtime's pace is the limit"
	}
	return text
}

func burstCRI(rep bench.DensityReport, agent string, n int, of func(bench.DensityBurst) *bench.CRIWindow) *bench.CRIWindow {
	for _, r := range rep.Rounds {
		if r.Agent != agent {
			continue
		}
		for _, b := range r.Bursts {
			if w := of(b); b.Pods == n && w != nil {
				return w
			}
		}
	}
	return nil
}

// joinLimits joins what limits a row, leaving out the empty parts.
func joinLimits(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

func durOrDash(s float64) string {
	if math.IsNaN(s) {
		return "—"
	}
	return bench.FormatDuration(s)
}

func pooledStartup(rep bench.DensityReport, agent string) bench.Sample {
	var all bench.Sample
	for _, r := range rep.Rounds {
		if r.Agent == agent {
			all = append(all, r.Startup...)
		}
	}
	return all
}

func runningOf(b bench.DensityBurst) float64 { return b.AllRunning }
func runtimeOf(b bench.DensityBurst) float64 { return b.RuntimeStarted }
func goneOf(b bench.DensityBurst) float64    { return b.AllGone }

// burstMedian is the median over an agent's rounds of one measure of its
// n-pod burst (NaN when none has it).
func burstMedian(rep bench.DensityReport, agent string, n int, of func(bench.DensityBurst) float64) float64 {
	var each bench.Sample
	for _, r := range rep.Rounds {
		if r.Agent != agent {
			continue
		}
		for _, b := range r.Bursts {
			if v := of(b); b.Pods == n && v > 0 {
				each = append(each, v)
			}
		}
	}
	return each.Median()
}

// firstIdle is an agent's idle cost in its first round (where its growth
// per pod is taken from a fresh agent).
func firstIdle(rep bench.DensityReport, agent string) *bench.DensityIdle {
	for _, r := range rep.Rounds {
		if r.Agent == agent && r.Idle != nil {
			return r.Idle
		}
	}
	return nil
}

func meanIdle(rep bench.DensityReport, agent string, of func(bench.DensityIdle) float64) float64 {
	sum, n := 0.0, 0
	for _, r := range rep.Rounds {
		if r.Agent == agent && r.Idle != nil {
			sum, n = sum+of(*r.Idle), n+1
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// worstChurn is the agent's churn whose oldest status was the oldest.
func worstChurn(rep bench.DensityReport, agent string) *bench.DensityChurn {
	var worst *bench.DensityChurn
	for _, r := range rep.Rounds {
		c := r.Churn
		if r.Agent != agent || c == nil {
			continue
		}
		if worst == nil || maxOf(c.StatusAge) > maxOf(worst.StatusAge) {
			worst = c
		}
	}
	return worst
}

func maxOf(s bench.Sample) float64 {
	if len(s) == 0 {
		return math.Inf(-1)
	}
	return slices.Max(s)
}
