package bench

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sample is a set of durations of one measure, in seconds.
type Sample []float64

// Add appends d.
func (s *Sample) Add(d time.Duration) { *s = append(*s, d.Seconds()) }

// Quantile is the q-quantile (0..1) by the nearest-rank method; NaN when
// empty.
func (s Sample) Quantile(q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	v := slices.Clone(s)
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[min(max(i, 0), len(v)-1)]
}

// MedianCI is a distribution-free confidence interval of the median at
// level conf (0.95, say): the order statistics x(k) and x(n+1-k), k the
// largest rank with P(B < k) <= (1-conf)/2 for B ~ Binomial(n, 1/2), so
// the interval holds the true median with probability at least conf,
// whatever the distribution. ok is false when n is too small for that
// level (5 samples or fewer at 95 %).
func (s Sample) MedianCI(conf float64) (lo, hi float64, ok bool) {
	n := len(s)
	if n == 0 || !(conf > 0 && conf < 1) {
		return 0, 0, false
	}
	tail := (1 - conf) / 2
	// cdf accumulates P(B <= i); k is the largest rank with P(B <= k-1) <= tail.
	k, cdf := 0, 0.0
	lg1, _ := math.Lgamma(float64(n + 1))
	for i := 0; i < n; i++ {
		lg2, _ := math.Lgamma(float64(i + 1))
		lg3, _ := math.Lgamma(float64(n - i + 1))
		cdf += math.Exp(lg1 - lg2 - lg3 - float64(n)*math.Ln2)
		if cdf > tail {
			break
		}
		k = i + 1
	}
	if k == 0 {
		return 0, 0, false
	}
	v := slices.Clone(s)
	slices.Sort(v)
	return v[k-1], v[n-k], true
}

// Result is one measure of one agent.
type Result struct {
	// Measure is the row name (see Measures).
	Measure string `json:"measure"`
	// Agent is "syncpod", "kubelet" or "cri".
	Agent string `json:"agent"`
	// Seconds are the samples (durations); Value is for non-duration
	// measures (CPU %, MB), with Unit.
	Seconds Sample  `json:"seconds,omitempty"`
	Value   float64 `json:"value,omitempty"`
	Unit    string  `json:"unit,omitempty"`
	// Note qualifies the run (e.g. the PLEG mode).
	Note string `json:"note,omitempty"`
	// Pods is how many pods the measure started at once, where the row's
	// name does not say (the many-pods rows).
	Pods int `json:"pods,omitempty"`
	// PairedWith and PerRound, on a side-by-side row (Versus): the agent
	// this one alternated with round by round, and the median over the
	// rounds of this agent's time / that agent's.
	PairedWith string  `json:"paired_with,omitempty"`
	PerRound   float64 `json:"per_round_ratio,omitempty"`
	// PerRoundCI is the 95 % confidence interval of PerRound (MedianCI),
	// when there were rounds enough for one.
	PerRoundCI *[2]float64 `json:"per_round_ratio_ci95,omitempty"`
	// Split, on a start row that records it: the same samples cut where
	// the runtime's work begins (what the note prints as its medians).
	Split *Split `json:"split,omitempty"`
	// Floor and FloorRatio, on a row alternated pair by pair with the
	// raw-CRI floor on the same runtime: the floor's samples, and the
	// median over the pairs of this agent's time / the floor's.
	Floor      Sample  `json:"floor,omitempty"`
	FloorRatio float64 `json:"floor_ratio,omitempty"`
}

// Split cuts a start in two: asked → sandbox created (the agent's part
// before the runtime's first work, and the RunPodSandbox call's return),
// and sandbox created → container started (the runtime's work, with the
// agent's calls between).
type Split struct {
	ToSandbox Sample `json:"to_sandbox"`
	Runtime   Sample `json:"sandbox_to_started"`
}

// Report is everything one run of the driver measured.
type Report struct {
	Agent   string     `json:"agent"`
	Runtime string     `json:"runtime"`
	Started time.Time  `json:"started"`
	Load    [3]float64 `json:"load"`
	Results []Result   `json:"results"`
}

