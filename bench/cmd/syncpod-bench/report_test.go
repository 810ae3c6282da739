package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/bench"
)

// TestReportWritesTheDocumentAndItsPlots: `syncpod-bench report` reads the
// reports of a section, writes the document and its plots beside it, and
// removes the plots of an earlier document.
func TestReportWritesTheDocumentAndItsPlots(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r bench.Report) string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	k := write("versus-kubelet.json", bench.Report{Agent: "kubelet", Runtime: "containerd v2.4.2", Results: []bench.Result{
		{Measure: bench.MeasureStartFileVersus, Seconds: bench.Sample{0.12, 0.13, 0.125}},
		{Measure: bench.Measure10FileVersus, Seconds: bench.Sample{0.7, 0.8}},
	}})
	s := write("versus-syncpod.json", bench.Report{Agent: "syncpod", Runtime: "containerd v2.4.2", Results: []bench.Result{
		{Measure: bench.MeasureStartFileVersus, Seconds: bench.Sample{0.11, 0.12, 0.115}, PairedWith: "kubelet", PerRound: 0.93},
		{Measure: bench.Measure10FileVersus, Seconds: bench.Sample{0.69, 0.75}, PairedWith: "kubelet", PerRound: 0.97},
	}})
	out := filepath.Join(dir, "docs", "benchmarks.md")
	stale := filepath.Join(dir, "docs", "benchmarks", "9-old.svg")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"report", "--out", out, "--command", "make bench-versus",
		"--section", "The kubelet and syncpod side by side=" + k + "," + s, "--component", "kubelet=Kubernetes v1.37.2"}, &bytes.Buffer{}, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## The kubelet and syncpod side by side", "| kubelet | Kubernetes v1.37.2 |", "`make bench-versus`",
		"](benchmarks/the-kubelet-and-syncpod-side-by-side-start-against-pods.svg)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the document lacks %q:\n%s", want, md)
		}
	}
	plots, err := filepath.Glob(filepath.Join(dir, "docs", "benchmarks", "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if len(plots) != 3 { // the two side-by-side rows and the starts against pods
		t.Errorf("plots %q, want 3", plots)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an earlier document's plot is left: %v", err)
	}
}

func TestReportWantsASection(t *testing.T) {
	for name, args := range map[string][]string{
		"no section":       {"report", "--out", "x.md"},
		"not markdown":     {"report", "--out", "x.txt", "--section", "a=b.json"},
		"section no files": {"report", "--section", "a="},
		"both":             {"report", "--out", "x.md", "--section", "a=b.json", "--density", "d.json"},
	} {
		t.Run(name, func(t *testing.T) {
			if code := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
		})
	}
}

// TestReportDensityReplacesOnlyItsSection: `report --density` puts the
// density section into the document, keeping the rest of it and the
// other sections' plots, replacing its own plots; a later full report
// carries the density section, the other sections and their plots over.
func TestReportDensityReplacesOnlyItsSection(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "benchmarks.md")
	plots := filepath.Join(dir, "benchmarks")
	if err := os.MkdirAll(plots, 0o755); err != nil {
		t.Fatal(err)
	}
	before := "# Benchmarks\n\nintro\n\n## The API-server path\n\ntable\n\n![api](benchmarks/2-api.svg)\n\n## Density\n\nan old run\n"
	for name, body := range map[string]string{out: before, filepath.Join(plots, "2-api.svg"): "<svg/>", filepath.Join(plots, "density-old.svg"): "<svg/>"} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := bench.DensityReport{Agents: []string{"kubelet", "syncpod"}, Pods: 3, Rate: 5, Bursts: []int{4}, Rounds: []bench.DensityRound{
		{Agent: "kubelet", First: true, Startup: bench.Sample{0.2, 0.3, 0.4}, Bursts: []bench.DensityBurst{{Pods: 4, AllRunning: 2, AllGone: 3}}},
		{Agent: "syncpod", Startup: bench.Sample{0.1, 0.2, 0.3}, Bursts: []bench.DensityBurst{{Pods: 4, AllRunning: 1, AllGone: 2}}},
	}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "density.json")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"report", "--out", out, "--density", in, "--command", "make bench-density"}, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(md)
	if !strings.HasPrefix(doc, "# Benchmarks\n\nintro\n\n## The API-server path\n\ntable\n\n![api](benchmarks/2-api.svg)\n\n## Density\n") || strings.Contains(doc, "an old run") ||
		!strings.Contains(doc, "| 4 pods at once → all running | 2.00 s | 1.00 s | 0.50× |") {
		t.Errorf("the document:\n%s", doc)
	}
	names := func() []string {
		files, err := filepath.Glob(filepath.Join(plots, "*.svg"))
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range files {
			files[i] = filepath.Base(f)
		}
		return files
	}
	if got := strings.Join(names(), " "); got != "2-api.svg density-all-running-against-pods.svg density-startup-latency.svg" {
		t.Errorf("plots %s, want the other section's kept and the density ones replaced", got)
	}

	k := filepath.Join(dir, "k.json")
	if err := os.WriteFile(k, []byte(`{"agent":"kubelet","results":[{"measure":"`+bench.MeasureIdleCPU+`","value":1,"unit":"% of a core"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(context.Background(), []string{"report", "--out", out, "--section", "Idle=" + k}, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if doc := string(md); !strings.Contains(doc, "## Idle\n") || !strings.Contains(doc, "## The API-server path\n\ntable\n") ||
		!strings.Contains(doc, "| 4 pods at once → all running | 2.00 s | 1.00 s | 0.50× |") {
		t.Errorf("a full report after the density one:\n%s", doc)
	}
	if got := strings.Join(names(), " "); got != "2-api.svg density-all-running-against-pods.svg density-startup-latency.svg" {
		t.Errorf("plots %s, want the carried sections' kept", got)
	}
}
