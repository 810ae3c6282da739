package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStatTicksCountsFieldsAfterTheLastParenthesis(t *testing.T) {
	// utime 1234, stime 56; the command holds a space and a ')'.
	line := "4242 (syncpod) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 1234 56 0 0 20 0 12 0 100 0 0"
	got, err := ParseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if got != 1290 {
		t.Errorf("ParseProcStat = %d, want 1290 (utime 1234 + stime 56)", got)
	}
	for _, bad := range []string{"", "4242 no command", "4242 (short) S 1 2 3", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 ten 56"} {
		if _, err := ParseProcStat(bad); err == nil {
			t.Errorf("ParseProcStat(%q): no error", bad)
		}
	}
}

func TestCPUPercentIsOfOneCore(t *testing.T) {
	if got := CPUPercent(150, 10*time.Second); math.Abs(got-15) > 1e-9 {
		t.Errorf("150 ticks over 10 s = %v %%, want 15", got)
	}
	if got := CPUPercent(400, 2*time.Second); math.Abs(got-200) > 1e-9 {
		t.Errorf("400 ticks over 2 s = %v %%, want 200 (two cores busy)", got)
	}
	if got := CPUPercent(5, 0); got != 0 {
		t.Errorf("no window: %v, want 0", got)
	}
}

// podEvent is a watch event line of pod name: its phase and, per
// container of its spec, "" (no status), "waiting", "running",
// "running-unstarted" (running, started false).
func podEvent(typ, name, phase string, containers ...string) []byte {
	var spec, st []string
	for i, c := range containers {
		n := fmt.Sprintf("c%d", i)
		spec = append(spec, fmt.Sprintf(`{"name":%q}`, n))
		switch c {
		case "waiting":
			st = append(st, fmt.Sprintf(`{"name":%q,"started":false,"state":{"waiting":{"reason":"ContainerCreating"}}}`, n))
		case "running":
			st = append(st, fmt.Sprintf(`{"name":%q,"started":true,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}`, n))
		case "running-unstarted":
			st = append(st, fmt.Sprintf(`{"name":%q,"started":false,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}`, n))
		}
	}
	return fmt.Appendf(nil, `{"type":%q,"object":{"metadata":{"name":%q},"spec":{"containers":[%s]},"status":{"phase":%q,"containerStatuses":[%s]}}}`,
		typ, name, strings.Join(spec, ","), phase, strings.Join(st, ","))
}

// watchLine is one watch event line and when it arrived.
type watchLine struct {
	line []byte
	at   time.Time
}

