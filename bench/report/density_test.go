package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncpod/syncpod/bench"
)

// densityRun is a synthetic two-round density run of both agents.
func densityRun() bench.DensityReport {
	started := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	turn := func(r int, agent string, first bool, base, all float64) bench.DensityRound {
		return bench.DensityRound{Round: r, Agent: agent, First: first, Load: [3]float64{1.5, 1, 1}, Startup: samples(100, base, base),
			Bursts: []bench.DensityBurst{{Pods: 110, AllRunning: all, AllGone: all / 2, Startup: samples(110, base*4, base)},
				{Pods: 250, AllRunning: all * 2.4, AllGone: all}},
			Idle: &bench.DensityIdle{Pods: 110, CPUPercent: base * 10, RSSMB: 120, EmptyRSSMB: 90}}
	}
	return bench.DensityReport{Started: started, Load: [3]float64{1, 1, 1}, LoadEnd: [3]float64{3, 2, 1},
		Runtimes: map[string]string{"kubelet": "containerd v2.4.2", "syncpod": "containerd v2.4.2"},
		Agents:   []string{"kubelet", "syncpod"}, Pods: 100, Rate: 5, Parallel: 20, Bursts: []int{110, 250}, IdleSeconds: 30,
		Rounds: []bench.DensityRound{turn(0, "kubelet", true, 0.2, 20), turn(0, "syncpod", false, 0.15, 12),
			turn(1, "syncpod", true, 0.16, 13), turn(1, "kubelet", false, 0.21, 22)}}
}

// TestRenderDensity: the section has its heading, its method, a table
// row per measure with the ratio column, a line per round, and links its
// two plots, well-formed SVG naming both agents.
func TestRenderDensity(t *testing.T) {
	sec, plots, err := RenderDensity(DensityInput{Report: densityRun(), Command: "make bench-density",
		Generated: time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC), PlotDir: "benchmarks",
		Components: []Component{{"kubelet", "Kubernetes v1.37.2"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Density\n", "`make bench-density`", "(20 in flight)", "| measure | kubelet | syncpod | syncpod / kubelet |",
		"| pod startup SLI, 100 pods created at 5 pods/s (created → all containers started, watched): p50 / p90 / p99 |",
		"| 250 pods at once → all running | 50.40 s (rounds 48.00 s, 52.80 s) | 30.00 s (rounds 28.80 s, 31.20 s) | 0.60× |",
		"| idle at 110 pods: agent RSS per pod | 1117.09 kB | 1117.09 kB | 1.00× |",
		"| idle at 110 pods: agent RSS growth per pod over the fresh agent (first round) | 279.27 kB | 279.27 kB | 1.00× |",
		"- round 1, syncpod (first): load average 1.50 at its start",
		"- kubelet: Kubernetes v1.37.2",
		"](benchmarks/density-startup-latency.svg)", "](benchmarks/density-all-running-against-pods.svg)",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the section lacks %q:\n%s", want, sec)
		}
	}
	if len(plots) != 2 {
		t.Fatalf("%d plots, want 2", len(plots))
	}
	for _, p := range plots {
		if !IsDensityPlot(p.Name) {
			t.Errorf("plot %s is not named as the density section's", p.Name)
		}
		texts, err := svgTexts(p.SVG)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		for _, a := range []string{"kubelet", "syncpod"} {
			if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, a) }) {
				t.Errorf("%s does not name %s: %q", p.Name, a, texts)
			}
		}
	}
	if !slices.Contains(mustTexts(t, plots[0].SVG), "kubelet (n=200, p50 306 ms, p99 414 ms)") {
		t.Errorf("the latency plot's legend: %q", mustTexts(t, plots[0].SVG))
	}
}

func mustTexts(t *testing.T, svg []byte) []string {
	t.Helper()
	texts, err := svgTexts(svg)
	if err != nil {
		t.Fatal(err)
	}
	return texts
}

