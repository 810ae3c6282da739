package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Many nodes under one control plane (NodeScale): the nodes of one side
// (upstream's hollow kubelet, kubemark, or syncpod nodes on crisim in
// simulated mode) joined to a private kube-apiserver, each with its own
// credentials, and a load of pods bound to them round-robin. What is
// counted here is pure: the audit log's requests per node, the CPU and
// memory of a node's processes, the pods' startup times.

// NodeProcs is one node of a side and the processes that make it up.
type NodeProcs struct {
	// Name is the Node's name.
	Name string `json:"name"`
	// Procs are its processes, each with what it is (kubemark, crisim,
	// planner, ...).
	Procs []Proc `json:"procs"`
}

// Proc is one process of a node.
type Proc struct {
	Kind string `json:"kind"`
	PID  int    `json:"pid"`
}

// ParseNodesFile reads the nodes of a side, one a line: the node's name,
// then KIND=PID for each of its processes ("hollow-0 kubemark=4242").
// Blank lines and lines starting with # are skipped.
func ParseNodesFile(r io.Reader) ([]NodeProcs, error) {
	var nodes []NodeProcs
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: want NODE KIND=PID..., got %q", line, sc.Text())
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("line %d: node %s listed twice", line, f[0])
		}
		seen[f[0]] = true
		n := NodeProcs{Name: f[0]}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			pid, err := strconv.Atoi(v)
			if !ok || k == "" || err != nil || pid <= 0 {
				return nil, fmt.Errorf("line %d: %q is not KIND=PID", line, kv)
			}
			n.Procs = append(n.Procs, Proc{Kind: k, PID: pid})
		}
		nodes = append(nodes, n)
	}
	return nodes, sc.Err()
}

// NodeUser is the user name a node's credentials carry (the Node
// authorizer's form), by which the audit log names its requests.
func NodeUser(node string) string { return "system:node:" + node }

