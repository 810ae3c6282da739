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
		"](benchmarks/1-start-against-pods.svg)"} {
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
	} {
		t.Run(name, func(t *testing.T) {
			if code := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
		})
	}
}
