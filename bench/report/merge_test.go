package report

import (
	"strings"
	"testing"
	"time"
)

// titles lists a document's "## " headings in order.
func titles(doc string) []string {
	_, secs := splitSections(doc)
	var out []string
	for _, s := range secs {
		out = append(out, s.title)
	}
	return out
}

// TestMergeKeepsTheOtherRunsSections: a bench-kubelet run on one runtime
// replaces its own sections of the document and keeps the other
// runtime's and the Density and Scale sections, which the next run on the
// other runtime keeps in turn; each section still says which run made it.
func TestMergeKeepsTheOtherRunsSections(t *testing.T) {
	run := func(rt, cmd string, at time.Time) string {
		in := kubeletRun()
		in.Command, in.Generated = cmd, at
		in.Sections = in.Sections[:2]
		for i := range in.Sections {
			in.Sections[i].Title += " on " + rt
		}
		out, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		return string(out.Markdown)
	}
	// An earlier document: a containerd 2.4 run, then the Scale and
	// Density sections their targets spliced in.
	old := run("containerd 2.4", "make bench-kubelet", time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	old = SpliceSection(old, "Scale: many nodes under one control plane", "## Scale: many nodes under one control plane\n\nscale tables\n")
	old = SpliceSection(old, DensityTitle, "## Density\n\ndensity tables\n")

	doc := Merge(run("containerd 1.6", "make bench-kubelet BENCH_RUNTIME=containerd1.6", time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)), old)
	want := []string{"Method", "Machine",
		"The kubelet, syncpod and the raw-CRI floor on containerd 1.6", "The API-server path on containerd 1.6",
		"The kubelet, syncpod and the raw-CRI floor on containerd 2.4", "The API-server path on containerd 2.4",
		"Scale: many nodes under one control plane", "Density"}
	if got := titles(doc); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sections %q, want %q", got, want)
	}
	for _, s := range []string{"Generated on 2026-11-28 09:00 UTC", "scale tables", "density tables",
		"Measured by `make bench-kubelet BENCH_RUNTIME=containerd1.6`, written 2026-11-28 09:00 UTC.",
		"Measured by `make bench-kubelet`, written 2026-11-27 08:00 UTC."} {
		if !strings.Contains(doc, s) {
			t.Errorf("the merged document lacks %q:\n%s", s, doc)
		}
	}
	if strings.Count(doc, "# Benchmarks\n") != 1 || strings.Contains(doc, "Generated on 2026-11-27") {
		t.Errorf("the merged document has the earlier run's title or date:\n%s", doc)
	}

	// The 2.4 run again: its sections replaced where they were, the
	// order kept, the 1.6 ones and the rest left as they were.
	again := Merge(run("containerd 2.4", "make bench-kubelet", time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)), doc)
	if got := titles(again); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sections after a second run %q, want %q", got, want)
	}
	if strings.Contains(again, "written 2026-11-27 08:00 UTC") || !strings.Contains(again, "written 2026-11-28 10:00 UTC") ||
		!strings.Contains(again, "BENCH_RUNTIME=containerd1.6") || !strings.Contains(again, "density tables") {
		t.Errorf("the second merge:\n%s", again)
	}
	// A run whose own document already carried the Scale and Density
	// sections (it began from the same earlier document) puts its new
	// sections after the ones they follow, not after the carried ones.
	cur := run("containerd 1.6", "make bench-kubelet BENCH_RUNTIME=containerd1.6", time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC))
	cur = SpliceSection(cur, "Scale: many nodes under one control plane", "## Scale: many nodes under one control plane\n\nscale tables\n")
	cur = SpliceSection(cur, DensityTitle, "## Density\n\ndensity tables\n")
	if got := titles(Merge(cur, old)); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sections of a run that carried the others already %q, want %q", got, want)
	}
	// Merging a document with itself changes nothing.
	if Merge(again, again) != again {
		t.Error("a document merged with itself differs")
	}
}

// TestMergeIntoNothing: with no earlier document the run's is kept as it is.
func TestMergeIntoNothing(t *testing.T) {
	out, err := Render(kubeletRun())
	if err != nil {
		t.Fatal(err)
	}
	if got := Merge(string(out.Markdown), ""); got != string(out.Markdown) {
		t.Errorf("merged with nothing:\n%s\nwant\n%s", got, out.Markdown)
	}
}