// auditEvent is the part of an audit.k8s.io/v1 Event read here.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestURI     string    `json:"requestURI"`
	Received       time.Time `json:"requestReceivedTimestamp"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// RequestClass names an audited request by its verb and resource, as
// "patch pods/status" or "watch pods"; a request of no resource (a
// discovery or health path) is its verb and "non-resource".
func RequestClass(verb, resource, subresource string) string {
	switch {
	case resource == "":
		return verb + " non-resource"
	case subresource != "":
		return verb + " " + resource + "/" + subresource
	}
	return verb + " " + resource
}

// Window is a span of time [From, To).
type Window struct {
	From, To time.Time
}

// Contains says whether t is in w.
func (w Window) Contains(t time.Time) bool { return !t.Before(w.From) && t.Before(w.To) }

// Minutes is w's length in minutes.
func (w Window) Minutes() float64 { return w.To.Sub(w.From).Minutes() }

// RequestCounts are audited requests by user, then by RequestClass.
type RequestCounts map[string]map[string]int

// AuditCounts are the requests of one window, and those that failed
// (answered 400 or more) by class and code ("delete pods 409").
type AuditCounts struct {
	Requests RequestCounts
	Failed   RequestCounts
}

func (c RequestCounts) add(user, class string) {
	byClass := c[user]
	if byClass == nil {
		byClass = map[string]int{}
		c[user] = byClass
	}
	byClass[class]++
}

// CountAudit counts the requests of an audit log (the API server's
// --audit-log-path, JSON lines) received in each window, by user and
// class. A request counts once, at the first of its stages the log holds
// (RequestReceived where the policy logs it), by its audit id; its
// ResponseComplete stage, where logged, says whether it failed. Lines that
// are not audit events are an error (a truncated last line is not: the
// log is read while written).
func CountAudit(r io.Reader, windows []Window) ([]AuditCounts, error) {
	out := make([]AuditCounts, len(windows))
	for i := range out {
		out[i] = AuditCounts{Requests: RequestCounts{}, Failed: RequestCounts{}}
	}
	counted := map[string]bool{}
	rd := bufio.NewReaderSize(r, 1<<20)
	for line := 1; ; line++ {
		b, err := rd.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			var ev struct {
				auditEvent
				AuditID string `json:"auditID"`
			}
			if jerr := json.Unmarshal(b, &ev); jerr != nil {
				return nil, fmt.Errorf("audit log line %d: %w", line, jerr)
			}
			switch ev.Stage {
			case "RequestReceived", "ResponseStarted", "ResponseComplete", "Panic":
			default:
				return nil, fmt.Errorf("audit log line %d: stage %q is not an audit stage", line, ev.Stage)
			}
			first := ev.AuditID == "" || !counted[ev.AuditID]
			if ev.AuditID != "" {
				counted[ev.AuditID] = true
			}
			var res, sub string
			if ev.ObjectRef != nil {
				res, sub = ev.ObjectRef.Resource, ev.ObjectRef.Subresource
			}
			class := RequestClass(ev.Verb, res, sub)
			failed := ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 &&
				(ev.Stage == "ResponseComplete" || ev.Stage == "Panic")
			for i, w := range windows {
				if !w.Contains(ev.Received) {
					continue
				}
				if first {
					out[i].Requests.add(ev.User.Username, class)
				}
				if failed {
					out[i].Failed.add(ev.User.Username, fmt.Sprintf("%s %d", class, ev.ResponseStatus.Code))
				}
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// RequestRates are the requests of a side's nodes in one window, per
// node per minute: the mean over the nodes of each class and of all,
// and the busiest node's total.
type RequestRates struct {
	// ByClass is each class's mean per node per minute.
	ByClass map[string]float64 `json:"by_class"`
	// Total is the mean per node per minute of every request.
	Total float64 `json:"total"`
	// MaxNode is the busiest node's requests per minute.
	MaxNode float64 `json:"max_node"`
}

// NodeRequestRates turns counts of one window into per-node rates for
// nodes (a node that sent nothing counts as zero).
func NodeRequestRates(c RequestCounts, nodes []string, w Window) RequestRates {
	r := RequestRates{ByClass: map[string]float64{}}
	min := w.Minutes()
	if len(nodes) == 0 || !(min > 0) {
		return r
	}
	for _, n := range nodes {
		total := 0
		for class, k := range c[NodeUser(n)] {
			r.ByClass[class] += float64(k)
			total += k
		}
		r.Total += float64(total)
		r.MaxNode = math.Max(r.MaxNode, float64(total)/min)
	}
	for class := range r.ByClass {
		r.ByClass[class] /= float64(len(nodes)) * min
	}
	r.Total /= float64(len(nodes)) * min
	return r
}

// ProcStat is what /proc/PID/stat and /proc/PID/smaps_rollup say of one
// process: its CPU time (user and system, in clock ticks) and its
// resident memory (RSS) and proportional share of it (PSS: pages shared
// with other processes, a binary's text run by many nodes, counted in
// part), in kB.
type ProcStat struct {
	Ticks      int64
	RSSk, PSSk int64
}

// ParseProcStat reads the CPU ticks (utime + stime) of a /proc/PID/stat
// line; the command in parentheses may hold spaces and parentheses.
func ParseProcStat(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 > len(stat) {
		return 0, fmt.Errorf("no command in %.80q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// After the command: state [0] ... utime [11], stime [12].
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command, want 13 or more", len(f))
	}
	var total int64
	for _, k := range []int{11, 12} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// ParseSmapsRollup reads Rss and Pss (kB) of /proc/PID/smaps_rollup.
func ParseSmapsRollup(s string) (rss, pss int64, err error) {
	var haveR, haveP bool
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "Rss":
			rss, err = strconv.ParseInt(f[0], 10, 64)
			haveR = true
		case "Pss":
			pss, err = strconv.ParseInt(f[0], 10, 64)
			haveP = true
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", k, err)
		}
	}
	if !haveR || !haveP {
		return 0, 0, fmt.Errorf("no Rss or Pss line")
	}
	return rss, pss, nil
}

// ReadProcStat reads pid's CPU time and memory from /proc.
func ReadProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStat{}, err
	}
	t, err := ParseProcStat(string(b))
	if err != nil {
		return ProcStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return ProcStat{}, err
	}
	rss, pss, err := ParseSmapsRollup(string(b))
	if err != nil {
		return ProcStat{}, fmt.Errorf("/proc/%d/smaps_rollup: %w", pid, err)
	}
	return ProcStat{Ticks: t, RSSk: rss, PSSk: pss}, nil
}

// Snapshot is every process's ProcStat at one time, by pid.
type Snapshot struct {
	At    time.Time
	Procs map[int]ProcStat
}

// TakeSnapshot reads every process of nodes.
func TakeSnapshot(nodes []NodeProcs, now time.Time) (Snapshot, error) {
	s := Snapshot{At: now, Procs: map[int]ProcStat{}}
	for _, n := range nodes {
		for _, p := range n.Procs {
			st, err := ReadProcStat(p.PID)
			if err != nil {
				return s, fmt.Errorf("node %s, %s (pid %d): %w", n.Name, p.Kind, p.PID, err)
			}
			s.Procs[p.PID] = st
		}
	}
	return s, nil
}

// NodeUsage is what a side's nodes cost over a window, per node: CPU in
// percent of one core, memory in MB (the last snapshot's), each the mean
// over the nodes and the largest, and the mean split by process kind.
type NodeUsage struct {
	CPU        float64            `json:"cpu_percent"`
	CPUMax     float64            `json:"cpu_percent_max"`
	CPUByKind  map[string]float64 `json:"cpu_percent_by_kind"`
	PSS        float64            `json:"pss_mb"`
	PSSMax     float64            `json:"pss_mb_max"`
	RSS        float64            `json:"rss_mb"`
	PSSByKind  map[string]float64 `json:"pss_mb_by_kind"`
	PeakPSS    float64            `json:"peak_pss_mb,omitempty"`
	WindowSecs float64            `json:"window_seconds"`
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times.
const clockTicks = 100

// Usage is the per-node cost of nodes between snapshots a and b (b
// later): CPU from the difference of their ticks, memory from b. A
// process that several nodes list (syncpod-all running many nodes) is
// divided evenly among them, so the mean is the processes' total over the
// node count.
func Usage(nodes []NodeProcs, a, b Snapshot) NodeUsage {
	u := NodeUsage{CPUByKind: map[string]float64{}, PSSByKind: map[string]float64{}}
	secs := b.At.Sub(a.At).Seconds()
	u.WindowSecs = secs
	if len(nodes) == 0 || !(secs > 0) {
		return u
	}
	share := sharers(nodes)
	for _, n := range nodes {
		var cpu, pss, rss float64
		for _, p := range n.Procs {
			pa, pb := a.Procs[p.PID], b.Procs[p.PID]
			part := 1 / share[p.PID]
			c := float64(pb.Ticks-pa.Ticks) / clockTicks / secs * 100 * part
			m := float64(pb.PSSk) / 1024 * part
			cpu += c
			pss += m
			rss += float64(pb.RSSk) / 1024 * part
			u.CPUByKind[p.Kind] += c
			u.PSSByKind[p.Kind] += m
		}
		u.CPU += cpu
		u.PSS += pss
		u.RSS += rss
		u.CPUMax = math.Max(u.CPUMax, cpu)
		u.PSSMax = math.Max(u.PSSMax, pss)
	}
	k := float64(len(nodes))
	u.CPU /= k
	u.PSS /= k
	u.RSS /= k
	for kind := range u.CPUByKind {
		u.CPUByKind[kind] /= k
		u.PSSByKind[kind] /= k
	}
	return u
}

// sharers is how many nodes list each process.
func sharers(nodes []NodeProcs) map[int]float64 {
	n := map[int]float64{}
	for _, node := range nodes {
		for _, p := range node.Procs {
			n[p.PID]++
		}
	}
	return n
}

// Processes is how many processes the nodes run in all.
func Processes(nodes []NodeProcs) int { return len(sharers(nodes)) }

// PeakPSS is the largest mean PSS per node (MB) over snapshots, each
// process counted once.
func PeakPSS(nodes []NodeProcs, snaps []Snapshot) float64 {
	peak := 0.0
	share := sharers(nodes)
	for _, s := range snaps {
		var total float64
		for pid := range share {
			total += float64(s.Procs[pid].PSSk) / 1024
		}
		if len(nodes) > 0 {
			peak = math.Max(peak, total/float64(len(nodes)))
		}
	}
	return peak
}

// ScalePhase is one window of a side's run: its cost per node and its
// requests per node per minute.
type ScalePhase struct {
	Usage    NodeUsage    `json:"usage"`
	Requests RequestRates `json:"requests"`
	// Failed are the requests answered 400 or more, by class and code.
	Failed RequestRates `json:"failed"`
}

// ScaleReport is one side's run of NodeScale.
type ScaleReport struct {
	// Side names the nodes ("kubemark", "syncpod").
	Side string `json:"side"`
	// Version is what the side's nodes run (kubemark's version, syncpod's).
	Version string `json:"version,omitempty"`
	// Nodes and PodsPerNode: the size of the run; CreateRate the pods
	// created per second.
	Nodes int `json:"nodes"`
	// Processes is how many processes the nodes ran in all.
	Processes   int        `json:"processes,omitempty"`
	PodsPerNode int        `json:"pods_per_node"`
	CreateRate  float64    `json:"create_rate"`
	Started     time.Time  `json:"started"`
	LoadStart   [3]float64 `json:"load_start"`
	LoadEnd     [3]float64 `json:"load_end"`
	// ReadySeconds is from the nodes' start (the driver's start) until
	// every Node was Ready.
	ReadySeconds float64 `json:"ready_seconds"`
	// Startup is each pod's create sent → a watch sees it Running with
	// every container started (upstream's pod startup SLI, with the
	// client's clock at both ends); Deletion is delete sent → the watch
	// sees the object removed.
	Startup  Sample `json:"startup_seconds"`
	Deletion Sample `json:"deletion_seconds"`
	// NotRunning and NotDeleted count pods that did not get there within
	// the timeout.
	NotRunning int `json:"not_running"`
	NotDeleted int `json:"not_deleted"`
	// CreatedSeconds is how long the creates took (the achieved rate is
	// pods over it); RunningSeconds from the first create to the last
	// pod Running; DeletedSeconds from the first delete to the last pod
	// gone.
	CreatedSeconds float64 `json:"created_seconds"`
	RunningSeconds float64 `json:"running_seconds"`
	DeletedSeconds float64 `json:"deleted_seconds"`
	// Join are the nodes' requests from their start to the idle window
	// (registering, the first lists and watches, the settling), over
	// JoinSeconds.
	Join        RequestRates `json:"join"`
	JoinSeconds float64      `json:"join_seconds"`
	// Idle is the nodes Ready and without pods; Load from the first
	// create to the last pod gone.
	Idle ScalePhase `json:"idle"`
	Load ScalePhase `json:"load"`
	// Profile is where the side's process spent its CPU under load,
	// when the run profiled it (NodeScaleOptions.ProfileURL).
	Profile *ProfileSummary `json:"profile,omitempty"`
	// Errors are failed creates or deletes (the first few).
	Errors []string `json:"errors,omitempty"`
}

// Percentiles are q-quantiles of s (nearest rank) in seconds.
func (s Sample) Percentiles(qs ...float64) []float64 {
	out := make([]float64, len(qs))
	v := slices.Clone(s)
	slices.Sort(v)
	for i, q := range qs {
		if len(v) == 0 {
			out[i] = math.NaN()
			continue
		}
		k := int(math.Ceil(q*float64(len(v)))) - 1
		out[i] = v[min(max(k, 0), len(v)-1)]
	}
	return out
}
