package conformance

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/conformance.golden.md")

// Two nodes' reports (one with a parallel and a serial pass) render to the
// golden page: It nodes only, unselected specs left out, a spec the run
// did not select in one pass keeps the other pass's result, failures by
// their first line, pipes escaped.
func TestRenderMatchesGolden(t *testing.T) {
	syncpod, err := Read("testdata/syncpod.json", "testdata/syncpod-serial.json")
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := Read("testdata/kubelet.json")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Render(&got, "Conformance", []Node{{"kubelet", kubelet}, {"syncpod", syncpod}}, Why{Match: "ImageVolume", Text: "its registry cannot be reached"}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "conformance.golden.md")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("rendered page differs from %s (go test -update to accept):\n%s", golden, got.String())
	}
}

func TestCountsOnlyTheSpecsThatRan(t *testing.T) {
	run, err := Read("testdata/kubelet.json")
	if err != nil {
		t.Fatal(err)
	}
	if c := run.Count(); c != (Counts{Specs: 3, Passed: 2, Failed: 1}) {
		t.Errorf("counts %+v, want 3 specs, 2 passed, 1 failed (the suite set-up and the unselected spec left out)", c)
	}
	serial, err := Read("testdata/syncpod.json", "testdata/syncpod-serial.json")
	if err != nil {
		t.Fatal(err)
	}
	if r := serial["[sig-node] Pods should get a host IP [NodeConformance] [Conformance]"]; r.State != "passed" {
		t.Errorf("a spec the serial pass did not select: %q, want the parallel pass's passed", r.State)
	}
}

func TestReadRefusesWhatIsNoGinkgoReport(t *testing.T) {
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(p, []byte("<testsuites/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "ginkgo --json-report") || !strings.Contains(err.Error(), p) {
		t.Errorf("Read(junit) = %v, want an error naming the file and the expected format", err)
	}
}
