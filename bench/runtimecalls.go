package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The runtime's own view of a phase: containerd, with its Prometheus
// endpoint on and its gRPC handling-time histograms
// (mk/containerd.sh, SYNCPOD_CONTAINERD_METRICS_ADDRESS), counts every
// call it served by service, method and code, and sums how long each
// took. Read at both ends of a phase, the difference is the CRI calls
// the node's agent made in it (the bench's own calls fall outside the
// phases) and the runtime's time spent on them.

// CRICall is one CRI method over a phase, as the runtime served it.
type CRICall struct {
	// Method is the CRI method's name (RunPodSandbox, ImageStatus…).
	Method string `json:"method"`
	// Calls is how many the runtime finished in the phase, Errors how
	// many of those failed (a code other than OK).
	Calls  int `json:"calls"`
	Errors int `json:"errors,omitempty"`
	// Seconds is the runtime's handling time of those calls, summed (0
	// when the runtime keeps no histogram).
	Seconds float64 `json:"seconds"`
}

// Mean is the runtime's mean time a call, in seconds (0 without calls).
func (c CRICall) Mean() float64 {
	if c.Calls <= 0 {
		return 0
	}
	return c.Seconds / float64(c.Calls)
}

// CRIWindow is the CRI calls of one phase of a burst (its pods started,
// or deleted), from the agent's runtime.
type CRIWindow struct {
	// Seconds is how long the phase was, from the runtime's first read
	// to its second.
	Seconds float64   `json:"seconds"`
	Calls   []CRICall `json:"calls"`
}

// Total is every method's calls, errors and time summed.
func (w CRIWindow) Total() CRICall {
	t := CRICall{Method: "all"}
	for _, c := range w.Calls {
		t.Calls += c.Calls
		t.Errors += c.Errors
		t.Seconds += c.Seconds
	}
	return t
}

// Call is the window's figures of method (zero when it had no call).
func (w CRIWindow) Call(method string) CRICall {
	for _, c := range w.Calls {
		if c.Method == method {
			return c
		}
	}
	return CRICall{Method: method}
}

// criServices are the gRPC services of the CRI (v1).
var criServices = []string{"runtime.v1.RuntimeService", "runtime.v1.ImageService"}

// criLifecycle is the order the CRI's writes are shown in: a pod's life
// from its sandbox to its removal; every other method (the reads)
// comes after them, by name.
var criLifecycle = []string{"PullImage", "RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer",
	"StopPodSandbox", "RemoveContainer", "RemovePodSandbox"}

// CRIMethodLess orders CRI methods: the lifecycle's writes first, in
// their order, then the others by name.
func CRIMethodLess(a, b string) int {
	ia, ib := slices.Index(criLifecycle, a), slices.Index(criLifecycle, b)
	switch {
	case ia >= 0 && ib >= 0:
		return ia - ib
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return strings.Compare(a, b)
}

// criCounters are the runtime's running totals, by CRI method.
type criCounters map[string]CRICall

// parseCRICounters reads the unary CRI methods' totals from a Prometheus
// text exposition (containerd's /v1/metrics): grpc_server_handled_total
// (calls, by code) and grpc_server_handling_seconds_sum. Other services
// (containerd's own API) and streams are left out.
func parseCRICounters(r io.Reader) (criCounters, error) {
	out := criCounters{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		var name string
		switch {
		case strings.HasPrefix(line, "grpc_server_handled_total{"):
			name = "grpc_server_handled_total"
		case strings.HasPrefix(line, "grpc_server_handling_seconds_sum{"):
			name = "grpc_server_handling_seconds_sum"
		default:
			continue
		}
		labels, value, err := splitSample(line[len(name):])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		if !slices.Contains(criServices, labels["grpc_service"]) || labels["grpc_type"] != "unary" {
			continue
		}
		m := labels["grpc_method"]
		c := out[m]
		c.Method = m
		if name == "grpc_server_handled_total" {
			c.Calls += int(value)
			if labels["grpc_code"] != "OK" {
				c.Errors += int(value)
			}
		} else {
			c.Seconds += value
		}
		out[m] = c
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// splitSample splits `{k="v",...} value [timestamp]` into its labels and
// value.
func splitSample(s string) (map[string]string, float64, error) {
	if !strings.HasPrefix(s, "{") {
		return nil, 0, fmt.Errorf("no labels")
	}
	labels := map[string]string{}
	i := 1
	for i < len(s) && s[i] != '}' {
		if s[i] == ',' || s[i] == ' ' {
			i++
			continue
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return nil, 0, fmt.Errorf("bad label at %d", i)
		}
		key := s[i : i+eq]
		j := i + eq + 2
		var v strings.Builder
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] == '\\' && j+1 < len(s) {
				j++
				switch s[j] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[j])
				}
				continue
			}
			v.WriteByte(s[j])
		}
		if j >= len(s) {
			return nil, 0, fmt.Errorf("unterminated label %s", key)
		}
		labels[key] = v.String()
		i = j + 1
	}
	if i >= len(s) {
		return nil, 0, fmt.Errorf("unterminated labels")
	}
	f := strings.Fields(s[i+1:])
	if len(f) == 0 {
		return nil, 0, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return nil, 0, err
	}
	return labels, v, nil
}

// since is the calls made after o was read: the difference of the
// totals, methods without a call left out, in CRIMethodLess order.
func (c criCounters) since(o criCounters) []CRICall {
	var out []CRICall
	for m, now := range c {
		was := o[m]
		d := CRICall{Method: m, Calls: now.Calls - was.Calls, Errors: now.Errors - was.Errors, Seconds: now.Seconds - was.Seconds}
		if d.Calls <= 0 {
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b CRICall) int { return CRIMethodLess(a.Method, b.Method) })
	return out
}