// Measure names, in table order.
const (
	MeasureStartAPI = "desired → started, API"
	// MeasureAPIServerRunning is the API-server path (a node of a
	// kube-apiserver): pod created, bound by spec.nodeName → a watch sees
	// it Running.
	MeasureAPIServerRunning = "kube-apiserver: pod created (kubectl apply) → Running, as a watch sees it"
	// MeasureAPIServerNode is the node's share of it: created → sandbox
	// created, plus container started → Running seen.
	MeasureAPIServerNode = "kube-apiserver: the node's share (created → sandbox created, + container started → Running seen)"
	// MeasureAPIServerRuntime is the rest: sandbox created → container
	// started (runtime's clock).
	MeasureAPIServerRuntime = "kube-apiserver: the runtime's share (sandbox created → container started)"
	MeasureStartFile        = "desired → started, manifest file"
	// MeasureStartCLI: the pod applied by a `syncpodctl apply -f`
	// process of its own; its note gives the apply path, the process
	// started → the sandbox created (the runtime's first work for it).
	MeasureStartCLI    = "desired → started, syncpodctl apply"
	MeasureStartPaired = "desired → started, alternating with raw CRI on the same runtime"
	// MeasureStartFilePaired: the same, the agent's pod written as a
	// manifest file (its directory watch and the parse included).
	MeasureStartFilePaired = "desired → started from a manifest file, alternating with raw CRI on the same runtime"
	Measure10API           = "10 pods at once → last started, API"
	Measure10File          = "10 pods at once → last started, file"
	Measure50API           = "50 pods at once → last started, API"
	Measure50File          = "50 pods at once → last started, file"
	// Measure10Paired: 10 pods at once by the agent, alternating round by
	// round with the floor starting its 10 on the same runtime.
	Measure10Paired     = "10 pods at once, alternating with raw CRI on the same runtime"
	MeasureDelete10     = "delete 10 pods → all sandboxes stopped"
	MeasureDeletePaired = "delete 10 pods, alternating with raw CRI on the same runtime"
	MeasureReplacement  = "container stopped behind its back → replacement started"
	// MeasureReplacementPaired: the same, alternating with the raw-CRI
	// floor replacing its own containers on their CRI stop events.
	MeasureReplacementPaired = "container stopped → replacement started, alternating with raw CRI on the same runtime"
	MeasureIdleCPU           = "idle, 10 pods: CPU"
	MeasureIdleRSS           = "idle, 10 pods: RSS"
	MeasureScaleStart        = "many pods at once (crisim, simulated) → last started"
	MeasureScaleCPU          = "idle, many pods (crisim): CPU per pod"
	MeasureScaleRSS          = "idle, many pods (crisim): RSS"
	MeasureScaleRelist       = "idle, many pods (crisim): PLEG relist p99"
)

// Measures is the table order.
var Measures = []string{MeasureAPIServerRunning, MeasureAPIServerNode, MeasureAPIServerRuntime, MeasureStartAPI, MeasureStartFile, MeasureStartCLI, MeasureStartPaired, MeasureStartFilePaired, Measure10API, Measure10File, Measure10Paired, Measure50API, Measure50File,
	MeasureDelete10, MeasureDeletePaired, MeasureReplacement, MeasureReplacementPaired, MeasureStartFileVersus, Measure10FileVersus, MeasureDelete10Versus, MeasureIdleVersus, MeasureIdleCPU, MeasureIdleRSS,
	MeasureScaleStart, MeasureScaleCPU, MeasureScaleRSS, MeasureScaleRelist}

func (r Result) cell() string {
	if r.Unit != "" {
		return fmt.Sprintf("%.2f %s", r.Value, r.Unit)
	}
	if len(r.Seconds) == 0 {
		return "—"
	}
	p50, p99 := r.Seconds.Quantile(0.5), r.Seconds.Quantile(0.99)
	if len(r.Seconds) == 1 {
		return FormatDuration(p50)
	}
	return fmt.Sprintf("%s (p99 %s, n=%d)", FormatDuration(p50), FormatDuration(p99), len(r.Seconds))
}

// Key is the value a ratio compares: Value for a measure with a unit,
// else the samples' median.
func (r Result) Key() float64 {
	if r.Unit != "" {
		return r.Value
	}
	return r.Seconds.Quantile(0.5)
}

