package bench

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
)

func readCountersFile(t *testing.T, name string) criCounters {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := parseCRICounters(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestParseCRICountersKeepsTheCRIsUnaryCalls: only the CRI's services
// count, their unary calls (not the event stream), each method's calls
// summed over the codes and its handling time from the histogram's sum.
func TestParseCRICountersKeepsTheCRIsUnaryCalls(t *testing.T) {
	c := readCountersFile(t, "containerd-metrics-after.txt")
	var methods []string
	for m := range c {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	want := []string{"CreateContainer", "ImageStatus", "ListContainers", "ListPodSandbox", "RunPodSandbox", "StartContainer"}
	if !slices.Equal(methods, want) {
		t.Fatalf("methods %v, want %v", methods, want)
	}
	if r := c["RunPodSandbox"]; r.Calls != 16 || r.Errors != 1 || !near(r.Seconds, 4.1) {
		t.Errorf("RunPodSandbox %+v, want 16 calls, 1 failed, 4.1 s", r)
	}
}

// TestCRICallsSincePhaseStart: the phase's calls are the difference of
// two readings, methods without a call left out, the lifecycle's
// writes first in their order, then the reads by name.
func TestCRICallsSincePhaseStart(t *testing.T) {
	got := readCountersFile(t, "containerd-metrics-after.txt").since(readCountersFile(t, "containerd-metrics-before.txt"))
	want := []CRICall{
		{Method: "RunPodSandbox", Calls: 6, Errors: 1, Seconds: 1.6},
		{Method: "CreateContainer", Calls: 5, Seconds: 0.5},
		{Method: "StartContainer", Calls: 5, Seconds: 1},
		{Method: "ListContainers", Calls: 30, Seconds: 0.03},
		{Method: "ListPodSandbox", Calls: 30, Seconds: 0.015},
	}
	if len(got) != len(want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Method != w.Method || g.Calls != w.Calls || g.Errors != w.Errors || !near(g.Seconds, w.Seconds) {
			t.Errorf("call %d: %+v, want %+v", i, g, w)
		}
	}
	w := CRIWindow{Calls: got}
	if tot := w.Total(); tot.Calls != 76 || tot.Errors != 1 || !near(tot.Seconds, 3.145) {
		t.Errorf("total %+v, want 76 calls, 1 failed, 3.145 s", tot)
	}
	if c := w.Call("StopContainer"); c.Calls != 0 || c.Method != "StopContainer" {
		t.Errorf("a method without calls: %+v", c)
	}
	if m := w.Call("RunPodSandbox").Mean(); !near(m, 1.6/6) {
		t.Errorf("mean %g", m)
	}
}

// TestReadCRICountersFromTheEndpoint reads two readings over HTTP and
// takes their window.
func TestReadCRICountersFromTheEndpoint(t *testing.T) {
	file := "containerd-metrics-before.txt"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/metrics" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, "testdata/"+file)
	}))
	defer srv.Close()
	ctx := context.Background()
	r0, err := readCRICounters(ctx, srv.Client(), srv.URL+"/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	file = "containerd-metrics-after.txt"
	r1, err := readCRICounters(ctx, srv.Client(), srv.URL+"/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	w := r1.window(r0)
	if w.Seconds < 0 || len(w.Calls) != 5 || w.Calls[0].Method != "RunPodSandbox" {
		t.Errorf("window %+v", w)
	}
	if _, err := readCRICounters(ctx, srv.Client(), srv.URL+"/metrics"); err == nil {
		t.Error("a missing endpoint read without an error")
	}
}

// TestSplitSampleReadsQuotedLabels: escaped quotes and commas inside a
// label's value, and a trailing timestamp.
func TestSplitSampleReadsQuotedLabels(t *testing.T) {
	labels, v, err := splitSample(`{a="x,\"y\"",b="z"} 12.5 1700000000000`)
	if err != nil {
		t.Fatal(err)
	}
	if labels["a"] != `x,"y"` || labels["b"] != "z" || v != 12.5 {
		t.Errorf("labels %q, value %g", labels, v)
	}
	for _, bad := range []string{`a="b"} 1`, `{a="b"`, `{a=b} 1`, `{a="b"}`, `{a="b"} x`} {
		if _, _, err := splitSample(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// densityCallsRun is two rounds of both agents with one burst whose
// start phase was read on both runtimes and whose deletion only on
// syncpod's.
func densityCallsRun() DensityReport {
	start := func(runs, secs float64) *CRIWindow {
		return &CRIWindow{Seconds: 10, Calls: []CRICall{
			{Method: "RunPodSandbox", Calls: 110, Seconds: secs},
			{Method: "ListContainers", Calls: int(runs), Seconds: 0.01 * runs},
		}}
	}
	turn := func(r int, agent string, w, d *CRIWindow) DensityRound {
		return DensityRound{Round: r, Agent: agent, Bursts: []DensityBurst{{Pods: 110, AllRunning: 10, AllGone: 5, StartCRI: w, DeleteCRI: d}}}
	}
	del := &CRIWindow{Seconds: 5, Calls: []CRICall{{Method: "StopPodSandbox", Calls: 110, Seconds: 20, Errors: 2}}}
	return DensityReport{Agents: []string{"kubelet", "syncpod"}, Bursts: []int{110, 250},
		Rounds: []DensityRound{turn(0, "kubelet", start(10, 30), nil), turn(0, "syncpod", start(3, 20), del),
			turn(1, "syncpod", start(4, 20), del), turn(1, "kubelet", start(11, 34), nil)}}
}

// TestDensityCallRows: per burst phase an "all" row, then the methods
// either agent called, each the mean of the agent's rounds; a phase no
// runtime was read in (the 250 burst) has no rows.
func TestDensityCallRows(t *testing.T) {
	rows := DensityCallRows(densityCallsRun())
	var names []string
	for _, r := range rows {
		names = append(names, r.Phase+": "+r.Method)
	}
	want := []string{
		"110 pods at once → all running: all", "110 pods at once → all running: RunPodSandbox", "110 pods at once → all running: ListContainers",
		"delete 110 pods → all gone: all", "delete 110 pods → all gone: StopPodSandbox",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("rows %q, want %q", names, want)
	}
	all := rows[0]
	if !near(all.Calls[0], 120.5) || !near(all.Seconds[0], 32+0.105) || !near(all.InFlight[0], (30.1+34.11)/2/10) {
		t.Errorf("kubelet's all row: %+v", all)
	}
	for _, c := range []struct{ got, want string }{
		{rows[1].Cell(0), "110 × 291 ms = 32.00 s"},
		{rows[1].Cell(1), "110 × 182 ms = 20.00 s"},
		{rows[1].CallsDiff(0, 1), "0"},
		{rows[2].Cell(0), "10.5 × 10 ms = 105 ms"},
		{rows[2].Cell(1), "3.5 × 10 ms = 35 ms"},
		{rows[2].CallsDiff(0, 1), "−7"},
		{all.Cell(1), "113.5 × 177 ms = 20.04 s; 2.0 in hand on average"},
		{rows[3].Cell(0), "—"},
		{rows[4].Cell(1), "110 × 182 ms = 20.00 s, 2 failed"},
		{rows[4].CallsDiff(0, 1), "—"},
	} {
		if c.got != c.want {
			t.Errorf("cell %q, want %q", c.got, c.want)
		}
	}
	if callDur(0.00042) != "0.42 ms" {
		t.Errorf("a read's time: %s", callDur(0.00042))
	}
	if rows := DensityCallRows(DensityReport{Agents: []string{"kubelet"}, Bursts: []int{110},
		Rounds: []DensityRound{{Agent: "kubelet", Bursts: []DensityBurst{{Pods: 110}}}}}); len(rows) != 0 {
		t.Errorf("rows without a runtime read: %+v", rows)
	}
}