// criReading is the runtime's totals at one moment.
type criReading struct {
	at       time.Time
	counters criCounters
}

// readCRICounters reads the runtime's CRI totals from its metrics
// endpoint url.
func readCRICounters(ctx context.Context, client *http.Client, url string) (criReading, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return criReading{}, err
	}
	at := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return criReading{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return criReading{}, fmt.Errorf("%s: %s", url, resp.Status)
	}
	c, err := parseCRICounters(resp.Body)
	if err != nil {
		return criReading{}, fmt.Errorf("%s: %w", url, err)
	}
	return criReading{at: at, counters: c}, nil
}

// window is the calls between r0 and r.
func (r criReading) window(r0 criReading) *CRIWindow {
	return &CRIWindow{Seconds: r.at.Sub(r0.at).Seconds(), Calls: r.counters.since(r0.counters)}
}

// DensityCallRow is one row of a density report's CRI calls table: one
// phase of one burst and one CRI method ("all": every method), per agent
// in the report's order the mean over its rounds.
type DensityCallRow struct {
	// Phase names the burst's phase ("110 pods at once → all running").
	Phase  string
	Method string
	// Taken says the agent's runtime was read in this phase; Calls,
	// Errors and Seconds (the runtime's summed time) are then the mean
	// of its rounds.
	Taken   []bool
	Calls   []float64
	Errors  []float64
	Seconds []float64
	// InFlight, in the "all" rows, is the runtime's summed time over the
	// phase's length: how many calls it had in hand on average.
	InFlight []float64
}

// DensityCallRows are the CRI calls of each burst's phases (its pods
// started, then deleted), each phase's "all" row first, then its methods
// in CRIMethodLess order; none when no runtime was read.
func DensityCallRows(rep DensityReport) []DensityCallRow {
	var rows []DensityCallRow
	for _, n := range rep.Bursts {
		for _, ph := range []struct {
			name string
			get  func(DensityBurst) *CRIWindow
		}{
			{fmt.Sprintf("%d pods at once → all running", n), func(b DensityBurst) *CRIWindow { return b.StartCRI }},
			{fmt.Sprintf("delete %d pods → all gone", n), func(b DensityBurst) *CRIWindow { return b.DeleteCRI }},
		} {
			windows := make([][]CRIWindow, len(rep.Agents))
			methods := map[string]bool{}
			for i, a := range rep.Agents {
				for _, r := range rep.Rounds {
					if r.Agent != a {
						continue
					}
					for _, b := range r.Bursts {
						if w := ph.get(b); b.Pods == n && w != nil {
							windows[i] = append(windows[i], *w)
							for _, c := range w.Calls {
								methods[c.Method] = true
							}
						}
					}
				}
			}
			taken := false
			for _, ws := range windows {
				taken = taken || len(ws) > 0
			}
			if !taken {
				continue
			}
			names := []string{"all"}
			for m := range methods {
				names = append(names, m)
			}
			slices.SortFunc(names[1:], CRIMethodLess)
			for _, m := range names {
				row := DensityCallRow{Phase: ph.name, Method: m}
				for _, ws := range windows {
					var calls, errs, secs, inFlight float64
					for _, w := range ws {
						c := w.Call(m)
						if m == "all" {
							c = w.Total()
							if w.Seconds > 0 {
								inFlight += c.Seconds / w.Seconds
							}
						}
						calls, errs, secs = calls+float64(c.Calls), errs+float64(c.Errors), secs+c.Seconds
					}
					k := float64(max(len(ws), 1))
					row.Taken = append(row.Taken, len(ws) > 0)
					row.Calls, row.Errors, row.Seconds = append(row.Calls, calls/k), append(row.Errors, errs/k), append(row.Seconds, secs/k)
					row.InFlight = append(row.InFlight, inFlight/k)
				}
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// Cell is agent i's figures of the row as text ("—" when its runtime
// was not read): calls, the runtime's time and its mean a call, errors,
// and in the "all" rows how many calls it had in hand on average.
func (r DensityCallRow) Cell(i int) string {
	if i >= len(r.Taken) || !r.Taken[i] {
		return "—"
	}
	if r.Calls[i] == 0 {
		return "0"
	}
	s := fmt.Sprintf("%s × %s = %s", count(r.Calls[i]), callDur(r.Seconds[i]/r.Calls[i]), callDur(r.Seconds[i]))
	if r.Errors[i] > 0 {
		s += fmt.Sprintf(", %s failed", count(r.Errors[i]))
	}
	if r.Method == "all" && r.InFlight[i] > 0 {
		s += fmt.Sprintf("; %.1f in hand on average", r.InFlight[i])
	}
	return s
}

// CallsDiff is agent b's calls less agent a's ("—" when either's
// runtime was not read).
func (r DensityCallRow) CallsDiff(a, b int) string {
	if a >= len(r.Taken) || b >= len(r.Taken) || !r.Taken[a] || !r.Taken[b] {
		return "—"
	}
	d := r.Calls[b] - r.Calls[a]
	if d > 0 {
		return "+" + count(d)
	}
	if d < 0 {
		return "−" + count(-d)
	}
	return "0"
}

// count is a call count: whole, or with one decimal when a mean of
// rounds is not.
func count(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// callDur is a call's time: as FormatDuration, with hundredths of a
// millisecond below 10 ms (the reads take well under one).
func callDur(s float64) string {
	if s < 0.01 {
		return fmt.Sprintf("%.2f ms", s*1000)
	}
	return FormatDuration(s)
}
