package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/syncpod/syncpod/bench"
)

var update = flag.Bool("update", false, "rewrite testdata/benchmarks.md from Render's output")

// samples are n synthetic durations around base seconds, spread by
// spread, deterministic.
func samples(n int, base, spread float64) bench.Sample {
	s := make(bench.Sample, n)
	for i := range s {
		s[i] = base + spread*float64((i*7)%n)/float64(n)
	}
	return s
}

// kubeletRun is what make bench-kubelet passes: each agent's own phase,
// the side-by-side run, and the API-server path in a section of its own.
func kubeletRun() Input {
	started := time.Date(2026, 11, 27, 7, 44, 0, 0, time.UTC)
	rt := "containerd v2.4.2"
	ci := &[2]float64{0.92, 0.98}
	return Input{
		Command:   "make bench-kubelet",
		Generated: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC),
		Machine:   Machine{Cores: 2, CPU: "Test CPU @ 2.0GHz", MemoryBytes: 4 << 30, Kernel: "Linux 6.12.48", OS: "Debian GNU/Linux 13 (trixie)"},
		Components: []Component{
			{"kubelet", "Kubernetes v1.37.2"},
			{"syncpod", "0a9418a"},
		},
		PlotDir: "benchmarks",
		Sections: []Section{
			{Title: "The kubelet, syncpod and the raw-CRI floor", Reports: []bench.Report{
				{Agent: "kubelet", Runtime: rt, Started: started, Load: [3]float64{1.3, 1.1, 0.9}, Results: []bench.Result{
					{Measure: bench.Measure50File, Seconds: bench.Sample{4.1}},
					{Measure: bench.MeasureReplacement, Seconds: samples(10, 10.2, 0.5)},
					{Measure: bench.MeasureIdleCPU, Value: 3.1, Unit: "% of a core"},
				}},
				{Agent: "syncpod", Runtime: rt, Started: started.Add(4 * time.Minute), Load: [3]float64{1.2, 1.1, 0.9}, Results: []bench.Result{
					{Measure: bench.MeasureStartAPI, Seconds: samples(5, 0.118, 0.01)},
					{Measure: bench.Measure10API, Seconds: samples(3, 0.70, 0.05)},
					{Measure: bench.Measure50File, Seconds: bench.Sample{2.2}},
					{Measure: bench.MeasureReplacement, Seconds: samples(10, 0.9, 0.1)},
					{Measure: bench.MeasureIdleCPU, Value: 0.28, Unit: "% of a core"},
				}},
				{Agent: "cri", Runtime: rt, Started: started.Add(8 * time.Minute), Load: [3]float64{1.0, 1.0, 0.9}, Results: []bench.Result{
					{Measure: bench.MeasureStartAPI, Seconds: samples(5, 0.110, 0.01)},
					{Measure: bench.Measure10API, Seconds: samples(3, 0.65, 0.05)},
					{Measure: bench.Measure50API, Seconds: bench.Sample{1.9}},
				}},
				{Agent: "kubelet", Runtime: rt, Started: started.Add(10 * time.Minute), Load: [3]float64{1.1, 1.0, 0.9}, Results: []bench.Result{
					{Measure: bench.MeasureStartFileVersus, Seconds: samples(30, 0.124, 0.02),
						Split: &bench.Split{ToSandbox: samples(30, 0.010, 0.002), Runtime: samples(30, 0.114, 0.02)}},
					{Measure: bench.Measure10FileVersus, Seconds: samples(15, 0.76, 0.08)},
				}},
				{Agent: "syncpod", Runtime: rt, Started: started.Add(10 * time.Minute), Load: [3]float64{1.1, 1.0, 0.9}, Results: []bench.Result{
					{Measure: bench.MeasureStartFileVersus, Seconds: samples(30, 0.117, 0.02), Note: "[median per-round ratio syncpod / kubelet 0.95× (95 % CI 0.92–0.98×)]",
						PairedWith: "kubelet", PerRound: 0.95, PerRoundCI: ci,
						Split: &bench.Split{ToSandbox: samples(30, 0.006, 0.002), Runtime: samples(30, 0.111, 0.02)}},
					{Measure: bench.Measure10FileVersus, Seconds: samples(15, 0.74, 0.08), PairedWith: "kubelet", PerRound: 0.98},
					{Measure: bench.Measure10Paired, Seconds: samples(2, 0.73, 0.02), Floor: samples(2, 0.70, 0.02), FloorRatio: 1.04},
				}},
			}},
			{Title: "The API-server path", Reports: []bench.Report{
				{Agent: "kubelet", Runtime: rt, Started: started.Add(14 * time.Minute), Results: []bench.Result{
					{Measure: bench.MeasureAPIServerRunning, Seconds: samples(20, 1.10, 0.2)},
					{Measure: bench.MeasureAPIServerNode, Seconds: samples(20, 0.030, 0.005)},
					{Measure: bench.MeasureAPIServerRuntime, Seconds: samples(20, 1.07, 0.2)},
				}},
				{Agent: "syncpod", Runtime: rt, Started: started.Add(15 * time.Minute), Results: []bench.Result{
					{Measure: bench.MeasureAPIServerRunning, Seconds: samples(20, 0.99, 0.2)},
					{Measure: bench.MeasureAPIServerNode, Seconds: samples(20, 0.024, 0.005)},
					{Measure: bench.MeasureAPIServerRuntime, Seconds: samples(20, 0.97, 0.2)},
				}},
			}},
			{Title: "Many pods", Reports: []bench.Report{
				{Agent: "syncpod on crisim", Runtime: "crisim 0.1.0", Started: started.Add(16 * time.Minute), Results: []bench.Result{
					{Measure: bench.MeasureScaleStart, Seconds: bench.Sample{21.5}, Pods: 2000, Note: "[2000 pods]"},
					{Measure: bench.MeasureScaleRSS, Value: 61, Unit: "MB"},
				}},
			}},
		},
	}
}