// observeAll feeds lines to tr in order.
func observeAll(t *testing.T, tr *PodTracker, lines []watchLine) {
	t.Helper()
	for i, ev := range lines {
		if err := tr.Observe(ev.line, ev.at); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
}

// TestPodTrackerEndsTheSLIAtAllContainersStarted: a pod counts as started
// at the first event that shows it Running with every container of its
// spec running and started; Running with a container still waiting, not
// started, or without a status is not; later events do not move the
// time; DELETED is when it is gone; Failed before it started is kept
// with its reason; an ERROR event is an error.
func TestPodTrackerEndsTheSLIAtAllContainersStarted(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tr := NewPodTracker()
	observeAll(t, tr, []watchLine{
		{podEvent("ADDED", "a", "Pending", ""), at(1)},
		{podEvent("MODIFIED", "a", "Pending", "waiting"), at(2)},
		{podEvent("MODIFIED", "a", "Running", "running-unstarted"), at(3)},
		{podEvent("MODIFIED", "a", "Running", "running"), at(4)},
		{podEvent("MODIFIED", "a", "Running", "running"), at(5)},
		{podEvent("ADDED", "b", "Running", "running", "waiting"), at(6)},
		{podEvent("MODIFIED", "b", "Running", "running", ""), at(7)},
		{podEvent("MODIFIED", "c", "Pending", "running"), at(8)},
		{podEvent("MODIFIED", "b", "Running", "running", "running"), at(9)},
		{podEvent("MODIFIED", "a", "Running", "running"), at(10)},
		{podEvent("DELETED", "a", "Running", "running"), at(11)},
		{podEvent("DELETED", "a", "Running", "running"), at(12)},
		{[]byte(`{"type":"MODIFIED","object":{"metadata":{"name":"d"},"spec":{"containers":[{"name":"c0"}]},"status":{"phase":"Failed","reason":"OutOfpods"}}}`), at(13)},
		{podEvent("MODIFIED", "a", "Failed", "waiting"), at(14)},
	})
	if got, ok := tr.Started("a"); !ok || !got.Equal(at(4)) {
		t.Errorf("a started at %v (%v), want %v: the first event with its container running and started", got, ok, at(4))
	}
	if got, ok := tr.Started("b"); !ok || !got.Equal(at(9)) {
		t.Errorf("b started at %v (%v), want %v: both containers running", got, ok, at(9))
	}
	if _, ok := tr.Started("c"); ok {
		t.Error("c started while Pending")
	}
	if got, ok := tr.Gone("a"); !ok || !got.Equal(at(11)) {
		t.Errorf("a gone at %v (%v), want %v", got, ok, at(11))
	}
	if r, ok := tr.Failed("d"); !ok || r != "OutOfpods" {
		t.Errorf("d failed %q (%v), want OutOfpods", r, ok)
	}
	if _, ok := tr.Failed("a"); ok {
		t.Error("a failed after it started: want it counted as started only")
	}
	if _, ok := tr.Gone("b"); ok {
		t.Error("b gone without a DELETED event")
	}
	if err := tr.Observe([]byte(`{"type":"ERROR","object":{"kind":"Status","message":"too old resource version"}}`), at(13)); err == nil ||
		!strings.Contains(err.Error(), "too old resource version") {
		t.Errorf("ERROR event: %v, want the API server's message", err)
	}
	if err := tr.Observe([]byte(`{"type":`), at(14)); err == nil {
		t.Error("a broken line: no error")
	}
}

func TestStartupLatenciesPairCreatesWithStarts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	created := map[string]time.Time{"a": t0, "b": t0.Add(200 * time.Millisecond)}
	started := map[string]time.Time{"a": t0.Add(1500 * time.Millisecond), "b": t0.Add(500 * time.Millisecond)}
	s, err := StartupLatencies([]string{"b", "a"}, created, started)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 || math.Abs(s[0]-0.3) > 1e-9 || math.Abs(s[1]-1.5) > 1e-9 {
		t.Errorf("latencies %v, want [0.3 1.5] in the order of the names", s)
	}
	delete(started, "a")
	if _, err := StartupLatencies([]string{"a"}, created, started); err == nil || !strings.Contains(err.Error(), "pod a") {
		t.Errorf("a pod never started: %v, want an error naming it", err)
	}
}