func TestRenderDensityWithoutRoundsDrawsNothing(t *testing.T) {
	rep := densityRun()
	rep.Rounds = nil
	sec, plots, err := RenderDensity(DensityInput{Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	if len(plots) != 0 || strings.Contains(sec, "![") {
		t.Errorf("plots %d, section links %v, want none", len(plots), strings.Contains(sec, "!["))
	}
}

// TestSpliceSection: a section is replaced where it stands, the rest byte
// for byte, or appended when the document has none; SectionOf reads it
// back.
func TestSpliceSection(t *testing.T) {
	doc := "# B\n\n## Method\n\nm\n\n## Density\n\nold\n\n## Later\n\nl\n"
	got := SpliceSection(doc, "Density", "## Density\n\nnew\n")
	if want := "# B\n\n## Method\n\nm\n\n## Density\n\nnew\n\n## Later\n\nl\n"; got != want {
		t.Errorf("in the middle:\n%q\nwant\n%q", got, want)
	}
	got = SpliceSection("# B\n\n## Density\n\nold\n", "Density", "## Density\n\nnew\n")
	if want := "# B\n\n## Density\n\nnew\n"; got != want {
		t.Errorf("at the end: %q, want %q", got, want)
	}
	got = SpliceSection("# B\n\n## Method\n\nm\n", "Density", "## Density\n\nnew\n")
	if want := "# B\n\n## Method\n\nm\n\n## Density\n\nnew\n"; got != want {
		t.Errorf("appended: %q, want %q", got, want)
	}
	if s, ok := SectionOf(doc, "Density"); !ok || s != "## Density\n\nold\n" {
		t.Errorf("SectionOf = %q, %v", s, ok)
	}
	if s, ok := SectionOf(doc, "Later"); !ok || s != "## Later\n\nl\n" {
		t.Errorf("SectionOf the last = %q, %v", s, ok)
	}
	if _, ok := SectionOf(doc, "Dens"); ok {
		t.Error("a heading's prefix matched")
	}
}

func TestRenderDensityNamesTheChurn(t *testing.T) {
	rep := densityRun()
	rep.ChurnSeconds, rep.ChurnRate = 300, 10
	rep.Rounds[0].Churn = &bench.DensityChurn{Pods: 250, Startup: samples(50, 0.3, 0.1), Created: 3000, NotStarted: 2, CPUPercent: 40,
		Cleared: 2485, ClearedSeconds: 61.4}
	rep.Rounds[3].Churn = &bench.DensityChurn{Pods: 250, Startup: samples(50, 0.3, 0.1), Created: 3000, NotStarted: 2, CPUPercent: 40, Cleared: 830, ClearedSeconds: 15, ClearFailed: true,
		Behind: []string{"the bench: clearing the 830 sandboxes kubelet left in its runtime: 1 of 830 sandboxes not removed"}}
	rep.Rounds[1].Busy, rep.Rounds[1].Waited = 42.4, 37.2
	rep.Rounds[2].Busy = 12
	sec, _, err := RenderDensity(DensityInput{Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"every 0.1 s a pod is created and the oldest one deleted, for 300 s",
		"| churn at 250 pods, 10 pods/s created and deleted for 300 s: pods deleted before seen started | 2.00 pods | — | — |",
		"its runtime still held 2485 pod sandboxes: the bench removed them through the CRI in 61 s, before the next turn\n",
		"its runtime still held 830 pod sandboxes: the bench's removal of them through the CRI, before the next turn, ended after 15 s with some left (above)\n",
		"- round 0, syncpod (second): load average 1.50 at its start, the machine's cores 42 % busy after waiting 37 s for them to be quiet\n",
		"- round 1, syncpod (first): load average 1.50 at its start, the machine's cores 12 % busy\n"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the section lacks %q:\n%s", want, sec)
		}
	}
}

func TestRenderDensityAddsFurtherRunsAsTables(t *testing.T) {
	more := densityRun()
	more.Started = time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC)
	more.Pods, more.Bursts, more.ChurnSeconds, more.ChurnRate = 0, []int{250}, 300, 10
	sec, plots, err := RenderDensity(DensityInput{Report: densityRun(), More: []bench.DensityReport{more}, PlotDir: "b"})
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(sec, "](b/density-all-running-against-pods.svg)"), strings.Index(sec, "### A further run, started 2026-11-27 21:00 UTC\n")
	if i < 0 || j < i || !strings.Contains(sec[j:], "Sizes: bursts of 250, idle window 30 s, churn 10 pods/s for 300 s; 2 rounds.") || !strings.Contains(sec[j:], "The **churn**") ||
		strings.Contains(sec[:j], "The **churn**") {
		t.Errorf("the further run is not a table of its own after the plots:\n%s", sec)
	}
	if len(plots) != 2 {
		t.Errorf("%d plots, want the first run's 2", len(plots))
	}
}

// TestDensityGoals: each goal of a run gets a row; a burst that misses its
// bound splits its time by the runtime's clock, the idle memory names the
// agents' bases, a churn that misses names how busy the machine was.
func TestDensityGoals(t *testing.T) {
	rep := densityRun()
	for i := range rep.Rounds {
		r := &rep.Rounds[i]
		if r.Agent == "syncpod" {
			// 110 pods: syncpod 0.9× the kubelet, 0.85× by the runtime's clock.
			r.Bursts[0].AllRunning = 18.9
			r.Bursts[0].RuntimeStarted = 17
			r.Idle.RSSMB, r.Idle.EmptyRSSMB = 62, 38
			r.Idle.AnonMB, r.Idle.FileMB = 29, 33
			r.Churn = &bench.DensityChurn{Pods: 250, StatusAge: bench.Sample{0.5, 2.5}, HostBusyPercent: 95, RuntimeCPUPercent: 60,
				RelistP99: 0.01, Relists: 3}
		} else {
			r.Bursts[0].RuntimeStarted = 20
			r.Idle.AnonMB, r.Idle.FileMB = 62, 58
			r.Churn = &bench.DensityChurn{Pods: 250, StatusAge: bench.Sample{1.5}, HostBusyPercent: 90, RuntimeCPUPercent: 50,
				RelistP99: 1, Relists: 280}
		}
	}
	rep.ChurnRate, rep.ChurnSeconds = 10, 300
	sec, _, err := RenderDensity(DensityInput{Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| pod startup SLI p99, 100 pods at 5 pods/s | ≤ the kubelet's, ≤ 1.00 s | 315 ms against 414 ms | met | — |",
		// The medians of the rounds: 18.9 s against 21 s.
		"| 110 pods at once → all running | ≤ 0.8× | 0.90× (18.90 s against 21.00 s) | **not met** | the runtime: by its own clock the last container started 17.00 s after the first create for syncpod, 20.00 s for the kubelet (0.85×); the rest, the node reporting it, was 1.90 s and 1.00 s: the starts themselves, not their reporting, are above 0.8× |",
		"| delete 110 pods → all gone | ≤ 0.8× | 0.60× (6.25 s against 10.50 s) | met | — |",
		"| idle at 110 pods: CPU | ≤ 0.5× | 0.76× (1.55 against 2.05 % of a core) | **not met** | — |",
		"| idle at 110 pods: RSS | ≤ 0.5× | 0.52× (62.0 against 120.0 MB) | **not met** | before its first pod syncpod took 38.0 MB (the kubelet 90.0 MB), 0.32× the kubelet's whole at 110 pods; each pod added 223 kB (the kubelet's 279 kB; first round); at 110 pods 33.0 MB of syncpod's were file-backed, its binary's pages in use (the kubelet's 58.0 MB), 29.0 MB anonymous, its heaps and stacks (62.0 MB) |",
		"| churn at 250 pods, 10 pods/s: the oldest status | ≤ 2.00 s | 2.50 s (the kubelet's 1.50 s) | **not met** | the machine: its cores were 95 % busy over syncpod's churn (90 % over the kubelet's), its runtime took 60 % of a core (50 %) |",
		"| churn at 250 pods, 10 pods/s: relist p99 | ≤ 100 ms | ≤ 10 ms over 3 relists (the kubelet's ≤ 1.00 s over 280) | met | — |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the section lacks %q:\n%s", want, sec)
		}
	}
	// One agent alone: no goals.
	rep.Agents = []string{"syncpod"}
	if got := densityGoals(rep); got != nil {
		t.Errorf("goals of one agent: %v", got)
	}
}