// TestRenderGolden: the document of a synthetic bench-kubelet run, byte
// for byte (go test -run TestRenderGolden -update rewrites it).
func TestRenderGolden(t *testing.T) {
	out, err := Render(kubeletRun())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "benchmarks.md")
	if *update {
		if err := os.WriteFile(golden, out.Markdown, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(out.Markdown, want) {
		t.Errorf("the document differs from %s (go test -update rewrites it after a deliberate change):\n%s", golden, out.Markdown)
	}
}

// TestRenderIsPure: the same input gives the same document and plots.
func TestRenderIsPure(t *testing.T) {
	a, err := Render(kubeletRun())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(kubeletRun())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Markdown, b.Markdown) || len(a.Plots) != len(b.Plots) {
		t.Fatal("two renders of one input differ")
	}
	for i := range a.Plots {
		if a.Plots[i].Name != b.Plots[i].Name || !bytes.Equal(a.Plots[i].SVG, b.Plots[i].SVG) {
			t.Errorf("plot %s differs between two renders of one input", a.Plots[i].Name)
		}
	}
}

// TestPlotsAreWellFormedSVGWithTheirSeries: a plot per row two agents
// measured several times, and one of start against pods per section with
// two pod counts or more; each parses as XML, is an SVG document, is
// linked from the document and names its series.
func TestPlotsAreWellFormedSVGWithTheirSeries(t *testing.T) {
	out, err := Render(kubeletRun())
	if err != nil {
		t.Fatal(err)
	}
	sec := slug("The kubelet, syncpod and the raw-CRI floor") + "-"
	want := map[string][]string{
		sec + slug(bench.MeasureStartAPI) + ".svg":        {"syncpod (n=5)", "cri (n=5)"},
		sec + slug(bench.Measure10API) + ".svg":           {"syncpod (n=3)", "cri (n=3)"},
		sec + slug(bench.MeasureReplacement) + ".svg":     {"kubelet (n=10)", "syncpod (n=10)"},
		sec + slug(bench.MeasureStartFileVersus) + ".svg": {"kubelet (n=30)", "syncpod (n=30)"},
		sec + slug(bench.Measure10FileVersus) + ".svg":    {"kubelet (n=15)", "syncpod (n=15)"},
		sec + podsPlotSuffix: {
			"kubelet, manifest file", "kubelet, manifest file, alternating the two agents",
			"syncpod, API", "syncpod, manifest file", "syncpod, manifest file, alternating the two agents",
			"cri, API",
		},
		slug("The API-server path") + "-" + slug(bench.MeasureAPIServerRunning) + ".svg": {"kubelet (n=20)", "syncpod (n=20)"},
		slug("The API-server path") + "-" + slug(bench.MeasureAPIServerNode) + ".svg":    {"kubelet (n=20)", "syncpod (n=20)"},
		slug("The API-server path") + "-" + slug(bench.MeasureAPIServerRuntime) + ".svg": {"kubelet (n=20)", "syncpod (n=20)"},
	}
	var names []string
	for _, p := range out.Plots {
		names = append(names, p.Name)
		series, ok := want[p.Name]
		if !ok {
			t.Errorf("unexpected plot %s", p.Name)
			continue
		}
		texts, err := svgTexts(p.SVG)
		if err != nil {
			t.Errorf("%s: not well-formed SVG: %v", p.Name, err)
			continue
		}
		for _, s := range series {
			if !slices.Contains(texts, s) {
				t.Errorf("%s does not name the series %q; its texts: %q", p.Name, s, texts)
			}
		}
		if link := "(benchmarks/" + p.Name + ")"; !bytes.Contains(out.Markdown, []byte(link)) {
			t.Errorf("the document does not link %s", link)
		}
	}
	for n := range want {
		if !slices.Contains(names, n) {
			t.Errorf("no plot %s; plots: %q", n, names)
		}
	}
}

