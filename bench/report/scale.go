package report

import (
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/syncpod/syncpod/bench"
)

// ScaleSection is the document's section of many nodes under one control
// plane (bench.NodeScale): each side's reports, at one node count or
// several.
type ScaleSection struct {
	Title   string
	Reports []bench.ScaleReport
}

// scaleMethod says how the Scale section's numbers were measured.
const scaleMethod = `Each side's nodes join one private control plane (etcd and
kube-apiserver on loopback, started fresh for the run), one side after the
other; the first side's Node objects are deleted before the second starts.
The hollow kubelet is upstream's kubemark (` + "`--morph=kubelet`" + `, one process
a node, its fake runtime in-process); a syncpod node is its own
syncpod-node, planner (its own database), executor and PLEG beside its own
crisim in simulated mode (state only, no processes), by default every
node in one ` + "`syncpod-all`" + ` process (as kubemark can run many hollow nodes in
one), else one process a node or five (the runs below say which). Each node
has its own credentials (user ` + "`system:node:NAME`" + ` in ` + "`system:nodes`" + `, the
Node authorizer and NodeRestriction on). No scheduler runs: pods are created
bound to the nodes round-robin (` + "`spec.nodeName`" + `), the same for both sides,
at the given rate, one container each and no volumes, then deleted at the
same rate.

- **Pod startup** is each pod's create sent → a watch sees it Running
  with its container running (upstream's pod startup SLI, both ends on
  the client's clock); deletion is delete sent → the watch sees it
  removed. Percentiles are nearest-rank.
- **CPU** is user + system time from ` + "`/proc/PID/stat`" + `, summed over a node's
  processes (a process that runs several nodes divided evenly among them:
  for one process of every node, its total over the node count, and the
  busiest node is then the mean), over the idle window (the nodes Ready, no pods) and the load
  window (first create to last pod gone), in percent of one core per
  node (the mean over the nodes; max: the busiest node), and under load
  also as CPU time per pod (the window grows with the node count, so the
  percentage alone shrinks).
- **Memory** is PSS from ` + "`/proc/PID/smaps_rollup`" + `, summed over a node's
  processes as CPU is (pages shared with the other nodes' copies of the same
  binary counted in part; RSS counts them whole), at the window's end;
  the peak is the largest of the samples taken under load.
- **API requests** come from the API server's audit log (Metadata level,
  every request, counted once at RequestReceived; failed ones, answered
  400 or more, from their ResponseComplete stage) by the node's user, per
  node per minute, by verb and resource.
- **Events.** The hollow kubelet hands its events to a fake recorder
  (upstream's choice: a real one reads the host's kernel log), so it sends
  none; a syncpod node posts them as a kubelet does. One row leaves them
  out of both sides.
- **Ratios** are syncpod over kubemark.

`

// writeScaleSection writes one Scale section: the method, then one table
// per node count, each side's reports at that count side by side, with
// links to its plots in plotDir; it returns the plots.
func writeScaleSection(b *strings.Builder, s ScaleSection, plotDir string) ([]Plot, error) {
	fmt.Fprintf(b, "## %s\n\n", s.Title)
	b.WriteString(scaleMethod)
	return writeScaleCounts(b, s.Reports, plotDir)
}

// ScaleTables are the ScaleTable of each node count of reps, fewest
// nodes first.
func ScaleTables(reps []bench.ScaleReport) string {
	var b strings.Builder
	for _, n := range nodeCounts(reps) {
		b.WriteString(ScaleTable(atCount(reps, n)))
		b.WriteString("\n")
	}
	return b.String()
}

