package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/syncpod/syncpod/bench"
)

// Input is everything the document is made of.
type Input struct {
	// Command is what made the run (e.g. "make bench-kubelet").
	Command string
	// Generated is when the document was made.
	Generated time.Time
	// Machine is where the run measured.
	Machine Machine
	// Components are versions the reports do not carry (the kubelet's,
	// syncpod's own), in the order given.
	Components []Component
	// Sections are the run's tables, in order: each the reports that
	// bench.Table puts side by side.
	Sections []Section
	// Scale are the sections of many nodes under one control plane
	// (scale.go), after Sections.
	Scale []ScaleSection
	// PlotDir is the plots' directory relative to the document (e.g.
	// "benchmarks"), for the links.
	PlotDir string
}

// Section is one table of the document and its plots.
type Section struct {
	Title   string
	Reports []bench.Report
}

// Component is a named version (e.g. kubelet, "Kubernetes v1.37.2").
type Component struct {
	Name, Version string
}

// Output is the document and its plots.
type Output struct {
	Markdown []byte
	Plots    []Plot
}

// Plot is one SVG file of the document, named relative to Input.PlotDir,
// and what it draws (its alternative text in the document).
type Plot struct {
	Name  string
	Title string
	SVG   []byte
}

// Render makes the document of in. It fails only when a plot cannot be
// drawn.
func Render(in Input) (Output, error) {
	var out Output
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Generated on %s by `syncpod-bench report`", in.Generated.UTC().Format("2006-01-02 15:04 MST"))
	if in.Command != "" {
		fmt.Fprintf(&b, " at the end of `%s`", in.Command)
	}
	b.WriteString(". Each section says which run it comes from: a run replaces its own sections and keeps " +
		"those of other runs (another runtime, the Density and Scale sections). Do not edit: run it again. " +
		"How to run it, and what the rows show so far, is in the README (Performance).\n\n")
	b.WriteString(method)
	writeMachine(&b, in)
	for _, s := range in.Sections {
		plots, err := sectionPlots(s)
		if err != nil {
			return Output{}, fmt.Errorf("%s: %w", s.Title, err)
		}
		writeSection(&b, in, s, plots)
		out.Plots = append(out.Plots, plots...)
	}
	for _, s := range in.Scale {
		plots, err := writeScaleSection(&b, s, in.PlotDir)
		if err != nil {
			return Output{}, fmt.Errorf("%s: %w", s.Title, err)
		}
		out.Plots = append(out.Plots, plots...)
	}
	out.Markdown = []byte(strings.TrimRight(b.String(), "\n") + "\n")
	return out, nil
}

// method says how every number of the document was measured; it is the
// same for every run.
var method = `## Method

Every agent is asked for the same pods: one busybox container each (a
shell looping on ` + "`sleep 1`" + ` that ignores SIGTERM, so a deletion takes the
whole ` + fmt.Sprint(bench.GracePeriod) + ` s grace period), host network, the images already in the runtime.
Each agent runs on a private containerd, started fresh and identical
for its phase (the floor alternating with an agent shares the agent's; the
many-pods rows run on crisim, syncpod's CRI simulator, without
processes); the kubelet runs standalone from static pod files, or
joined to a private kube-apiserver in the API-server rows;
syncpod is its three services, asked through the planner's API or a
manifest file; the raw-CRI floor is a small CRI client that does
RunPodSandbox, image status, CreateContainer and StartContainer itself,
the least any agent can do.

- **Times** come from the runtime: a container's start as CRI
  ContainerStatus reports it, against the host clock read just before the
  pods were asked for. A deletion ends when the last sandbox is seen
  stopped. The bench looks at the runtime on each of its CRI events where
  it offers them, and lists it every ` + fmt.Sprint(bench.PollInterval.Milliseconds()) + ` ms where it does not.
- **Alternating rows** run two agents round by round, the first one first
  in even rounds and the second in odd ones, so a load that changes over
  the run weighs on both alike: an agent and the floor on one runtime, or
  the kubelet and syncpod each on its own runtime, both running all
  along. Other rows of two agents come from phases run one after the
  other.
- **Cells** are the median and the p99 of the samples (nearest rank) and
  their number n; notes in brackets split a time or give what else was
  measured with it.
- **Ratios** (last column) are the second agent over the first. Where the
  two alternated, the ratio is the median of the per-round ratios, with
  its 95 % confidence interval from the order statistics (no assumption
  about the distribution; 6 rounds or more) and the ratio of the medians
  after it: an interval that holds 1 says this run cannot tell the two
  agents apart on that row. Elsewhere it is the ratio of the medians.
- **Plots.** Every row that two or more agents measured at least twice
  is drawn as one box plot per agent (the box spans the quartiles, the
  line in it is the median, the whiskers reach the furthest samples
  within 1.5 box heights, samples beyond are drawn alone), every sample
  a dot beside its box. The start of the last of N pods asked for at once
  is drawn against N for each agent and way in, on logarithmic axes: the
  median, and its 95 % confidence interval where there were samples
  enough.
- **Goals.** Each section of the kubelet beside syncpod (here, Density
  and Scale) ends with the goals syncpod holds itself to on its rows, the
  measured ratio and whether it held. For a goal missed, the last column
  says what limits the row, worked out from the same run's samples: the
  runtime's share of a start (sandbox created → started) and what
  syncpod's time would be with no part of its own; the raw-CRI floor that
  alternated with syncpod on one runtime and the ratio at its pace; a
  burst's last start by the runtime's own clock; the agents' memory
  before their first pod; how busy the machine was; where syncpod's CPU
  went in a profile taken under load.

`