func TestDensityPodSleepsAndIsLabelledWithItsRun(t *testing.T) {
	p := DensityPod("p1", "n1", "busybox", "run7")
	labels := p["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["run"] != "run7" {
		t.Errorf("labels %v, want run=run7", labels)
	}
	spec := p["spec"].(map[string]any)
	if spec["nodeName"] != "n1" {
		t.Errorf("nodeName %v", spec["nodeName"])
	}
	cmd := fmt.Sprint(spec["containers"].([]any)[0].(map[string]any)["command"])
	if !strings.Contains(cmd, "trap 'exit 0' TERM") || !strings.Contains(cmd, "wait") {
		t.Errorf("command %s, want one that waits on a sleep and exits at SIGTERM", cmd)
	}
	// APIPod is left as it was.
	if c := fmt.Sprint(APIPod("p1", "n1", "busybox")["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["command"]); strings.Contains(c, "1000000") {
		t.Errorf("APIPod changed: %s", c)
	}
}

// TestDensityRows: startup percentiles pool every round's pods, burst
// times are the median of the rounds then each round, the idle cost the
// mean of the rounds with the memory per pod as growth over the empty
// node; ratios are the second agent over the first, percentile by
// percentile.
func TestDensityRows(t *testing.T) {
	seq := func(from, step float64, n int) Sample {
		s := make(Sample, n)
		for i := range s {
			s[i] = from + step*float64(i)
		}
		return s
	}
	rep := DensityReport{Agents: []string{"kubelet", "syncpod"}, Pods: 100, Rate: 5, Bursts: []int{110, 250}, IdleSeconds: 30,
		Rounds: []DensityRound{
			{Round: 0, Agent: "kubelet", First: true, Startup: seq(0.101, 0.002, 50),
				Bursts: []DensityBurst{{Pods: 110, AllRunning: 20, AllGone: 10}, {Pods: 250, AllRunning: 50, AllGone: 30}},
				Idle:   &DensityIdle{Pods: 110, CPUPercent: 4, RSSMB: 100, EmptyRSSMB: 78.5}},
			{Round: 0, Agent: "syncpod", Startup: seq(0.051, 0.001, 50),
				Bursts: []DensityBurst{{Pods: 110, AllRunning: 10, AllGone: 5}, {Pods: 250, AllRunning: 25, AllGone: 12}},
				Idle:   &DensityIdle{Pods: 110, CPUPercent: 1, RSSMB: 90, EmptyRSSMB: 79}},
			{Round: 1, Agent: "syncpod", First: true, Startup: seq(0.101, 0.001, 50),
				Bursts: []DensityBurst{{Pods: 110, AllRunning: 12, AllGone: 7}, {Pods: 250, AllRunning: 27, AllGone: 14}},
				Idle:   &DensityIdle{Pods: 110, CPUPercent: 3, RSSMB: 92, EmptyRSSMB: 81}},
			{Round: 1, Agent: "kubelet", Startup: seq(0.201, 0.002, 50),
				Bursts: []DensityBurst{{Pods: 110, AllRunning: 24, AllGone: 12}, {Pods: 250, AllRunning: 54, AllGone: 34}},
				Idle:   &DensityIdle{Pods: 110, CPUPercent: 6, RSSMB: 104, EmptyRSSMB: 82.5}},
		}}
	rows := DensityRows(rep)
	noChurn := len(rows)
	rep.ChurnSeconds, rep.ChurnRate = 300, 10
	rep.Rounds[0].Churn = &DensityChurn{Pods: 250, Startup: Sample{0.2, 0.4}, Created: 7, Failed: map[string]int{"OutOfpods": 4}, NotStarted: 1, CPUPercent: 30,
		StatusAge: Sample{0.5, 2.5, 1}, RelistP99: 0.05, Relists: 300}
	rep.Rounds[3].Churn = &DensityChurn{Pods: 250, Startup: Sample{0.3}, Created: 1, CPUPercent: 50,
		StatusAge: Sample{3, 0.1}, RelistP99: 0.1, Relists: 310}
	churn := DensityRows(rep)
	if len(churn) != noChurn+8 {
		t.Fatalf("%d rows with a churn, want %d", len(churn), noChurn+8)
	}
	for i, w := range []string{
		"churn at 250 pods, 10 pods/s created and deleted for 300 s: pod startup SLI",
		"churn at 250 pods, 10 pods/s created and deleted for 300 s: pods failed by the node before they started",
		"churn at 250 pods, 10 pods/s created and deleted for 300 s: pods deleted before seen started",
		"churn at 250 pods, 10 pods/s created and deleted for 300 s: agent CPU",
		"churn at 250 pods, 10 pods/s created and deleted for 300 s: pod status age (the runtime's change → the API server's status shows it)",
		"churn at 250 pods, 10 pods/s created and deleted for 300 s: the oldest status age any pod had",
		"churn at 250 pods, 10 pods/s created and deleted for 300 s: PLEG relist p99 (its histogram bucket's upper bound)",
		"churn at 250 pods, 10 pods/s created and deleted for 300 s: PLEG relists",
	} {
		if r := churn[5+i]; r.Measure != w {
			t.Errorf("churn row %d: %q, want %q", i, r.Measure, w)
		}
	}
	for _, c := range []struct {
		row, agent int
		want, what string
	}{
		{5, 0, "300 ms / 400 ms / 400 ms (n=3)", "churn startup, kubelet"},
		{6, 0, "2.00 pods", "churn failed, kubelet: the mean of 4 and 0"},
		{7, 0, "0.50 pods", "churn not started, kubelet: the mean of 1 and 0"},
		{8, 0, "40.00 % of a core", "churn CPU, kubelet"},
		{8, 1, "—", "churn CPU, syncpod (no churn)"},
		{9, 0, "1.00 s / 3.00 s / 3.00 s (n=5)", "status age, kubelet: both rounds' ages pooled"},
		{10, 0, "3.00 s (rounds 2.50 s, 3.00 s)", "oldest status age, kubelet: the largest of the rounds first"},
		{11, 0, "75 ms (rounds 50 ms, 100 ms)", "relist p99, kubelet"},
		{12, 0, "305.00 relists", "relists, kubelet"},
	} {
		if got := churn[c.row].Cell(c.agent); got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
	// A p99 past the last finite bucket is said so, and has no ratio;
	// the report stays JSON.
	rep.Rounds[3].Churn.RelistP99, rep.Rounds[3].Churn.RelistP99Beyond = 10, true
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	beyond := DensityRows(rep)[11]
	if c := beyond.Cell(0); c != "past the histogram's last bucket (rounds 50 ms, past the histogram's last bucket)" {
		t.Errorf("relist p99 beyond the buckets: %q", c)
	}
	if r := beyond.Ratio(1, 0); r != "—" {
		t.Errorf("ratio with a p99 beyond the buckets: %q", r)
	}
	want := []string{
		"pod startup SLI, 100 pods created at 5 pods/s (created → all containers started, watched)",
		"110 pods at once → all running", "110 pods at once: pod startup SLI", "delete 110 pods → all gone",
		"250 pods at once → all running", "delete 250 pods → all gone",
		"idle at 110 pods: agent CPU (30 s window)", "idle at 110 pods: agent RSS", "idle at 110 pods: agent RSS per pod",
		"idle at 110 pods: agent RSS growth per pod over the fresh agent (first round)",
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Measure)
	}
	// The bursts carry no per-pod startup samples here: those rows are left out.
	want = append(want[:2], want[3:]...)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sli := rows[0]
	// kubelet: 0.101..0.199 and 0.201..0.299 pooled (100 samples): p50 is
	// the 50th, 0.199; p90 the 90th, 0.279; p99 the 99th, 0.297.
	for i, w := range []float64{0.199, 0.279, 0.297} {
		if math.Abs(sli.Values[0][i]-w) > 1e-9 {
			t.Errorf("kubelet percentile %d: %v, want %v", i, sli.Values[0][i], w)
		}
	}
	if sli.N[0] != 100 || sli.N[1] != 100 {
		t.Errorf("n %v, want 100 each", sli.N)
	}
	if c := sli.Cell(0); c != "199 ms / 279 ms / 297 ms (n=100)" {
		t.Errorf("cell %q", c)
	}
	// syncpod: 0.051..0.100, 0.101..0.150: p50 0.100, p90 0.140, p99 0.149.
	if r := sli.Ratio(0, 1); r != "0.50× / 0.50× / 0.50×" {
		t.Errorf("ratio %q, want 0.50× each", r)
	}
	all := rows[1]
	if c := all.Cell(0); c != "22.00 s (rounds 20.00 s, 24.00 s)" {
		t.Errorf("all running, kubelet: %q, want the median of the rounds by nearest rank, then each round", c)
	}
	if r := all.Ratio(0, 1); r != "0.50×" {
		t.Errorf("all running ratio %q, want 11 / 22", r)
	}
	cpu, perPod, growth := rows[5], rows[7], rows[8]
	if c := cpu.Cell(1); c != "2.00 % of a core" {
		t.Errorf("idle CPU, syncpod: %q, want the mean of 1 and 3", c)
	}
	// kubelet: 100 and 104 MB over 110 pods.
	if math.Abs(perPod.Values[0][0]-102.0*1024/110) > 1e-9 {
		t.Errorf("RSS per pod, kubelet: %v kB", perPod.Values[0][0])
	}
	// kubelet: (100-78.5) MB over 110 pods, the first round's only.
	if math.Abs(growth.Values[0][0]-21.5*1024/110) > 1e-9 || growth.N[0] != 1 {
		t.Errorf("RSS growth per pod, kubelet: %v kB over %d rounds, want the first round's", growth.Values[0][0], growth.N[0])
	}
	if c := (DensityRow{Kind: KindRounds, Values: [][]float64{nil}}).Cell(0); c != "—" {
		t.Errorf("no values: %q", c)
	}
	if r := (DensityRow{Kind: "MB", Values: [][]float64{{0}, {3}}}).Ratio(0, 1); r != "—" {
		t.Errorf("ratio over zero: %q", r)
	}
}

func TestMedianAveragesTheTwoMiddleSamples(t *testing.T) {
	for _, c := range []struct {
		s    Sample
		want float64
	}{{Sample{3, 1, 2}, 2}, {Sample{24, 20}, 22}, {Sample{5}, 5}, {Sample{4, 1, 3, 2}, 2.5}} {
		if got := c.s.Median(); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.s, got, c.want)
		}
	}
	if !math.IsNaN(Sample{}.Median()) {
		t.Error("empty: want NaN")
	}
}

