package bench

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseNodesFile(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []NodeProcs
		err      string
	}{
		{name: "one process a node", in: "kubemark-0 kubemark=10\nkubemark-1 kubemark=11\n",
			want: []NodeProcs{{"kubemark-0", []Proc{{"kubemark", 10}}}, {"kubemark-1", []Proc{{"kubemark", 11}}}}},
		{name: "several processes, blank and comment lines", in: "# side b\n\nsyncpod-0 crisim=1 planner=2\n",
			want: []NodeProcs{{"syncpod-0", []Proc{{"crisim", 1}, {"planner", 2}}}}},
		{name: "no process", in: "n0\n", err: "line 1: want NODE KIND=PID"},
		{name: "not a pid", in: "n0 a=x\n", err: `"a=x" is not KIND=PID`},
		{name: "zero pid", in: "n0 a=0\n", err: `"a=0" is not KIND=PID`},
		{name: "no kind", in: "n0 =3\n", err: `"=3" is not KIND=PID`},
		{name: "node twice", in: "n0 a=1\nn0 a=2\n", err: "line 2: node n0 listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNodesFile(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Name != tc.want[i].Name || len(got[i].Procs) != len(tc.want[i].Procs) {
					t.Fatalf("node %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
				for j := range got[i].Procs {
					if got[i].Procs[j] != tc.want[i].Procs[j] {
						t.Errorf("node %d proc %d: got %+v, want %+v", i, j, got[i].Procs[j], tc.want[i].Procs[j])
					}
				}
			}
		})
	}
}

// auditLine is one audit event as kube-apiserver writes it (JSON lines,
// Metadata level).
func auditLine(id, stage, verb, user, resource, sub, at string) string {
	return auditLineCode(id, stage, verb, user, resource, sub, at, 0)
}

func auditLineCode(id, stage, verb, user, resource, sub, at string, code int) string {
	obj := ""
	if resource != "" {
		obj = `,"objectRef":{"resource":"` + resource + `","namespace":"default","name":"x","apiVersion":"v1"`
		if sub != "" {
			obj += `,"subresource":"` + sub + `"`
		}
		obj += `}`
	}
	if code != 0 {
		obj += `,"responseStatus":{"metadata":{},"code":` + strconv.Itoa(code) + `}`
	}
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id + `","stage":"` + stage +
		`","requestURI":"/x","verb":"` + verb + `","user":{"username":"` + user + `","groups":["system:nodes","system:authenticated"]},` +
		`"sourceIPs":["127.0.0.1"],"userAgent":"hollow-kubelet"` + obj +
		`,"requestReceivedTimestamp":"` + at + `","stageTimestamp":"` + at + `"}` + "\n"
}

func TestCountAudit(t *testing.T) {
	n0, n1 := NodeUser("n0"), NodeUser("n1")
	log := auditLine("a1", "RequestReceived", "patch", n0, "pods", "status", "2026-01-01T00:00:10.000000Z") +
		// The same request's later stages count once.
		auditLineCode("a1", "ResponseComplete", "patch", n0, "pods", "status", "2026-01-01T00:00:10.000000Z", 200) +
		// A failed one: counted as a request, and as a failure by its code.
		auditLine("a7", "RequestReceived", "delete", n1, "pods", "", "2026-01-01T00:00:45.000000Z") +
		auditLineCode("a7", "ResponseComplete", "delete", n1, "pods", "", "2026-01-01T00:00:45.000000Z", 409) +
		auditLine("a2", "RequestReceived", "watch", n0, "pods", "", "2026-01-01T00:00:20.000000Z") +
		auditLine("a3", "RequestReceived", "update", n1, "leases", "", "2026-01-01T00:00:30.000000Z") +
		auditLine("a4", "RequestReceived", "get", n1, "", "", "2026-01-01T00:00:40.000000Z") +
		// Only the later stage logged (a policy omitting RequestReceived).
		auditLine("a5", "ResponseStarted", "watch", n1, "nodes", "", "2026-01-01T00:01:10.000000Z") +
		auditLine("a6", "RequestReceived", "create", "bench-admin", "pods", "", "2026-01-01T00:00:50.000000Z") +
		// A line cut short by a writer still writing: ignored.
		`{"kind":"Event","stage":"Req`
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	first := Window{at("2026-01-01T00:00:00Z"), at("2026-01-01T00:01:00Z")}
	second := Window{at("2026-01-01T00:01:00Z"), at("2026-01-01T00:02:00Z")}
	got, err := CountAudit(strings.NewReader(log), []Window{first, second})
	if err != nil {
		t.Fatal(err)
	}
	want0 := RequestCounts{
		n0:            {"patch pods/status": 1, "watch pods": 1},
		n1:            {"update leases": 1, "get non-resource": 1, "delete pods": 1},
		"bench-admin": {"create pods": 1},
	}
	want1 := RequestCounts{n1: {"watch nodes": 1}}
	failed0 := RequestCounts{n1: {"delete pods 409": 1}}
	for i, want := range []RequestCounts{want0, want1, failed0, {}} {
		g := got[i%2].Requests
		if i >= 2 {
			g = got[i%2].Failed
		}
		if len(g) != len(want) {
			t.Errorf("case %d: got %v, want %v", i, g, want)
			continue
		}
		for u, classes := range want {
			for c, k := range classes {
				if g[u][c] != k {
					t.Errorf("case %d, %s, %s: got %d, want %d", i, u, c, g[u][c], k)
				}
			}
			if len(g[u]) != len(classes) {
				t.Errorf("case %d, %s: got %v, want %v", i, u, g[u], classes)
			}
		}
	}

	rates := NodeRequestRates(got[0].Requests, []string{"n0", "n1", "n2"}, first)
	// 5 node requests over 3 nodes and 1 minute; n2 sent none.
	if math.Abs(rates.Total-5.0/3) > 1e-9 || rates.MaxNode != 3 {
		t.Errorf("rates = %+v, want total 5/3 a node a minute, busiest 3", rates)
	}
	if math.Abs(rates.ByClass["update leases"]-1.0/3) > 1e-9 {
		t.Errorf("update leases = %v, want 1/3", rates.ByClass["update leases"])
	}
	if _, ok := rates.ByClass["create pods"]; ok {
		t.Error("the bench's own requests counted as a node's")
	}
}