// TestRenderDensityListsTheBurstsCRICalls: with the runtimes read, the
// section has the CRI calls table after the measures, each phase's
// every-method row first, and the method says where the calls come from.
func TestRenderDensityListsTheBurstsCRICalls(t *testing.T) {
	rep := densityRun()
	for i := range rep.Rounds {
		b := &rep.Rounds[i].Bursts[0]
		b.StartCRI = &bench.CRIWindow{Seconds: 10, Calls: []bench.CRICall{{Method: "RunPodSandbox", Calls: 110, Seconds: 22}}}
		if rep.Rounds[i].Agent == "syncpod" {
			b.StartCRI.Calls = append(b.StartCRI.Calls, bench.CRICall{Method: "ContainerStatus", Calls: 220, Seconds: 0.22})
		}
	}
	sec, _, err := RenderDensity(DensityInput{Report: rep, Generated: time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| burst phase: CRI method | kubelet: calls × mean = runtime's time | syncpod: calls × mean = runtime's time | syncpod − kubelet calls |",
		"| **110 pods at once → all running**: every method | 110 × 200 ms = 22.00 s; 2.2 in hand on average | 330 × 67 ms = 22.22 s; 2.2 in hand on average | +220 |",
		"| 110 pods at once → all running: RunPodSandbox | 110 × 200 ms = 22.00 s | 110 × 200 ms = 22.00 s | 0 |",
		"| 110 pods at once → all running: ContainerStatus | 0 | 220 × 1.00 ms = 220 ms | +220 |",
		"`grpc_server_handling_seconds`",
	}
	at := -1
	for _, w := range want {
		i := strings.Index(sec, w)
		if i < 0 {
			t.Errorf("the section lacks %q:\n%s", w, sec)
			continue
		}
		if !strings.HasPrefix(w, "`") && i < at {
			t.Errorf("%q out of order", w)
		}
		at = i
	}
	if strings.Index(sec, "| burst phase:") < strings.Index(sec, "| measure |") {
		t.Error("the CRI calls table comes before the measures'")
	}
	if strings.Contains(sec, "delete 110 pods → all gone: every method") {
		t.Error("a phase no runtime was read in has rows")
	}
	plain, _, err := RenderDensity(DensityInput{Report: densityRun()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "| burst phase:") {
		t.Error("a run without runtime reads has a CRI calls table")
	}
}

// TestDensityGoalsNameTheRuntimesCalls: a deletion that misses its bound
// says what each runtime served: the calls, how many it had in hand, the
// method that took most of syncpod's runtime's time.
func TestDensityGoalsNameTheRuntimesCalls(t *testing.T) {
	rep := densityRun()
	for i := range rep.Rounds {
		r := &rep.Rounds[i]
		b := &r.Bursts[1] // 250 pods
		if r.Agent == "syncpod" {
			b.AllGone = 20
			b.DeleteCRI = &bench.CRIWindow{Seconds: 40, Calls: []bench.CRICall{
				{Method: "StopContainer", Calls: 250, Seconds: 6000}, {Method: "RemovePodSandbox", Calls: 250, Seconds: 100}}}
		} else {
			b.DeleteCRI = &bench.CRIWindow{Seconds: 40, Calls: []bench.CRICall{
				{Method: "StopContainer", Calls: 250, Seconds: 5750}, {Method: "ContainerStatus", Calls: 400, Seconds: 10}}}
		}
	}
	var got string
	for _, g := range densityGoals(rep) {
		if g.row == "delete 250 pods → all gone" {
			got = g.limit
		}
	}
	want := "the runtime, by its own count: syncpod made 500 CRI calls and kept 152 in its hands on average, the kubelet 650 and 144; " +
		"StopContainer took the runtime 24.00 s a call for syncpod (250 calls), 23.00 s for the kubelet (250): " +
		"syncpod asked no more of the runtime than the kubelet, so the runtime's pace is the limit"
	if got != want {
		t.Errorf("the deletion's limit:\n got %q\nwant %q", got, want)
	}
}