// writeScaleCounts writes the ScaleTable of each node count of reps,
// fewest nodes first, each followed by the links to its plots (in
// plotDir), and returns the plots.
func writeScaleCounts(b *strings.Builder, reps []bench.ScaleReport, plotDir string) ([]Plot, error) {
	var all []Plot
	for _, n := range nodeCounts(reps) {
		at := atCount(reps, n)
		b.WriteString(ScaleTable(at))
		b.WriteString("\n")
		plots, err := scalePlots(at)
		if err != nil {
			return nil, fmt.Errorf("%d nodes: %w", n, err)
		}
		for _, p := range plots {
			fmt.Fprintf(b, "![%s](%s)\n\n", p.Title, path.Join(plotDir, p.Name))
		}
		all = append(all, plots...)
	}
	return all, nil
}

// nodeCounts are the node counts of reps, fewest first.
func nodeCounts(reps []bench.ScaleReport) []int {
	counts := []int{}
	for _, r := range reps {
		if !slices.Contains(counts, r.Nodes) {
			counts = append(counts, r.Nodes)
		}
	}
	slices.Sort(counts)
	return counts
}

// atCount are the reports of reps at n nodes.
func atCount(reps []bench.ScaleReport, n int) []bench.ScaleReport {
	var at []bench.ScaleReport
	for _, r := range reps {
		if r.Nodes == n {
			at = append(at, r)
		}
	}
	return at
}

// scalePlotPrefix begins the name of every plot of the Scale section.
const scalePlotPrefix = "scale-"

// scalePlots draws one node count's plots (reps are its sides' runs): the
// sides' pod startup latency distributions, one plot, and each side's
// startup latency against the pods created so far.
func scalePlots(reps []bench.ScaleReport) ([]Plot, error) {
	if len(reps) == 0 {
		return nil, nil
	}
	r0 := reps[0]
	var sides []string
	startup := map[string]bench.Sample{}
	for _, r := range reps {
		if len(r.Startup) == 0 || slices.Contains(sides, r.Side) {
			continue
		}
		sides = append(sides, r.Side)
		startup[r.Side] = r.Startup
	}
	if len(sides) == 0 {
		return nil, nil
	}
	var out []Plot
	svg, err := cdfPlot(fmt.Sprintf("pod startup latency, %d nodes, %d pods a node created at %g/s", r0.Nodes, r0.PodsPerNode, r0.CreateRate), sides, startup)
	if err != nil {
		return nil, fmt.Errorf("startup latency plot: %w", err)
	}
	if svg != nil {
		out = append(out, Plot{Name: fmt.Sprintf("%s%d-nodes-startup-latency.svg", scalePlotPrefix, r0.Nodes),
			Title: fmt.Sprintf("%d nodes: pod startup latency distribution, both sides", r0.Nodes), SVG: svg})
	}
	svg, err = startupAgainstPods(fmt.Sprintf("pod startup latency against pods created, %d nodes", r0.Nodes), sides, startup)
	if err != nil {
		return nil, fmt.Errorf("startup against pods plot: %w", err)
	}
	if svg != nil {
		out = append(out, Plot{Name: fmt.Sprintf("%s%d-nodes-startup-against-pods.svg", scalePlotPrefix, r0.Nodes),
			Title: fmt.Sprintf("%d nodes: pod startup latency against the pods created so far", r0.Nodes), SVG: svg})
	}
	return out, nil
}

// startupAgainstPods draws each side's startup latencies, in the order
// the pods were created, against how many had been created: the median
// of each run of consecutive pods (at most startupPoints points a side),
// so that a node that slows down as its pods add up shows as a rising
// line.
func startupAgainstPods(title string, sides []string, samples map[string]bench.Sample) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "pods created"
	p.Legend.Top, p.Legend.Left = true, true
	drawn, per := 0, 1
	for _, side := range sides {
		per = max(per, (len(samples[side])+startupPoints-1)/startupPoints)
	}
	p.Y.Label.Text = fmt.Sprintf("startup latency, milliseconds (median of each %d pods)", per)
	for i, side := range sides {
		s := samples[side]
		var xys plotter.XYs
		for j := 0; j < len(s); j += per {
			run := bench.Sample(slices.Clone(s[j:min(j+per, len(s))]))
			xys = append(xys, plotter.XY{X: float64(min(j+per, len(s))), Y: run.Median() * 1000})
		}
		if len(xys) == 0 {
			continue
		}
		if err := addLine(p, xys, i, fmt.Sprintf("%s (n=%d)", side, len(s))); err != nil {
			return nil, err
		}
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	p.X.Min, p.Y.Min = 0, 0
	p.Add(plotter.NewGrid())
	return svgOf(p)
}

