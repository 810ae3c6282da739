package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg/draw"

	"github.com/syncpod/syncpod/bench"
)

// DensityTitle is the density section's heading (without "## ").
const DensityTitle = "Density"

// densityPlotPrefix begins the names of the density section's plots: a
// document updated with a new density section replaces those only.
const densityPlotPrefix = "density-"

// IsDensityPlot says a plot file belongs to the density section.
func IsDensityPlot(name string) bool { return strings.HasPrefix(name, densityPlotPrefix) }

// DensityInput is a density run and how it came to be.
type DensityInput struct {
	Report bench.DensityReport
	// Command is what made the run (e.g. "make bench-density").
	Command   string
	Generated time.Time
	// Components are versions the report does not carry.
	Components []Component
	// PlotDir is the plots' directory relative to the document.
	PlotDir string
	// More are further runs of other sizes (e.g. a churn), each its
	// table after the first run's plots.
	More []bench.DensityReport
}

// RenderDensity makes the density section (from its "## " heading on)
// and its plots. It fails only when a plot cannot be drawn.
func RenderDensity(in DensityInput) (string, []Plot, error) {
	rep := in.Report
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", DensityTitle)
	fmt.Fprintf(&b, "Generated on %s by `syncpod-bench report`", in.Generated.UTC().Format("2006-01-02 15:04 MST"))
	if in.Command != "" {
		fmt.Fprintf(&b, " at the end of `%s`", in.Command)
	}
	b.WriteString(", from that run's results; the rest of this document comes from other runs.\n\n")
	b.WriteString(strings.ReplaceAll(densityMethod, "{parallel}", fmt.Sprint(rep.Parallel)))
	writeDensityRun(&b, rep, in.Components)
	plots, err := densityPlots(rep)
	if err != nil {
		return "", nil, err
	}
	for _, p := range plots {
		fmt.Fprintf(&b, "![%s](%s)\n\n", p.Title, linkPath(in.PlotDir, p.Name))
	}
	for _, more := range in.More {
		fmt.Fprintf(&b, "### A further run, started %s\n\n", more.Started.UTC().Format("2006-01-02 15:04 MST"))
		writeDensityRun(&b, more, nil)
	}
	return strings.TrimRight(b.String(), "\n") + "\n", plots, nil
}