// writeMachine writes the machine's section: its facts, the runtimes the
// reports name and the components given.
func writeMachine(b *strings.Builder, in Input) {
	m := in.Machine
	b.WriteString("## Machine\n\n| | |\n| --- | --- |\n")
	row := func(k, v string) {
		if v == "" {
			v = "unknown"
		}
		fmt.Fprintf(b, "| %s | %s |\n", k, v)
	}
	row("date", in.Generated.UTC().Format("2006-01-02"))
	cores := ""
	if m.Cores > 0 {
		cores = fmt.Sprint(m.Cores)
		if m.CPU != "" {
			cores += " (" + m.CPU + ")"
		}
	}
	row("cores", cores)
	mem := ""
	if m.MemoryBytes > 0 {
		mem = fmt.Sprintf("%.1f GiB", float64(m.MemoryBytes)/(1<<30))
	}
	row("memory", mem)
	row("kernel", m.Kernel)
	row("operating system", m.OS)
	// The runtimes, each once, with the agents that ran on it.
	var runtimes []string
	agents := map[string][]string{}
	for _, s := range in.Sections {
		for _, r := range s.Reports {
			if r.Runtime == "" {
				continue
			}
			if _, ok := agents[r.Runtime]; !ok {
				runtimes = append(runtimes, r.Runtime)
			}
			if !slices.Contains(agents[r.Runtime], r.Agent) {
				agents[r.Runtime] = append(agents[r.Runtime], r.Agent)
			}
		}
	}
	for _, rt := range runtimes {
		row("runtime", rt+" ("+strings.Join(agents[rt], ", ")+")")
	}
	for _, c := range in.Components {
		row(c.Name, c.Version)
	}
	b.WriteString("\n")
}

// writeSection writes one table, which run it comes from (a later run
// may carry it over, Merge) and the links to its plots.
func writeSection(b *strings.Builder, in Input, s Section, plots []Plot) {
	fmt.Fprintf(b, "## %s\n\n", s.Title)
	fmt.Fprintf(b, "Measured by `%s`, written %s.\n\n", cmp.Or(in.Command, "syncpod-bench report"), in.Generated.UTC().Format("2006-01-02 15:04 MST"))
	plotDir := in.PlotDir
	b.WriteString(bench.MarkdownTable(s.Reports))
	b.WriteString("\n")
	writeGoals(b, fmt.Sprintf("Against the goals: every row at most %.1f× the kubelet's time, idle CPU at most %.1f× its CPU "+
		"(what limits a row that misses is read from this run's own samples):", rowBound, idleBound), sectionGoals(s))
	b.WriteString("The runs:\n\n")
	for _, l := range bench.RunLines(s.Reports) {
		b.WriteString("- " + l + "\n")
	}
	b.WriteString("\n")
	for _, p := range plots {
		fmt.Fprintf(b, "![%s](%s)\n\n", p.Title, linkPath(plotDir, p.Name))
	}
}

// linkPath is a plot's path relative to the document.
func linkPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}