// FormatDuration prints seconds as ms below one second, else as s.
func FormatDuration(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

// Table renders reports side by side as a Markdown table
// (MarkdownTable), then every report's line (RunLines) below it.
func Table(reports []Report) string {
	var b strings.Builder
	b.WriteString(MarkdownTable(reports))
	for _, l := range RunLines(reports) {
		b.WriteString("\n" + l)
	}
	b.WriteString("\n")
	return b.String()
}

// MarkdownTable renders reports side by side as a Markdown table: one row
// per measure, one column per agent in the order the agents first appear,
// and the ratio of the second agent to the first (e.g. syncpod / kubelet)
// when there are two or more (see ratioCell). Reports of the same agent
// share its column (e.g. its own phase and a side-by-side run), a later
// report's result winning where two measured the same row (Columns).
func MarkdownTable(reports []Report) string {
	cols, byAgent := Columns(reports)
	var b strings.Builder
	head := append([]string{"measure (p50, p99)"}, cols...)
	if len(cols) >= 2 {
		head = append(head, cols[1]+" / "+cols[0])
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat(" --- |", len(head)) + "\n")
	for _, m := range Measures {
		row := []string{m}
		var found []*Result
		any := false
		for _, a := range cols {
			hit := byAgent[a][m]
			found = append(found, hit)
			if hit == nil {
				row = append(row, "—")
				continue
			}
			any = true
			c := hit.cell()
			if hit.Note != "" {
				c += " " + hit.Note
			}
			row = append(row, c)
		}
		if !any {
			continue
		}
		if len(cols) >= 2 {
			row = append(row, ratioCell(found[0], found[1], cols[0]))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	return b.String()
}

// RunLines say of each report, in order, its agent, runtime, start and
// the load average then.
func RunLines(reports []Report) []string {
	var out []string
	for _, r := range reports {
		out = append(out, fmt.Sprintf("%s on %s, started %s, load average %.2f %.2f %.2f", r.Agent, r.Runtime,
			r.Started.UTC().Format(time.RFC3339), r.Load[0], r.Load[1], r.Load[2]))
	}
	return out
}

// Columns are the agents of reports in the order they first appear, and
// each agent's result of each measure: reports of the same agent share its
// column, a later report's result winning where two measured the same row
// (what Table shows).
func Columns(reports []Report) (agents []string, byAgent map[string]map[string]*Result) {
	byAgent = map[string]map[string]*Result{}
	for i := range reports {
		a := reports[i].Agent
		if byAgent[a] == nil {
			agents = append(agents, a)
			byAgent[a] = map[string]*Result{}
		}
		for j := range reports[i].Results {
			r := &reports[i].Results[j]
			byAgent[a][r.Measure] = r
		}
	}
	return agents, byAgent
}

// ratioCell is b's median over a's. Where b alternated with a round by
// round (PairedWith), it is the median of the per-round ratios, with its
// 95 % confidence interval and the ratio of the medians after it: the
// rounds pair samples taken under the same load, which the medians of all
// samples ignore (at 8 to 15 rounds, those differed by up to 0.13 in the
// same run); an interval that holds 1 says the run cannot tell the two
// agents apart on that row.
func ratioCell(a, b *Result, aAgent string) string {
	if a == nil || b == nil || !(a.Key() > 0) || math.IsNaN(b.Key()) {
		return "—"
	}
	medians := b.Key() / a.Key()
	if b.PairedWith == aAgent && b.PerRound > 0 {
		if ci := b.PerRoundCI; ci != nil {
			return fmt.Sprintf("%.2f× per round (95 %% CI %.2f–%.2f×; medians %.2f×)", b.PerRound, ci[0], ci[1], medians)
		}
		return fmt.Sprintf("%.2f× per round (medians %.2f×)", b.PerRound, medians)
	}
	return fmt.Sprintf("%.2f×", medians)
}

// Ratio is b over a as the table's last column gives it: the median of
// the per-round ratios where b alternated with a (agent aAgent), else
// the ratio of the Keys; ok is false where ratioCell prints none.
func Ratio(a, b *Result, aAgent string) (ratio float64, ok bool) {
	if a == nil || b == nil || !(a.Key() > 0) || math.IsNaN(b.Key()) {
		return 0, false
	}
	if b.PairedWith == aAgent && b.PerRound > 0 {
		return b.PerRound, true
	}
	return b.Key() / a.Key(), true
}

// LoadAverage is the host's 1, 5 and 15 minute load average (zeros when
// it cannot be read).
func LoadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}