// densityAPIServer is a fake API server for the density rows: pod
// watches by label selector run=TAG, creates (each pod shown Pending,
// then Running with its container started, to every watch of its run),
// deletes (DELETED). It records the order nodes were first asked for
// pods in.
type densityAPIServer struct {
	mu       sync.Mutex
	watches  map[string][]chan []byte
	pods     map[string]string // name → run
	nodes    []string
	selector []string
	// stall is a node that falls behind in a churn: its churned pods
	// never run, and their deletion is never done.
	stall   string
	stalled map[string]bool
}

func (f *densityAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const base = "/api/v1/namespaces/default/pods"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == base && r.URL.Query().Get("watch") == "1":
		sel := r.URL.Query().Get("labelSelector")
		ch := make(chan []byte, 10000)
		f.mu.Lock()
		f.selector = append(f.selector, sel+" rv="+r.URL.Query().Get("resourceVersion"))
		f.watches[strings.TrimPrefix(sel, "run=")] = append(f.watches[strings.TrimPrefix(sel, "run=")], ch)
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case line := <-ch:
				_, _ = w.Write(append(line, '\n'))
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	case r.Method == http.MethodPost && r.URL.Path == base:
		var pod struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
		}
		if err := json.NewDecoder(r.Body).Decode(&pod); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		run := pod.Metadata.Labels["run"]
		f.mu.Lock()
		f.pods[pod.Metadata.Name] = run
		if len(f.nodes) == 0 || f.nodes[len(f.nodes)-1] != pod.Spec.NodeName {
			f.nodes = append(f.nodes, pod.Spec.NodeName)
		}
		stall := f.stall != "" && pod.Spec.NodeName == f.stall && strings.Contains(pod.Metadata.Name, "-c-")
		if stall {
			if f.stalled == nil {
				f.stalled = map[string]bool{}
			}
			f.stalled[pod.Metadata.Name] = true
		}
		for _, ch := range f.watches[run] {
			ch <- podEvent("ADDED", pod.Metadata.Name, "Pending", "")
			if !stall {
				ch <- podEvent("MODIFIED", pod.Metadata.Name, "Running", "running")
			}
		}
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "{}")
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, base+"/"):
		name := strings.TrimPrefix(r.URL.Path, base+"/")
		f.mu.Lock()
		run, ok := f.pods[name]
		delete(f.pods, name)
		for _, ch := range f.watches[run] {
			if !f.stalled[name] {
				ch <- podEvent("DELETED", name, "Running", "running")
			}
		}
		f.mu.Unlock()
		if !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, "{}")
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
	}
}