// writeDensityRun writes one density run: its sizes, its table (ratios
// of the second agent to the first) and its run lines.
func writeDensityRun(b *strings.Builder, rep bench.DensityReport, components []Component) {
	if rep.ChurnSeconds > 0 {
		fmt.Fprintf(b, "The **churn** runs once the last burst's pods run: every %s s a pod is created and the oldest one deleted, for %g s; "+
			"its rows are the created pods' startup latencies, how many the node failed before they started (refused) and how many others were deleted before seen started, and the agent's CPU over it; "+
			"the last burst's deletion comes after it, of the pods then running. "+
			"Both nodes' `--max-pods` have room for 30 s of churned pods beyond the last burst (a deleted pod counts until the node has taken its deletion in). "+
			"A pod's **status age** is how far the API server's status of it was behind the runtime: for each churned pod, from its container's start "+
			"(the runtime's own `startedAt`) to the first watch event showing the pod started (or, for one never shown started, showing it stopped or deleted); "+
			"for each pod deleted during the churn (the burst's and churned ones), from its container's exit (the runtime's `finishedAt`, looked for every %g s; "+
			"a container removed between two looks counts as exited at the look that missed it) to the first event showing a container no longer running, or the pod deleted; "+
			"A change the status had not shown when the wait after the churn ended (it is bounded: a node that falls behind is reported so, under the run) counts until then, a lower bound. "+
			"*the oldest status age any pod had* is the largest of those, the largest of the rounds first. "+
			"The **PLEG relist p99** is the upper bound of the bucket holding the 99th percentile of the relists' durations over the churn, "+
			"from each agent's own histogram (the kubelet's `kubelet_pleg_relist_duration_seconds`, syncpod's `syncpod_pleg_relist_duration_seconds`), "+
			"with how many relists that was: the kubelet relists every second, syncpod's PLEG follows the runtime's events and relists only as a safety net.\n\n",
			fmt.Sprintf("%.3g", 1/rep.ChurnRate), rep.ChurnSeconds, bench.StatusAgePoll.Seconds())
	}
	n := rounds(rep)
	var sizes []string
	if rep.Pods > 0 {
		sizes = append(sizes, fmt.Sprintf("%d pods at %g pods/s", rep.Pods, rep.Rate))
	}
	if len(rep.Bursts) > 0 {
		sizes = append(sizes, "bursts of "+joinInts(rep.Bursts))
	}
	if rep.IdleSeconds > 0 {
		sizes = append(sizes, fmt.Sprintf("idle window %g s", rep.IdleSeconds))
	}
	if rep.ChurnSeconds > 0 {
		sizes = append(sizes, fmt.Sprintf("churn %g pods/s for %g s", rep.ChurnRate, rep.ChurnSeconds))
	}
	fmt.Fprintf(b, "Sizes: %s; %d round%s.\n\n", strings.Join(sizes, ", "), n, map[bool]string{true: "", false: "s"}[n == 1])
	rows := bench.DensityRows(rep)
	head := append([]string{"measure"}, rep.Agents...)
	if len(rep.Agents) >= 2 {
		head = append(head, rep.Agents[1]+" / "+rep.Agents[0])
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat(" --- |", len(head)) + "\n")
	for _, r := range rows {
		row := []string{r.Measure}
		if r.Kind == bench.KindPercentiles {
			row[0] += ": p50 / p90 / p99"
		}
		for i := range rep.Agents {
			row = append(row, r.Cell(i))
		}
		if len(rep.Agents) >= 2 {
			row = append(row, r.Ratio(0, 1))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	writeDensityCalls(b, rep)
	b.WriteString("\n")
	writeGoals(b, fmt.Sprintf("Against the goals: bursts at most %.1f× the kubelet's time to all running and to all gone, "+
		"idle CPU and memory at most %.1f× its own, the paced pods' startup p99 at most the kubelet's and %s, and during the churn "+
		"no status older than %s and the relists' p99 at most %s:", burstBound, densityIdleBound, bench.FormatDuration(sliBound), bench.FormatDuration(statusAgeBound), bench.FormatDuration(relistBound)),
		densityGoals(rep))
	b.WriteString("The run:\n\n")
	for _, a := range rep.Agents {
		v, n := rep.Runtimes[a], rep.Processes[a]
		switch {
		case v != "" && n == 1:
			fmt.Fprintf(b, "- %s on %s, in one process\n", a, v)
		case v != "" && n > 1:
			fmt.Fprintf(b, "- %s on %s, in %d processes\n", a, v, n)
		case v != "":
			fmt.Fprintf(b, "- %s on %s\n", a, v)
		}
	}
	for _, c := range components {
		fmt.Fprintf(b, "- %s: %s\n", c.Name, c.Version)
	}
	fmt.Fprintf(b, "- started %s, load average %.2f %.2f %.2f; at the end %.2f %.2f %.2f\n",
		rep.Started.UTC().Format(time.RFC3339), rep.Load[0], rep.Load[1], rep.Load[2], rep.LoadEnd[0], rep.LoadEnd[1], rep.LoadEnd[2])
	for _, r := range rep.Rounds {
		order := "second"
		if r.First {
			order = "first"
		}
		fmt.Fprintf(b, "- round %d, %s (%s): load average %.2f at its start%s\n", r.Round, r.Agent, order, r.Load[0], quietNote(r))
		if c := r.Churn; c != nil {
			fmt.Fprintf(b, "  - its churn: %d pods created of %d planned, in %.0f s (%d creates, %d deletes failed); "+
				"the bench's pod watch opened again %d times, relisted %d times; %d status changes not shown when the wait after it ended "+
				"(counted until then); %s\n",
				c.Created, c.Planned, c.Seconds, c.CreateFailed, c.DeleteFailed, c.Watch.Resumes, c.Watch.Relists, c.StatusAgeUnseen,
				behind(c.Behind))
			switch {
			case c.Cleared > 0 && c.ClearFailed:
				fmt.Fprintf(b, "  - the deletion after its churn given up on, its runtime still held %d pod sandboxes: the bench's removal of them through the CRI, before the next turn, ended after %.0f s with some left (above)\n",
					c.Cleared, c.ClearedSeconds)
			case c.Cleared > 0:
				fmt.Fprintf(b, "  - the deletion after its churn given up on, its runtime still held %d pod sandboxes: the bench removed them through the CRI in %.0f s, before the next turn\n",
					c.Cleared, c.ClearedSeconds)
			}
		}
	}
	b.WriteString("\n")
}

// writeDensityCalls writes the bursts' CRI calls table, when the
// runtimes were read: per phase and method, each agent's calls and the
// runtime's time on them.
func writeDensityCalls(b *strings.Builder, rep bench.DensityReport) {
	rows := bench.DensityCallRows(rep)
	if len(rows) == 0 {
		return
	}
	b.WriteString("\nThe **CRI calls** of each burst, as each node's runtime served them " +
		"(calls × the runtime's mean time a call = its summed time; the mean of the rounds):\n\n")
	head := []string{"burst phase: CRI method"}
	for _, a := range rep.Agents {
		head = append(head, a+": calls × mean = runtime's time")
	}
	if len(rep.Agents) >= 2 {
		head = append(head, rep.Agents[1]+" − "+rep.Agents[0]+" calls")
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat(" --- |", len(head)) + "\n")
	for _, r := range rows {
		row := []string{r.Phase + ": " + r.Method}
		if r.Method == "all" {
			row[0] = "**" + r.Phase + "**: every method"
		}
		for i := range rep.Agents {
			row = append(row, r.Cell(i))
		}
		if len(rep.Agents) >= 2 {
			row = append(row, r.CallsDiff(0, 1))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
}

// densityMethod says how the section's numbers were measured.
const densityMethod = `The kubelet and syncpod (its three services and syncpod-node) are two
nodes of one private kube-apiserver, each on its own identical private
containerd, both running all along; their turns alternate round by round
(one first in even rounds, the other in odd ones), and whatever a turn's
pods left in its runtime is removed before the next. A turn begins once
the machine's cores are less than half busy over 3 s (the wait is
bounded, and the runs below say how busy they were); a node that fell
behind a churn has its runtime cleared by the bench, through the CRI,
so that the other's turn does not share the machine with its backlog.
Each pod is one
busybox container that sleeps without using the CPU and exits at SIGTERM,
host network, bound to the node by ` + "`spec.nodeName`" + ` (no scheduler), the
image already in the runtime. Both nodes run with ` + "`--max-pods`" + ` raised
to hold the largest burst and otherwise their defaults. A pod's **startup
latency** is the Kubernetes pod-startup SLI as the upstream node
throughput and density tests take it: from its create request being sent
(the client's clock: ` + "`creationTimestamp`" + ` has whole seconds) to the first
watch event showing it Running with every container running and started.
**Bursts** have all their creates sent at once ({parallel} in flight); *all
running* is from the first create to the last pod seen started (and, to
split off the node's reporting, to the last container started as the
node's runtime reports it), *all gone*
from the first delete to the last pod's object removed (the node confirmed
its containers stopped). The **idle** cost is taken at the first burst's
pods, after they settle: the agent's processes' CPU time from
` + "`/proc/PID/stat`" + ` over the window, and their summed resident memory (the
kubelet; syncpod's node agent, planner, executor and PLEG, four processes
or one ` + "`syncpod-all`" + `, as the run below says), that divided
by the pods, and its growth per pod over the agent before its first pod
(first round only: later rounds start from the heap earlier pods left). Percentiles are nearest-rank over every
round's pods; times per round are the median of the rounds, each round
after it. Ratios are syncpod over the kubelet (below 1: syncpod is
faster or smaller), percentile by percentile. The **CRI calls** of a
burst are read from each node's own containerd, which serves its
Prometheus metrics on loopback with its gRPC handling-time histograms
(` + "`grpc_server_handled_total`" + ` and ` + "`grpc_server_handling_seconds`" + ` of
` + "`runtime.v1.RuntimeService`" + ` and ` + "`ImageService`" + `, unary calls): read just
before a phase's first request and again once its last pod is seen
started (or gone), the difference is the calls the node's agent made in
the phase (the bench's own calls to the runtime fall outside it), what
each method cost the runtime, and, in a phase's first row, how many calls
the runtime had in hand on average (its summed time over the phase's
length; below one, the runtime sat idle for part of the phase, waiting
for the agent's next call).

`

func rounds(rep bench.DensityReport) int {
	n := 0
	for _, r := range rep.Rounds {
		n = max(n, r.Round+1)
	}
	return n
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " and ")
}

// densityPlots draws the paced pods' startup latency distribution (both
// agents, one plot) and each burst's time until all ran against its pod
// count.
func densityPlots(rep bench.DensityReport) ([]Plot, error) {
	var out []Plot
	byAgent := map[string]bench.Sample{}
	for _, r := range rep.Rounds {
		byAgent[r.Agent] = append(byAgent[r.Agent], r.Startup...)
	}
	if len(byAgent) > 0 {
		svg, err := cdfPlot(fmt.Sprintf("pod startup latency, %d pods created at %g pods/s", rep.Pods, rep.Rate), rep.Agents, byAgent)
		if err != nil {
			return nil, fmt.Errorf("startup latency plot: %w", err)
		}
		if svg != nil {
			out = append(out, Plot{Name: densityPlotPrefix + "startup-latency.svg", Title: "pod startup latency distribution, both agents", SVG: svg})
		}
	}
	if len(rep.Bursts) > 0 {
		svg, err := burstPlot(rep)
		if err != nil {
			return nil, fmt.Errorf("bursts plot: %w", err)
		}
		if svg != nil {
			out = append(out, Plot{Name: densityPlotPrefix + "all-running-against-pods.svg", Title: "pods created at once → all running, against the pod count", SVG: svg})
		}
	}
	return out, nil
}

// cdfPlot draws each agent's samples as an empirical distribution: the
// share of pods started within x milliseconds.
func cdfPlot(title string, agents []string, samples map[string]bench.Sample) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "startup latency, milliseconds"
	p.Y.Label.Text = "share of pods started"
	p.X.Min, p.Y.Min, p.Y.Max = 0, 0, 1
	// Top left: a distribution's curves rise from the bottom left.
	p.Legend.Top, p.Legend.Left = true, true
	drawn := 0
	for i, a := range agents {
		s := slices.Clone(samples[a])
		if len(s) == 0 {
			continue
		}
		slices.Sort(s)
		xys := make(plotter.XYs, 0, 2*len(s))
		for j, v := range s {
			ms := v * 1000
			xys = append(xys, plotter.XY{X: ms, Y: float64(j) / float64(len(s))}, plotter.XY{X: ms, Y: float64(j+1) / float64(len(s))})
		}
		if err := addLine(p, xys, i, fmt.Sprintf("%s (n=%d, p50 %.0f ms, p99 %.0f ms)", a, len(s), s[int(math.Ceil(0.5*float64(len(s))))-1]*1000,
			samples[a].Quantile(0.99)*1000)); err != nil {
			return nil, err
		}
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	p.Add(plotter.NewGrid())
	return svgOf(p)
}

// addLine draws xys on p as the i-th series' line (its colour), named
// legend in p's legend.
func addLine(p *plot.Plot, xys plotter.XYs, i int, legend string) error {
	line, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	line.Color = plotutil.Color(i)
	line.Width = 1.5
	p.Add(line)
	p.Legend.Add(legend, line)
	return nil
}

// burstPlot draws, per agent, the median over the rounds of the time
// until a burst's pods all ran against the burst's pod count, each
// round a dot.
func burstPlot(rep bench.DensityReport) ([]byte, error) {
	p := plot.New()
	p.Title.Text = "pods created at once → all running"
	p.X.Label.Text = "pods"
	p.Y.Label.Text = "seconds (line: median of the rounds; dots: each round)"
	p.Legend.Top, p.Legend.Left = true, true
	drawn := 0
	xmax, ymax := 0.0, 0.0
	for i, a := range rep.Agents {
		var med plotter.XYs
		var dots plotter.XYs
		for _, n := range rep.Bursts {
			var each bench.Sample
			for _, r := range rep.Rounds {
				if r.Agent != a {
					continue
				}
				for _, b := range r.Bursts {
					if b.Pods == n {
						each = append(each, b.AllRunning)
						dots = append(dots, plotter.XY{X: float64(n), Y: b.AllRunning})
						ymax = max(ymax, b.AllRunning)
					}
				}
			}
			if len(each) > 0 {
				med = append(med, plotter.XY{X: float64(n), Y: each.Median()})
				xmax = max(xmax, float64(n))
			}
		}
		if len(med) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(med)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		points.Color, points.Shape = plotutil.Color(i), plotutil.Shape(i)
		sc, err := plotter.NewScatter(dots)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(i), Radius: 1.5, Shape: draw.CircleGlyph{}}
		p.Add(line, points, sc)
		p.Legend.Add(a, line, points)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	p.X.Min, p.X.Max = 0, xmax*1.1
	ticks := []plot.Tick{{Value: 0, Label: "0"}}
	for _, n := range rep.Bursts {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0, ymax*1.15
	p.Add(plotter.NewGrid())
	return svgOf(p)
}

// SpliceSection returns doc with its section of heading "## title"
// (from that line to the next "## " line or the end) replaced by
// section, or section appended when doc has none.
func SpliceSection(doc, title, section string) string {
	lines := strings.SplitAfter(doc, "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		h := strings.TrimRight(l, "\n")
		if start < 0 && h == "## "+title {
			start = i
			continue
		}
		if start >= 0 && strings.HasPrefix(h, "## ") {
			end = i
			break
		}
	}
	section = strings.TrimRight(section, "\n") + "\n"
	if start < 0 {
		if doc = strings.TrimRight(doc, "\n"); doc == "" {
			return section
		}
		return doc + "\n\n" + section
	}
	rest := strings.Join(lines[end:], "")
	if rest != "" {
		section += "\n"
	}
	return strings.Join(lines[:start], "") + section + rest
}

// SectionOf returns doc's section of heading "## title", from that line to
// the next "## " line or the end, and whether it has one.
func SectionOf(doc, title string) (string, bool) {
	i := strings.Index(doc, "\n## "+title+"\n")
	if i < 0 {
		return "", false
	}
	s := doc[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:3+j+1]
	}
	return strings.TrimRight(s, "\n") + "\n", true
}

// quietNote says how busy the machine was when the turn began and how
// long the bench waited for it to be quiet ("" for a run that did not).
func quietNote(r bench.DensityRound) string {
	if r.Busy == 0 && r.Waited == 0 {
		return ""
	}
	if r.Waited < 1 {
		return fmt.Sprintf(", the machine's cores %.0f %% busy", r.Busy)
	}
	return fmt.Sprintf(", the machine's cores %.0f %% busy after waiting %.0f s for them to be quiet", r.Busy, r.Waited)
}

// behind says what fell behind in a churn.
func behind(notes []string) string {
	if len(notes) == 0 {
		return "nothing fell behind"
	}
	return "behind: " + strings.Join(notes, "; ")
}