// startupPoints bounds the points of a side's line in startupAgainstPods.
const startupPoints = 100

// ScaleTable is the Markdown of one node count's runs: a heading, the
// measures of each side in a column (ratio of the second to the first
// last), the requests by class, the CPU and memory by process, and the
// runs.
func ScaleTable(reps []bench.ScaleReport) string {
	var b strings.Builder
	if len(reps) == 0 {
		return ""
	}
	r0 := reps[0]
	fmt.Fprintf(&b, "### %d nodes, %d pods a node (%d pods, created at %g/s)\n\n", r0.Nodes, r0.PodsPerNode, r0.Nodes*r0.PodsPerNode, r0.CreateRate)
	head := []string{"per node"}
	for _, r := range reps {
		head = append(head, r.Side)
	}
	two := len(reps) == 2
	if two {
		head = append(head, reps[1].Side+" / "+reps[0].Side)
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat(" --- |", len(head)) + "\n")
	type row struct {
		name string
		val  func(bench.ScaleReport) float64
		f    string
	}
	pct := func(q float64) func(bench.ScaleReport) float64 {
		return func(r bench.ScaleReport) float64 { return r.Startup.Percentiles(q)[0] }
	}
	del := func(q float64) func(bench.ScaleReport) float64 {
		return func(r bench.ScaleReport) float64 { return r.Deletion.Percentiles(q)[0] }
	}
	rows := []row{
		{"pod startup p50 (s)", pct(0.5), "%.3f"},
		{"pod startup p90 (s)", pct(0.9), "%.3f"},
		{"pod startup p99 (s)", pct(0.99), "%.3f"},
		{"pods not Running in time", func(r bench.ScaleReport) float64 { return float64(r.NotRunning) }, "%.0f"},
		{"creates a second, achieved (all nodes)", func(r bench.ScaleReport) float64 {
			if !(r.CreatedSeconds > 0) {
				return math.NaN()
			}
			return float64(r.Nodes*r.PodsPerNode) / r.CreatedSeconds
		}, "%.1f"},
		{"first create → last pod Running (s)", func(r bench.ScaleReport) float64 { return r.RunningSeconds }, "%.1f"},
		{"deletion p50 (s)", del(0.5), "%.3f"},
		{"deletion p99 (s)", del(0.99), "%.3f"},
		{"every node Ready after start (s)", func(r bench.ScaleReport) float64 { return r.ReadySeconds }, "%.1f"},
		{"CPU idle (% of a core)", func(r bench.ScaleReport) float64 { return r.Idle.Usage.CPU }, "%.2f"},
		{"CPU idle, busiest node", func(r bench.ScaleReport) float64 { return r.Idle.Usage.CPUMax }, "%.2f"},
		{"CPU under load (% of a core)", func(r bench.ScaleReport) float64 { return r.Load.Usage.CPU }, "%.2f"},
		{"CPU under load, busiest node", func(r bench.ScaleReport) float64 { return r.Load.Usage.CPUMax }, "%.2f"},
		{"CPU time under load per pod (ms)", cpuPerPod, "%.1f"},
		{"PSS idle (MB)", func(r bench.ScaleReport) float64 { return r.Idle.Usage.PSS }, "%.1f"},
		{"PSS peak under load (MB)", func(r bench.ScaleReport) float64 { return r.Load.Usage.PeakPSS }, "%.1f"},
		{"RSS idle (MB, shared pages whole)", func(r bench.ScaleReport) float64 { return r.Idle.Usage.RSS }, "%.1f"},
		{"API requests from start to idle (all, a node)", func(r bench.ScaleReport) float64 {
			if !(r.JoinSeconds > 0) {
				return math.NaN() // a report from before it was counted
			}
			return r.Join.Total * r.JoinSeconds / 60
		}, "%.0f"},
		{"API requests a minute, idle", func(r bench.ScaleReport) float64 { return r.Idle.Requests.Total }, "%.1f"},
		{"API requests a minute, under load", func(r bench.ScaleReport) float64 { return r.Load.Requests.Total }, "%.1f"},
		{"API requests a minute under load, events left out", func(r bench.ScaleReport) float64 { return withoutEvents(r.Load.Requests) }, "%.1f"},
		{"API requests a minute under load, busiest node", func(r bench.ScaleReport) float64 { return r.Load.Requests.MaxNode }, "%.1f"},
	}
	for _, rw := range rows {
		cells := []string{rw.name}
		vals := []float64{}
		measured := false
		for _, r := range reps {
			v := rw.val(r)
			vals = append(vals, v)
			cells = append(cells, num(rw.f, v))
			measured = measured || !math.IsNaN(v)
		}
		if !measured {
			continue // no side has it
		}
		if two {
			cells = append(cells, ratio(vals[0], vals[1]))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\n")
	writeRequestClasses(&b, reps)
	writeByKind(&b, reps)
	writeProfiles(&b, reps)
	writeGoals(&b, fmt.Sprintf("Against the goals: a syncpod node at most %.1f× a hollow node's CPU and memory, fewer API requests, "+
		"pods started as fast or faster:", scaleBound), scaleGoals(reps))
	b.WriteString("The runs:\n\n")
	for _, r := range reps {
		v := r.Version
		if v == "" {
			v = "unknown version"
		}
		fmt.Fprintf(&b, "- %s (%s), %d nodes%s, started %s, load average %.2f %.2f %.2f at the start and %.2f %.2f %.2f at the end",
			r.Side, v, r.Nodes, processes(r), r.Started.UTC().Format("2006-01-02T15:04:05Z"), r.LoadStart[0], r.LoadStart[1], r.LoadStart[2],
			r.LoadEnd[0], r.LoadEnd[1], r.LoadEnd[2])
		if len(r.Errors) > 0 {
			fmt.Fprintf(&b, "; errors: %s", strings.Join(r.Errors, "; "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// processes says how many processes a run's nodes were, when known.
func processes(r bench.ScaleReport) string {
	switch {
	case r.Processes <= 0:
		return ""
	case r.Processes == 1:
		return " in one process"
	case r.Processes == r.Nodes:
		return " in one process each"
	case r.Processes%r.Nodes == 0:
		return fmt.Sprintf(" in %d processes (%d a node)", r.Processes, r.Processes/r.Nodes)
	}
	return fmt.Sprintf(" in %d processes", r.Processes)
}

// writeRequestClasses writes the requests per node per minute by class,
// idle and under load, for each side, then those that failed by class
// and code.
func writeRequestClasses(b *strings.Builder, reps []bench.ScaleReport) {
	writeClasses(b, reps, "requests per node per minute", func(p bench.ScalePhase) map[string]float64 { return p.Requests.ByClass })
	writeClasses(b, reps, "failed requests per node per minute (class and code)", func(p bench.ScalePhase) map[string]float64 { return p.Failed.ByClass })
}

// writeClasses writes one table of classes: those any side sent at 0.05
// a minute or more, busiest first; nothing when there are none.
func writeClasses(b *strings.Builder, reps []bench.ScaleReport, title string, of func(bench.ScalePhase) map[string]float64) {
	peak := map[string]float64{}
	for _, r := range reps {
		for _, m := range []map[string]float64{of(r.Idle), of(r.Load)} {
			for c, v := range m {
				peak[c] = math.Max(peak[c], v)
			}
		}
	}
	var classes []string
	for c, v := range peak {
		if v >= 0.05 {
			classes = append(classes, c)
		}
	}
	if len(classes) == 0 {
		return
	}
	sort.Slice(classes, func(i, j int) bool {
		if peak[classes[i]] != peak[classes[j]] {
			return peak[classes[i]] > peak[classes[j]]
		}
		return classes[i] < classes[j]
	})
	head := []string{title}
	for _, r := range reps {
		head = append(head, r.Side+", idle", r.Side+", load")
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat(" --- |", len(head)) + "\n")
	for _, c := range classes {
		cells := []string{"`" + c + "`"}
		for _, r := range reps {
			cells = append(cells, num("%.2f", of(r.Idle)[c]), num("%.2f", of(r.Load)[c]))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\n")
}

// writeByKind writes, for a side of more than one process a node, the
// CPU and PSS per node of each kind of process.
func writeByKind(b *strings.Builder, reps []bench.ScaleReport) {
	for _, r := range reps {
		if len(r.Load.Usage.CPUByKind) < 2 {
			continue
		}
		kinds := make([]string, 0, len(r.Load.Usage.CPUByKind))
		for k := range r.Load.Usage.CPUByKind {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %.2f %% idle, %.2f %% under load, %.1f MB PSS", k,
				r.Idle.Usage.CPUByKind[k], r.Load.Usage.CPUByKind[k], r.Idle.Usage.PSSByKind[k]))
		}
		fmt.Fprintf(b, "%s per node by process: %s.\n\n", r.Side, strings.Join(parts, "; "))
	}
}

// cpuPerPod is a node's CPU time over the load window per pod it ran, in
// ms: unlike the percentage, it does not shrink as more nodes share a
// longer window.
func cpuPerPod(r bench.ScaleReport) float64 {
	if r.PodsPerNode <= 0 {
		return math.NaN()
	}
	return r.Load.Usage.CPU / 100 * r.Load.Usage.WindowSecs / float64(r.PodsPerNode) * 1000
}

// withoutEvents is r's total less its requests on events (kubemark's
// hollow kubelet records its events to a fake recorder and sends none).
func withoutEvents(r bench.RequestRates) float64 {
	t := r.Total
	for c, v := range r.ByClass {
		if _, res, _ := strings.Cut(c, " "); res == "events" {
			t -= v
		}
	}
	return t
}

func num(f string, v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf(f, v)
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || a <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", b/a)
}

// ScaleDocument is a Scale section on its own, to be spliced into an
// existing document (SpliceSection): its heading, when and where it was
// measured (the rest of the document may come from other runs), the
// method, the tables and the links to the plots (in in.PlotDir), which it
// returns. It fails only when a plot cannot be drawn.
func ScaleDocument(s ScaleSection, in Input) (string, []Plot, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", s.Title)
	m := in.Machine
	fmt.Fprintf(&b, "Generated on %s by `syncpod-bench report-scale`", in.Generated.UTC().Format("2006-01-02 15:04 MST"))
	if in.Command != "" {
		fmt.Fprintf(&b, " at the end of `%s`", in.Command)
	}
	b.WriteString(", from the results of that run")
	if m.Cores > 0 {
		fmt.Fprintf(&b, ", on %d cores", m.Cores)
		if m.CPU != "" {
			fmt.Fprintf(&b, " (%s)", m.CPU)
		}
	}
	if m.MemoryBytes > 0 {
		fmt.Fprintf(&b, " and %.1f GiB", float64(m.MemoryBytes)/(1<<30))
	}
	var comps []string
	for _, c := range in.Components {
		comps = append(comps, c.Name+" "+c.Version)
	}
	if len(comps) > 0 {
		fmt.Fprintf(&b, "; %s", strings.Join(comps, ", "))
	}
	b.WriteString(". The rest of this document may come from other runs.\n\n")
	b.WriteString(scaleMethod)
	plots, err := writeScaleCounts(&b, s.Reports, in.PlotDir)
	if err != nil {
		return "", nil, err
	}
	return strings.TrimRight(b.String(), "\n") + "\n", plots, nil
}