// svgTexts parses an SVG document and returns its text elements' content;
// an error when it is not well-formed XML or its root is not svg.
func svgTexts(b []byte) ([]string, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	var texts []string
	root, inText := "", false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = t.Name.Local
			}
			inText = t.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(t)))
			}
		}
	}
	if root != "svg" {
		return nil, errors.New("the root element is " + root + ", not svg")
	}
	return texts, nil
}

// TestNoPodsPlotWithOnePodCount: the start-against-pods plot needs two
// pod counts or more.
func TestNoPodsPlotWithOnePodCount(t *testing.T) {
	in := Input{Sections: []Section{{Title: "one", Reports: []bench.Report{
		{Agent: "syncpod", Results: []bench.Result{{Measure: bench.MeasureStartAPI, Seconds: samples(5, 0.1, 0.01)}}},
		{Agent: "cri", Results: []bench.Result{{Measure: bench.MeasureStartAPI, Seconds: bench.Sample{0.1}}}},
	}}}}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Plots) != 0 {
		t.Errorf("plots of a section with one pod count and one agent measured more than once: %v", out.Plots[0].Name)
	}
}

func TestReadMachine(t *testing.T) {
	root := fstest.MapFS{
		"proc/cpuinfo":              {Data: []byte("processor\t: 0\nmodel name\t: Test CPU\n\nprocessor\t: 1\nmodel name\t: Test CPU\n")},
		"proc/meminfo":              {Data: []byte("MemTotal:        4019876 kB\nMemFree:          100 kB\n")},
		"proc/sys/kernel/ostype":    {Data: []byte("Linux\n")},
		"proc/sys/kernel/osrelease": {Data: []byte("6.12.48\n")},
		"etc/os-release":            {Data: []byte("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n")},
	}
	want := Machine{Cores: 2, CPU: "Test CPU", MemoryBytes: 4019876 * 1024, Kernel: "Linux 6.12.48", OS: "Debian GNU/Linux 13 (trixie)"}
	if got := ReadMachine(root); got != want {
		t.Errorf("ReadMachine = %+v, want %+v", got, want)
	}
	if got := ReadMachine(fstest.MapFS{}); got != (Machine{}) {
		t.Errorf("ReadMachine of nothing = %+v, want all unknown", got)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		bench.MeasureStartFileVersus: "desired-started-manifest-file-alternating-the-two-agents",
		"idle, 10 pods: CPU":         "idle-10-pods-cpu",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFloorLimit: the floor's pace is what syncpod's ratio to the kubelet
// would be were it as fast as the floor; an agent as fast as the floor
// already is limited by the runtime.
func TestFloorLimit(t *testing.T) {
	paired := &bench.Result{Floor: bench.Sample{0.7, 0.72}, FloorRatio: 1.2}
	for _, c := range []struct {
		ratio      float64
		floorRatio float64
		want       string
	}{
		{0.95, 1.2, "at the floor's pace syncpod would take about 0.79× the kubelet's time: syncpod's own time over the floor (20 %) is what misses"},
		{1.2, 1.2, "about 1.00× the kubelet's time, still above 0.9×: the runtime's own time is the limit"},
		{0.95, 0.97, "syncpod 0.97× its time: syncpod already goes at the floor's pace, so the runtime's own time is the limit"},
	} {
		paired.FloorRatio = c.floorRatio
		if got := floorLimit(c.ratio, paired, "started its 10 pods"); !strings.Contains(got, c.want) {
			t.Errorf("ratio %v, floor ratio %v: %q lacks %q", c.ratio, c.floorRatio, got, c.want)
		}
	}
	if got := floorLimit(0.95, nil, "started"); got != "" {
		t.Errorf("no floor row: %q", got)
	}
}