func TestCountAuditRefusesWhatIsNotAnAuditLog(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":   "I1127 20:00:00 kubelet started\n",
		"no stage":   `{"verb":"get"}` + "\n",
		"bad stage":  `{"stage":"Later","verb":"get"}` + "\n",
		"bad header": "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := CountAudit(strings.NewReader(in), []Window{{}}); err == nil {
				t.Errorf("CountAudit(%q) succeeded", in)
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	// A command with a space and a parenthesis: fields are counted after
	// the last ')'.
	const stat = "4242 (kube (x) y) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1234 567 0 0 20 0 12 0 100 2000000 3000 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
	got, err := ParseProcStat(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 1234+567 {
		t.Errorf("ticks = %d, want utime+stime = %d", got, 1234+567)
	}
	for _, bad := range []string{"", "4242 kube S 1", "4242 (kube) S 1 2 3"} {
		if _, err := ParseProcStat(bad); err == nil {
			t.Errorf("ParseProcStat(%q) succeeded", bad)
		}
	}
}

func TestParseSmapsRollup(t *testing.T) {
	const s = `55d0a0000000-7ffd6b5f2000 ---p 00000000 00:00 0                          [rollup]
Rss:               48220 kB
Pss:               21035 kB
Pss_Dirty:         15000 kB
Pss_Anon:          14800 kB
Shared_Clean:      27000 kB
`
	rss, pss, err := ParseSmapsRollup(s)
	if err != nil {
		t.Fatal(err)
	}
	if rss != 48220 || pss != 21035 {
		t.Errorf("rss, pss = %d, %d; want 48220, 21035 (Pss_Dirty and Pss_Anon are not Pss)", rss, pss)
	}
	if _, _, err := ParseSmapsRollup("Rss: 1 kB\n"); err == nil {
		t.Error("no Pss line accepted")
	}
}

func TestUsage(t *testing.T) {
	nodes := []NodeProcs{
		{"a", []Proc{{"planner", 1}, {"crisim", 2}}},
		{"b", []Proc{{"planner", 3}, {"crisim", 4}}},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := Snapshot{At: t0, Procs: map[int]ProcStat{1: {Ticks: 100}, 2: {Ticks: 0}, 3: {Ticks: 50}, 4: {Ticks: 10}}}
	// Over 10 s: node a used 100+100 ticks (2 s: 20 % of a core), node b
	// 50+0 (0.5 s: 5 %).
	b := Snapshot{At: t0.Add(10 * time.Second), Procs: map[int]ProcStat{
		1: {Ticks: 200, PSSk: 10 * 1024, RSSk: 20 * 1024}, 2: {Ticks: 100, PSSk: 5 * 1024, RSSk: 30 * 1024},
		3: {Ticks: 100, PSSk: 12 * 1024, RSSk: 20 * 1024}, 4: {Ticks: 10, PSSk: 3 * 1024, RSSk: 30 * 1024},
	}}
	u := Usage(nodes, a, b)
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("CPU", u.CPU, 12.5)
	near("CPUMax", u.CPUMax, 20)
	near("CPU planner", u.CPUByKind["planner"], 7.5)
	near("CPU crisim", u.CPUByKind["crisim"], 5)
	near("PSS", u.PSS, 15)
	near("PSSMax", u.PSSMax, 15)
	near("RSS", u.RSS, 50)
	near("PSS planner", u.PSSByKind["planner"], 11)
	near("window", u.WindowSecs, 10)

	peak := PeakPSS(nodes, []Snapshot{a, b})
	near("peak PSS", peak, 15)
}

// One process that runs every node (syncpod-all) is divided evenly among
// them: each node's share is the process's total over the node count.
func TestUsageOfAProcessSharedByNodes(t *testing.T) {
	nodes := []NodeProcs{{"a", []Proc{{"all", 7}}}, {"b", []Proc{{"all", 7}}}, {"c", []Proc{{"all", 7}}}, {"d", []Proc{{"all", 7}}}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := Snapshot{At: t0, Procs: map[int]ProcStat{7: {Ticks: 100}}}
	// 2 s of CPU over 10 s (20 % of a core), 40 MB: 5 % and 10 MB a node.
	b := Snapshot{At: t0.Add(10 * time.Second), Procs: map[int]ProcStat{7: {Ticks: 300, PSSk: 40 * 1024, RSSk: 80 * 1024}}}
	u := Usage(nodes, a, b)
	for what, got := range map[string][2]float64{
		"CPU": {u.CPU, 5}, "CPUMax": {u.CPUMax, 5}, "CPU all": {u.CPUByKind["all"], 5},
		"PSS": {u.PSS, 10}, "PSSMax": {u.PSSMax, 10}, "RSS": {u.RSS, 20}, "PSS all": {u.PSSByKind["all"], 10},
		"peak PSS": {PeakPSS(nodes, []Snapshot{a, b}), 10},
	} {
		if math.Abs(got[0]-got[1]) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got[0], got[1])
		}
	}
	if n := Processes(nodes); n != 1 {
		t.Errorf("Processes = %d, want 1", n)
	}
}

func TestPercentiles(t *testing.T) {
	var s Sample
	for i := 1; i <= 100; i++ {
		s = append(s, float64(101-i)/100) // 1.00 down to 0.01
	}
	got := s.Percentiles(0.5, 0.9, 0.99, 1)
	for i, want := range []float64{0.50, 0.90, 0.99, 1.00} {
		if math.Abs(got[i]-want) > 1e-9 {
			t.Errorf("p%d: got %v, want %v", i, got[i], want)
		}
	}
	if p := (Sample{}).Percentiles(0.5); !math.IsNaN(p[0]) {
		t.Errorf("empty sample's median = %v, want NaN", p[0])
	}
	if p := (Sample{3}).Percentiles(0.01, 0.99); p[0] != 3 || p[1] != 3 {
		t.Errorf("one sample's percentiles = %v, want 3, 3", p)
	}
}

// TestAllStarted: the pod startup SLI's end, for the density and scale
// runs alike: Running, every container of the spec running and started.
func TestAllStarted(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  string
		want bool
	}{
		{"running, container running", `{"spec":{"containers":[{"name":"main"}]},"status":{"phase":"Running","containerStatuses":[{"name":"main","started":true,"state":{"running":{"startedAt":"x"}}}]}}`, true},
		{"running, started not reported", `{"spec":{"containers":[{"name":"main"}]},"status":{"phase":"Running","containerStatuses":[{"name":"main","state":{"running":{}}}]}}`, true},
		{"running, not started yet", `{"spec":{"containers":[{"name":"main"}]},"status":{"phase":"Running","containerStatuses":[{"name":"main","started":false,"state":{"running":{}}}]}}`, false},
		{"pending", `{"spec":{"containers":[{"name":"main"}]},"status":{"phase":"Pending","containerStatuses":[{"name":"main","state":{"running":{}}}]}}`, false},
		{"running, no status yet", `{"spec":{"containers":[{"name":"main"}]},"status":{"phase":"Running"}}`, false},
		{"running, one of two waiting", `{"spec":{"containers":[{"name":"a"},{"name":"b"}]},"status":{"phase":"Running","containerStatuses":[{"name":"a","state":{"running":{}}},{"name":"b","state":{"waiting":{}}}]}}`, false},
		{"another container's status", `{"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Running","containerStatuses":[{"name":"b","state":{"running":{}}}]}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p watchedPod
			if err := json.Unmarshal([]byte(tc.pod), &p); err != nil {
				t.Fatal(err)
			}
			if got := p.allStarted(); got != tc.want {
				t.Errorf("allStarted = %v, want %v", got, tc.want)
			}
		})
	}
}