// TestDensityAlternatesTheNodesAndMeasuresEveryRow: each round runs both
// sides, a first in even rounds and b in odd ones; each turn watches its
// own run's pods from the watch cache, creates the paced pods and each
// burst, takes every pod's startup latency, the times until all ran and
// all were gone, idles at the first burst where it has processes, churns
// on the last, and leaves no pod behind.
func TestDensityAlternatesTheNodesAndMeasuresEveryRow(t *testing.T) {
	f := &densityAPIServer{watches: map[string][]chan []byte{}, pods: map[string]string{}}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	api := &APIServer{URL: srv.URL, Token: "tok", HTTP: srv.Client()}
	// The kubelet's PLEG relists: one more of 20 ms at every scrape.
	var scrapes int
	var smu sync.Mutex
	metrics := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		smu.Lock()
		scrapes++
		n := scrapes
		smu.Unlock()
		fmt.Fprintf(w, "%[2]s_bucket{le=\"0.025\"} %[1]d\n%[2]s_bucket{le=\"+Inf\"} %[1]d\n%[2]s_sum %[3]g\n%[2]s_count %[1]d\n",
			n, KubeletRelistMetric, 0.02*float64(n))
	}))
	defer metrics.Close()
	// syncpod's runtime: one RunPodSandbox more at every read.
	var reads int
	runtime := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		smu.Lock()
		reads++
		n := reads
		smu.Unlock()
		const labels = `grpc_method="RunPodSandbox",grpc_service="runtime.v1.RuntimeService",grpc_type="unary"`
		fmt.Fprintf(w, "grpc_server_handled_total{grpc_code=\"OK\",%[1]s} %[2]d\ngrpc_server_handling_seconds_sum{%[1]s} %[3]g\n",
			labels, n, 0.5*float64(n))
	}))
	defer runtime.Close()
	rep, err := api.Density(context.Background(),
		DensitySide{Agent: "kubelet", Node: "nk", PIDs: []int{os.Getpid()}, PLEGMetrics: metrics.URL, PLEGMetric: KubeletRelistMetric,
			MetricsClient: metrics.Client()},
		DensitySide{Agent: "syncpod", Node: "ns", RuntimeMetrics: runtime.URL},
		DensityOptions{Rounds: 2, Pods: 4, Rate: 200, Bursts: []int{3, 5}, Idle: 20 * time.Millisecond,
			Churn: 300 * time.Millisecond, ChurnRate: 20, Parallel: 2, Image: "busybox", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range rep.Rounds {
		order = append(order, fmt.Sprintf("%d:%s:%v", r.Round, r.Agent, r.First))
		if len(r.Startup) != 4 {
			t.Errorf("%s round %d: %d startup samples, want 4", r.Agent, r.Round, len(r.Startup))
		}
		for _, s := range r.Startup {
			if !(s > 0) {
				t.Errorf("%s: startup latency %v, want > 0", r.Agent, s)
			}
		}
		if len(r.Bursts) != 2 || r.Bursts[0].Pods != 3 || r.Bursts[1].Pods != 5 || len(r.Bursts[1].Startup) != 5 ||
			!(r.Bursts[0].AllRunning > 0) || !(r.Bursts[1].AllGone > 0) {
			t.Errorf("%s round %d bursts: %+v", r.Agent, r.Round, r.Bursts)
		}
		// The churn: 6 pods planned on top of the last burst's 5, which
		// are the ones deleted; what is left is deleted after it. A
		// loaded machine may send fewer pairs before the churn's end: then
		// the report must say so, and count only what it sent.
		if c := r.Churn; c == nil || c.Pods != 5 || c.Planned != 6 || c.Created < 1 || c.Created > 6 || len(c.Startup) != c.Created ||
			c.NotStarted != 0 || (c.CPUPercent < 0) {
			t.Errorf("%s round %d churn: %+v", r.Agent, r.Round, r.Churn)
		} else if short := c.Created < c.Planned; short != slices.ContainsFunc(c.Behind, func(b string) bool {
			return strings.Contains(b, fmt.Sprintf("%d of 6 create-and-delete pairs sent", c.Created))
		}) {
			t.Errorf("%s round %d churn: %d of %d created, behind %q: a shortfall, and only one, is reported", r.Agent, r.Round, c.Created, c.Planned, c.Behind)
		}
		// The relists are those between the scrapes before and after
		// the churn; only the kubelet's side has an endpoint.
		if c := r.Churn; c != nil && (r.Agent == "kubelet") != (c.Relists == 1 && c.RelistP99 == 0.025) {
			t.Errorf("%s round %d: %d relists, p99 %v", r.Agent, r.Round, c.Relists, c.RelistP99)
		}
		// Each burst phase is the runtime's calls between two reads;
		// only syncpod's side has a runtime endpoint.
		for _, b := range r.Bursts {
			for _, w := range []*CRIWindow{b.StartCRI, b.DeleteCRI} {
				if (w != nil) != (r.Agent == "syncpod") {
					t.Errorf("%s round %d, burst of %d: CRI window %+v", r.Agent, r.Round, b.Pods, w)
				}
				if w != nil && (len(w.Calls) != 1 || w.Calls[0] != CRICall{Method: "RunPodSandbox", Calls: 1, Seconds: 0.5} || w.Seconds < 0) {
					t.Errorf("%s round %d, burst of %d: CRI calls %+v, want the one between two reads", r.Agent, r.Round, b.Pods, w.Calls)
				}
			}
		}
		if (r.Idle != nil) != (r.Agent == "kubelet") {
			t.Errorf("%s: idle %+v, want one only with processes to measure", r.Agent, r.Idle)
		}
		if r.Idle != nil && (r.Idle.Pods != 3 || !(r.Idle.RSSMB > 0) || !(r.Idle.EmptyRSSMB > 0)) {
			t.Errorf("idle %+v, want at the first burst's 3 pods with the memory read", r.Idle)
		}
	}
	if got := strings.Join(order, " "); got != "0:kubelet:true 0:syncpod:false 1:syncpod:true 1:kubelet:false" {
		t.Errorf("turns %s", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Consecutive turns of one node (the end of round 0, the start of
	// round 1) are one run of its name.
	if got := strings.Join(f.nodes, " "); got != "nk ns nk" {
		t.Errorf("nodes asked in the order %s, want nk ns nk", got)
	}
	if len(f.pods) != 0 {
		t.Errorf("%d pods left", len(f.pods))
	}
	if len(f.selector) != 4 || !strings.HasPrefix(f.selector[0], "run=") || !strings.HasSuffix(f.selector[0], " rv=0") || f.selector[0] == f.selector[1] {
		t.Errorf("watches %q, want one per turn, each of its own run, from the watch cache", f.selector)
	}
	if rep.Parallel != 2 || rep.Pods != 4 || len(rep.Agents) != 2 || rep.ChurnRate != 20 {
		t.Errorf("report sizes %+v", rep)
	}
}

// TestDensityRowsSplitOffTheRuntime: where the runtime was asked, a burst
// also has the time to its last container started by the runtime's clock.
func TestDensityRowsSplitOffTheRuntime(t *testing.T) {
	rep := DensityReport{Agents: []string{"kubelet", "syncpod"}, Bursts: []int{110}, Rounds: []DensityRound{
		{Agent: "kubelet", Bursts: []DensityBurst{{Pods: 110, AllRunning: 20, RuntimeStarted: 15, AllGone: 9}}},
		{Agent: "syncpod", Bursts: []DensityBurst{{Pods: 110, AllRunning: 30, RuntimeStarted: 12, AllGone: 8}}},
	}}
	var got []string
	for _, r := range DensityRows(rep) {
		got = append(got, r.Measure+": "+r.Cell(0)+" | "+r.Cell(1)+" | "+r.Ratio(0, 1))
	}
	want := "110 pods at once → all running: 20.00 s | 30.00 s | 1.50×\n" +
		"110 pods at once → last container started, the runtime's clock: 15.00 s | 12.00 s | 0.80×\n" +
		"delete 110 pods → all gone: 9.00 s | 8.00 s | 0.89×"
	if g := strings.Join(got, "\n"); g != want {
		t.Errorf("rows:\n%s\nwant:\n%s", g, want)
	}
}

// TestDensityChurnEndsWhenANodeFallsBehind: a node whose churned pods
// never run and are never removed does not hold the run: the wait after
// the churn ends at ChurnWait, the pods it did not start are counted,
// what fell behind is said, and the other node's turn and the report
// follow.
func TestDensityChurnEndsWhenANodeFallsBehind(t *testing.T) {
	f := &densityAPIServer{watches: map[string][]chan []byte{}, pods: map[string]string{}, stall: "ns"}
	srv := httptest.NewTLSServer(f)
	defer srv.Close()
	api := &APIServer{URL: srv.URL, Token: "tok", HTTP: srv.Client()}
	rep, err := api.Density(context.Background(), DensitySide{Agent: "kubelet", Node: "nk"}, DensitySide{Agent: "syncpod", Node: "ns"},
		// 5 pairs 50 ms apart, the last 50 ms before the churn's end: room
		// for a loaded machine to send every one.
		DensityOptions{Rounds: 1, Bursts: []int{3}, Churn: 250 * time.Millisecond, ChurnRate: 20, ChurnWait: 200 * time.Millisecond,
			Parallel: 2, Image: "busybox", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rounds) != 2 {
		t.Fatalf("%d turns, want both", len(rep.Rounds))
	}
	for _, r := range rep.Rounds {
		c := r.Churn
		if c == nil || c.Planned != 5 || c.Created != 5 {
			t.Fatalf("%s churn %+v, want 5 pods created of 5", r.Agent, c)
		}
		if r.Agent == "kubelet" {
			if len(c.Behind) != 0 || c.NotStarted != 0 || len(c.Startup) != 5 || len(r.Bursts) != 1 || !(r.Bursts[0].AllGone > 0) {
				t.Errorf("kubelet: %+v, bursts %+v: want nothing behind", c, r.Bursts)
			}
			continue
		}
		// The 3 left of the 5 churned pods never started; the 2 churned
		// and deleted are not gone; their deletion with the rest ends
		// at the wait too.
		if c.NotSettled != 3 || c.NotGone != 2 || c.NotStarted != 5 || len(c.Startup) != 0 || len(c.Behind) != 3 ||
			!strings.Contains(c.Behind[0], "3 of the 3 pods left of the churn neither started nor failed") ||
			!strings.Contains(c.Behind[1], "2 of the 5 pods deleted in the churn not gone") ||
			!strings.Contains(c.Behind[2], "deleting the 3 pods left after the churn") {
			t.Errorf("syncpod churn %+v, want its pods counted and what fell behind said", c)
		}
		if len(r.Bursts) != 1 || r.Bursts[0].AllGone != 0 {
			t.Errorf("syncpod bursts %+v: want the burst kept without an all-gone time", r.Bursts)
		}
	}
	rows := DensityRows(rep)
	var names []string
	for _, r := range rows {
		names = append(names, r.Measure)
		if strings.HasPrefix(r.Measure, "delete 3 pods") && (len(r.Values[0]) == 0 || len(r.Values[1]) != 0) {
			t.Errorf("%s: %v, want the kubelet's only", r.Measure, r.Values)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "pods deleted before seen started") }) {
		t.Errorf("rows %q: want the churn's", names)
	}
}

// TestHostCPUCountsIdleAndIOWaitAsIdle: the machine's busy share is all
// but idle and iowait, guest time (already in user) not counted twice.
func TestHostCPUCountsIdleAndIOWaitAsIdle(t *testing.T) {
	h0, err := parseHostCPU("cpu  100 0 100 700 100 0 0 0 50 0\ncpu0 1 2 3 4\n")
	if err != nil {
		t.Fatal(err)
	}
	h1, err := parseHostCPU("cpu  400 0 200 900 100 0 0 0 90 0\n")
	if err != nil {
		t.Fatal(err)
	}
	// 600 more ticks: 300 user and 100 system busy, 200 idle.
	if got := h1.busySince(h0); math.Abs(got-400.0/600*100) > 1e-9 {
		t.Errorf("busy %v %%, want 66.7", got)
	}
	if _, err := parseHostCPU("intr 1 2 3\n"); err == nil {
		t.Error("no cpu line: no error")
	}
}
