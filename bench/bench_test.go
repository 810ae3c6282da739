package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/syncpod/syncpod/cri/critest"
	"github.com/syncpod/syncpod/planner/manifest"
)

func TestQuantileNearestRank(t *testing.T) {
	s := Sample{0.5, 0.1, 0.4, 0.2, 0.3}
	for _, c := range []struct {
		q    float64
		want float64
	}{{0, 0.1}, {0.5, 0.3}, {0.99, 0.5}, {1, 0.5}} {
		if got := s.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if !math.IsNaN(Sample{}.Quantile(0.5)) {
		t.Error("empty sample: want NaN")
	}
	if s[0] != 0.5 {
		t.Error("Quantile sorted its receiver")
	}
}

// TestMedianCIOrderStatistics: the interval is the pair of order
// statistics the binomial tables give (n=6: the extremes; 15: the 4th and
// 12th; 30: the 10th and 21st), none for 5 samples or fewer, and over
// many draws from a known distribution it holds the true median at least
// 95 % of the time.
func TestMedianCIOrderStatistics(t *testing.T) {
	ranks := func(n int) Sample {
		s := make(Sample, n)
		for i := range s {
			s[i] = float64(n - i) // descending: MedianCI sorts
		}
		return s
	}
	for _, tc := range []struct{ n, lo, hi int }{{6, 1, 6}, {7, 1, 7}, {9, 2, 8}, {15, 4, 12}, {30, 10, 21}} {
		lo, hi, ok := ranks(tc.n).MedianCI(0.95)
		if !ok || lo != float64(tc.lo) || hi != float64(tc.hi) {
			t.Errorf("n=%d: %v–%v (%v), want the %dth and %dth smallest", tc.n, lo, hi, ok, tc.lo, tc.hi)
		}
	}
	for _, n := range []int{0, 1, 5} {
		if _, _, ok := ranks(n).MedianCI(0.95); ok {
			t.Errorf("n=%d: an interval, want none at 95 %%", n)
		}
	}
	// Coverage: 2,000 draws of 15 from an exponential distribution
	// (median ln 2), fixed seed. The nominal coverage at n=15 is 96.5 %.
	r := rand.New(rand.NewPCG(1, 2))
	held := 0
	const draws = 2000
	for range draws {
		s := make(Sample, 15)
		for i := range s {
			s[i] = r.ExpFloat64()
		}
		if lo, hi, ok := s.MedianCI(0.95); ok && lo <= math.Ln2 && math.Ln2 <= hi {
			held++
		}
	}
	if cov := float64(held) / draws; cov < 0.95 {
		t.Errorf("the interval held the median in %.1f %% of %d draws, want at least 95 %%", 100*cov, draws)
	}
}

// TestPairRatioNamesTheIntervalWhenThereAreRounds: a floor-paired row's
// note gives the median per-pair ratio, and its 95 % interval from 6
// pairs on (here the 2nd and 9th of 10 ratios), none from fewer.
func TestPairRatioNamesTheIntervalWhenThereAreRounds(t *testing.T) {
	ten := Sample{1.10, 0.90, 1.05, 1.00, 0.95, 1.20, 0.85, 1.02, 0.98, 1.08}
	if got, want := pairRatio(ten), "median per-pair ratio 1.00× (95 % CI 0.90–1.10×)"; got != want {
		t.Errorf("10 pairs: %q, want %q", got, want)
	}
	if got, want := pairRatio(ten[:5]), "median per-pair ratio 1.00×"; got != want {
		t.Errorf("5 pairs: %q, want %q", got, want)
	}
}

// TestTableRatiosAndMissingRows: rows appear in Measures order, only when
// some agent has them; the ratio is the second agent's median over the
// first's; a row one agent lacks has no ratio.
func TestTableRatiosAndMissingRows(t *testing.T) {
	kubelet := Report{Agent: "kubelet", Runtime: "containerd v2.4.2", Load: [3]float64{1, 2, 3}, Results: []Result{
		{Measure: MeasureStartFile, Seconds: Sample{0.300, 0.400, 0.350}},
		{Measure: MeasureIdleCPU, Value: 2, Unit: "% of a core"},
	}}
	syncpod := Report{Agent: "syncpod", Runtime: "containerd v2.4.2", Results: []Result{
		{Measure: MeasureStartAPI, Seconds: Sample{0.2}},
		{Measure: MeasureStartFile, Seconds: Sample{0.175, 0.150, 0.2}},
		{Measure: MeasureIdleCPU, Value: 0.5, Unit: "% of a core"},
	}}
	got := Table([]Report{kubelet, syncpod})
	for _, want := range []string{
		"| measure (p50, p99) | kubelet | syncpod | syncpod / kubelet |",
		"| desired → started, API | — | 200 ms | — |",
		"| desired → started, manifest file | 350 ms (p99 400 ms, n=3) | 175 ms (p99 200 ms, n=3) | 0.50× |",
		"| idle, 10 pods: CPU | 2.00 % of a core | 0.50 % of a core | 0.25× |",
		"load average 1.00 2.00 3.00",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, Measure50API) {
		t.Errorf("a row no agent measured is shown:\n%s", got)
	}
	if strings.Index(got, MeasureStartAPI) > strings.Index(got, MeasureIdleCPU) {
		t.Errorf("rows out of order:\n%s", got)
	}
}

// TestTableGroupsReportsOfOneAgent: make bench-kubelet passes each agent's
// own phase and the side-by-side run as separate reports; an agent's
// reports fill one column (the ratio is still syncpod / kubelet, with the
// floor third), and every report keeps its line below the table.
func TestTableGroupsReportsOfOneAgent(t *testing.T) {
	kubelet := Report{Agent: "kubelet", Runtime: "containerd v2.4.2", Load: [3]float64{1, 1, 1}, Results: []Result{
		{Measure: Measure50File, Seconds: Sample{7}},
	}}
	syncpod := Report{Agent: "syncpod", Runtime: "containerd v2.4.2", Load: [3]float64{2, 2, 2}, Results: []Result{
		{Measure: Measure50File, Seconds: Sample{3.5}},
		{Measure: MeasureStartAPI, Seconds: Sample{0.11}},
	}}
	cri := Report{Agent: "cri", Runtime: "containerd v2.4.2", Load: [3]float64{3, 3, 3}, Results: []Result{
		{Measure: MeasureStartAPI, Seconds: Sample{0.1}},
	}}
	vk := Report{Agent: "kubelet", Runtime: "containerd v2.4.2", Load: [3]float64{4, 4, 4}, Results: []Result{
		{Measure: MeasureStartFileVersus, Seconds: Sample{0.125, 0.130, 0.120}},
		{Measure: Measure10FileVersus, Seconds: Sample{1}},
	}}
	vs := Report{Agent: "syncpod", Runtime: "containerd v2.4.2", Load: [3]float64{4, 4, 4}, Results: []Result{
		{Measure: MeasureStartFileVersus, Seconds: Sample{0.120, 0.118, 0.119}, Note: "[per-round]", PairedWith: "kubelet", PerRound: 0.97, PerRoundCI: &[2]float64{0.93, 1.01}},
		// Paired with another agent than the first column's: the medians only.
		{Measure: Measure10FileVersus, Seconds: Sample{0.9}, PairedWith: "cri", PerRound: 0.5},
	}}
	got := Table([]Report{kubelet, syncpod, cri, vk, vs})
	for _, want := range []string{
		"| measure (p50, p99) | kubelet | syncpod | cri | syncpod / kubelet |",
		"| 50 pods at once → last started, file | 7.00 s | 3.50 s | — | 0.50× |",
		"| desired → started, API | — | 110 ms | 100 ms | — |",
		"| " + MeasureStartFileVersus + " | 125 ms (p99 130 ms, n=3) | 119 ms (p99 120 ms, n=3) [per-round] | — | 0.97× per round (95 % CI 0.93–1.01×; medians 0.95×) |",
		"| " + Measure10FileVersus + " | 1.00 s | 900 ms | — | 0.90× |",
		"load average 1.00 1.00 1.00", "load average 2.00 2.00 2.00", "load average 3.00 3.00 3.00",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "load average 4.00 4.00 4.00"); n != 2 {
		t.Errorf("the side-by-side reports have %d lines below the table, want 2:\n%s", n, got)
	}
}

// TestManifestIsTheAPIPod: the manifest file the kubelet and syncpod's
// manifest directory read is the pod the API benchmark applies, so every
// way in starts the same container.
func TestManifestIsTheAPIPod(t *testing.T) {
	pods, issues, err := manifest.Parse([]byte(Manifest("bench-x-1", "localhost/syncpod/busybox:1.36")))
	if err != nil || len(pods) != 1 {
		t.Fatalf("parse: %v %v %v", pods, issues, err)
	}
	for _, is := range issues {
		if is.Severity == manifest.Error {
			t.Fatalf("issue %v", is)
		}
	}
	got, want := pods[0], SyncpodPod("bench-x-1", "localhost/syncpod/busybox:1.36")
	if got.GetName() != want.GetName() || got.GetNamespace() != want.GetNamespace() ||
		got.GetSpec().GetTerminationGracePeriodSeconds() != want.GetSpec().GetTerminationGracePeriodSeconds() ||
		got.GetSpec().GetHostNetwork() != want.GetSpec().GetHostNetwork() ||
		len(got.GetSpec().GetContainers()) != 1 {
		t.Fatalf("manifest pod %v\nAPI pod %v", got, want)
	}
	gc, wc := got.GetSpec().GetContainers()[0], want.GetSpec().GetContainers()[0]
	if gc.GetName() != wc.GetName() || gc.GetImage() != wc.GetImage() || !slicesEqual(gc.GetCommand(), wc.GetCommand()) ||
		gc.GetImagePullPolicy() != wc.GetImagePullPolicy() {
		t.Fatalf("manifest container %v\nAPI container %v", gc, wc)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func TestKubeletSandboxName(t *testing.T) {
	if got := (Kubelet{Node: "bench"}).SandboxName("p"); got != "p-bench" {
		t.Fatalf("SandboxName = %q", got)
	}
	var s Sample
	s.Add(1500 * time.Millisecond)
	if s[0] != 1.5 {
		t.Fatalf("Add stored %v", s[0])
	}
}

// otherAgent is the raw-CRI agent under another name, so Run treats it as
// an agent with a floor to pair with.
type otherAgent struct{ *RawCRI }

func (otherAgent) Name() string { return "other" }

// TestPairedRowsAlternateOnOneRuntime: with a floor, Run adds the paired
// rows (a single start; 10 pods at once and their deletion, timed in the
// same rounds), each with the agent's samples and a note naming the
// floor's median, the per-pair ratio and, for the start, the floor's CRI
// calls; each deletion leaves the runtime with none of the pods'
// sandboxes (the settle wait), so no measure overlaps the previous one's
// teardown.
func TestPairedRowsAlternateOnOneRuntime(t *testing.T) {
	fake := critest.NewRuntime()
	rt := &Runtime{RS: fake, IS: critest.NewImages("img")}
	agent := otherAgent{&RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}}
	floor := &RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}
	res, err := Run(t.Context(), rt, agent, Options{Runs: 4, Only: []string{MeasureStartPaired, MeasureDeletePaired}, Floor: floor, Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Measure != MeasureStartPaired || res[1].Measure != Measure10Paired || res[2].Measure != MeasureDeletePaired {
		t.Fatalf("results %+v", res)
	}
	if n := len(res[0].Seconds); n != 4 {
		t.Errorf("paired start: %d samples, want 4", n)
	}
	for _, r := range res[1:] {
		if n := len(r.Seconds); n != 2 {
			t.Errorf("%s: %d samples, want 2", r.Measure, n)
		}
		if !strings.Contains(r.Note, "raw CRI alternating") || !strings.Contains(r.Note, "median per-pair ratio") {
			t.Errorf("%s: note %q", r.Measure, r.Note)
		}
	}
	for _, want := range []string{"raw CRI alternating", "median per-pair ratio", "RunPodSandbox", "StartContainer"} {
		if !strings.Contains(res[0].Note, want) {
			t.Errorf("start note %q lacks %q", res[0].Note, want)
		}
	}
	// The fake runtime starts and stops at once: any positive burst
	// time is the bench's own, and a zero one a round never timed.
	for _, d := range res[1].Seconds {
		if d <= 0 {
			t.Errorf("10 pods at once: a round timed %v", d)
		}
	}
	sbs, err := fake.ListPodSandbox(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sbs) != 0 {
		t.Errorf("%d sandboxes left after the run", len(sbs))
	}
	// 4 single starts and 2×10 deletions each, agent and floor alike.
	if got := len(floor.calls["RunPodSandbox"]); got != 4+20 {
		t.Errorf("floor ran %d sandboxes, want 24", got)
	}
	if got := len(agent.calls["RunPodSandbox"]); got != 4+20 {
		t.Errorf("agent ran %d sandboxes, want 24", got)
	}
}

// bothWays is the raw-CRI agent offering a manifest directory too (its
// pods start the same way whichever way they were asked for); it records
// the way of each Apply.
type bothWays struct {
	*RawCRI
	mu   sync.Mutex
	vias []Via
}

func (*bothWays) Name() string { return "both" }
func (*bothWays) Vias() []Via  { return []Via{ViaAPI, ViaFile} }

func (b *bothWays) Apply(ctx context.Context, names []string, via Via) error {
	b.mu.Lock()
	b.vias = append(b.vias, via)
	b.mu.Unlock()
	return b.RawCRI.Apply(ctx, names, via)
}

// TestPairedFileStartAsksThroughTheManifestDirectory: an agent with a
// manifest directory gets a second paired start row, its pods asked for
// as files, alternating with the floor's; an agent without one does not.
func TestPairedFileStartAsksThroughTheManifestDirectory(t *testing.T) {
	fake := critest.NewRuntime()
	rt := &Runtime{RS: fake, IS: critest.NewImages("img")}
	agent := &bothWays{RawCRI: &RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}}
	floor := &RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}
	both := []string{MeasureStartPaired, MeasureStartFilePaired}
	res, err := Run(t.Context(), rt, agent, Options{Runs: 4, Only: both, Floor: floor, Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		got = append(got, r.Measure)
	}
	if !slices.Equal(got, both) {
		t.Fatalf("rows %q, want %q", got, both)
	}
	file := res[1]
	if n := len(file.Seconds); n != 4 {
		t.Errorf("paired file start: %d samples, want 4", n)
	}
	for _, w := range []string{"[file; raw CRI alternating", "median per-pair ratio", "StartContainer"} {
		if !strings.Contains(file.Note, w) {
			t.Errorf("note %q lacks %q", file.Note, w)
		}
	}
	// Four API starts for the first row, then four as files.
	if w := slices.Repeat([]Via{ViaAPI}, 4); !slices.Equal(agent.vias[:4], w) {
		t.Errorf("first row asked %v", agent.vias[:4])
	}
	if w := slices.Repeat([]Via{ViaFile}, 4); !slices.Equal(agent.vias[4:], w) {
		t.Errorf("file row asked %v, want %v", agent.vias[4:], w)
	}
	if n := len(floor.calls["RunPodSandbox"]); n != 8 {
		t.Errorf("floor ran %d sandboxes, want 4 per row", n)
	}

	// The raw-CRI agent under another name has the API only: one row.
	other := otherAgent{&RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}}
	res, err = Run(t.Context(), rt, other, Options{Runs: 2, Only: both, Floor: floor, Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Measure != MeasureStartPaired {
		t.Errorf("API-only agent: %+v", res)
	}
}

// TestRelistHistogramBound: the relist p99 is the upper bound of the
// bucket its rank falls in, over the relists between two scrapes.
func TestRelistHistogramBound(t *testing.T) {
	scrape := func(text string) histogram {
		t.Helper()
		h, err := parseHistogram(bufio.NewScanner(strings.NewReader(text)), RelistMetric)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := scrape(`# TYPE syncpod_pleg_relist_duration_seconds histogram
syncpod_pleg_relist_duration_seconds_bucket{le="0.01"} 5
syncpod_pleg_relist_duration_seconds_bucket{le="0.05"} 5
syncpod_pleg_relist_duration_seconds_bucket{le="0.1"} 5
syncpod_pleg_relist_duration_seconds_bucket{le="+Inf"} 5
syncpod_pleg_relist_duration_seconds_sum 0.02
syncpod_pleg_relist_duration_seconds_count 5
syncpod_pleg_relist_interval_seconds_count 9
`)
	after := scrape(`syncpod_pleg_relist_duration_seconds_bucket{le="0.01"} 5
syncpod_pleg_relist_duration_seconds_bucket{le="0.05"} 103
syncpod_pleg_relist_duration_seconds_bucket{le="0.1"} 104
syncpod_pleg_relist_duration_seconds_bucket{le="+Inf"} 105
syncpod_pleg_relist_duration_seconds_sum 3.02
syncpod_pleg_relist_duration_seconds_count 105
`)
	d := after.sub(before)
	if d.count != 100 || math.Abs(d.mean()-0.03) > 1e-9 {
		t.Fatalf("count %v mean %v, want 100 and 0.03", d.count, d.mean())
	}
	if got := d.quantileBound(0.98); got != 0.05 {
		t.Errorf("p98 bound %v, want 0.05", got)
	}
	if got := d.quantileBound(0.99); got != 0.1 {
		t.Errorf("p99 bound %v, want 0.1", got)
	}
	if got := d.quantileBound(1); !math.IsInf(got, 1) {
		t.Errorf("max bound %v, want +Inf", got)
	}
	if _, err := parseHistogram(bufio.NewScanner(strings.NewReader("other_metric 1\n")), RelistMetric); err == nil {
		t.Error("a scrape without the histogram parsed")
	}
}

// stopEmitter is the fake runtime with CRI events: every StopContainer
// emits the container's CONTAINER_STOPPED event, as containerd 2.x does
// once it has handled the exit.
type stopEmitter struct {
	*critest.Runtime
	attempts *attemptCount
}

// attemptCount counts the containers created, by attempt: the runtime
// removes a sandbox's containers with it, so they cannot be listed after
// the run.
type attemptCount struct {
	mu sync.Mutex
	n  map[uint32]int
}

func (r stopEmitter) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sc *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.Runtime.CreateContainer(ctx, sandboxID, config, sc)
	if err == nil {
		r.attempts.mu.Lock()
		r.attempts.n[config.GetMetadata().GetAttempt()]++
		r.attempts.mu.Unlock()
	}
	return id, err
}

func (r stopEmitter) StopContainer(ctx context.Context, id string, timeout int64) error {
	if err := r.Runtime.StopContainer(ctx, id, timeout); err != nil {
		return err
	}
	st, err := r.ContainerStatus(ctx, id, false)
	if err != nil {
		return err
	}
	cs, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	if err != nil || len(cs) != 1 {
		return fmt.Errorf("list %s: %v (%d)", id, err, len(cs))
	}
	r.Emit(r.Event(id, cs[0].GetPodSandboxId(), runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, st.GetStatus().GetFinishedAt()))
	return nil
}

// TestPairedReplacementAgainstTheEventedFloor: with a floor, Run adds the
// paired replacement row; the floor replaces each of its killed containers
// on the runtime's stop event with attempt+1 (CreateContainer and
// StartContainer only), kills alternate, the note names the floor's
// median, its calls and the per-pair ratio, and nothing is left behind.
func TestPairedReplacementAgainstTheEventedFloor(t *testing.T) {
	fake := stopEmitter{critest.NewRuntime().WithEvents(critest.EventsOffered), &attemptCount{n: map[uint32]int{}}}
	rt := &Runtime{RS: fake, IS: critest.NewImages("img")}
	agent := otherAgent{&RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}}
	if err := agent.FollowReplacements(t.Context()); err != nil { // the agent under test is evented too
		t.Fatal(err)
	}
	floor := &RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}
	res, err := Run(t.Context(), rt, agent, Options{Kills: 3, Only: []string{MeasureReplacementPaired}, Floor: floor, Settle: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Measure != MeasureReplacementPaired {
		t.Fatalf("results %+v", res)
	}
	if n := len(res[0].Seconds); n != 3 {
		t.Errorf("%d samples, want 3", n)
	}
	for _, want := range []string{"raw CRI alternating", "median per-pair ratio", "its calls: CreateContainer", "StartContainer", "finished → created"} {
		if !strings.Contains(res[0].Note, want) {
			t.Errorf("note %q lacks %q", res[0].Note, want)
		}
	}
	if got := len(floor.calls[ReplacePrefix+"StartContainer"]); got != 3 {
		t.Errorf("floor replaced %d containers, want 3", got)
	}
	if got := len(agent.calls[ReplacePrefix+"StartContainer"]); got != 3 {
		t.Errorf("agent replaced %d containers, want 3", got)
	}
	// Six originals killed (attempt 0), six replacements (attempt 1);
	// each sandbox's removal took its containers with it.
	fake.attempts.mu.Lock()
	attempts := maps.Clone(fake.attempts.n)
	fake.attempts.mu.Unlock()
	if attempts[0] != 6 || attempts[1] != 6 || len(attempts) != 2 {
		t.Errorf("containers created by attempt %v, want six at 0 and six replacements at 1", attempts)
	}
	cs, err := fake.ListContainers(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 0 {
		t.Errorf("%d containers left after the run", len(cs))
	}
	sbs, err := fake.ListPodSandbox(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sbs) != 0 {
		t.Errorf("%d sandboxes left after the run", len(sbs))
	}
}

// twoSides are two fake runtimes and a raw-CRI agent on each, the second
// under another name.
func twoSides(t *testing.T) (fa, fb *critest.Runtime, rta, rtb *Runtime, a *RawCRI, b otherAgent) {
	fa, fb = critest.NewRuntime(), critest.NewRuntime()
	rta = &Runtime{RS: fa, IS: critest.NewImages("img")}
	rtb = &Runtime{RS: fb, IS: critest.NewImages("img")}
	a = &RawCRI{RT: rta, Image: "img", LogDir: t.TempDir()}
	b = otherAgent{&RawCRI{RT: rtb, Image: "img", LogDir: t.TempDir()}}
	return fa, fb, rta, rtb, a, b
}

// TestVersusAlternatesTwoAgentsOnTheirOwnRuntimes: Versus measures both
// agents in every round, each only on its own runtime, the single start
// o.Runs times and the 10-pod burst (with its deletion) max(Runs/2, 2)
// times; the second agent's results carry the per-round ratio, and both
// runtimes are left without sandboxes.
func TestVersusAlternatesTwoAgentsOnTheirOwnRuntimes(t *testing.T) {
	fa, fb, rta, rtb, a, b := twoSides(t)
	self := os.Getpid()
	ares, bres, err := Versus(t.Context(), Side{Agent: a, Runtime: rta}, Side{Agent: b, Runtime: rtb, PIDs: []int{self}}, Options{Runs: 3, Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{MeasureStartFileVersus, Measure10FileVersus, MeasureDelete10Versus}
	wantN := []int{3, 2, 2}
	if len(ares) != 3 || len(bres) != 3 {
		t.Fatalf("results a %+v b %+v", ares, bres)
	}
	for i, m := range want {
		if ares[i].Measure != m || bres[i].Measure != m || ares[i].Agent != "cri" || bres[i].Agent != "other" {
			t.Errorf("row %d: %s/%s by %s/%s", i, ares[i].Measure, bres[i].Measure, ares[i].Agent, bres[i].Agent)
		}
		if len(ares[i].Seconds) != wantN[i] || len(bres[i].Seconds) != wantN[i] {
			t.Errorf("%s: %d and %d samples, want %d", m, len(ares[i].Seconds), len(bres[i].Seconds), wantN[i])
		}
		if !strings.Contains(bres[i].Note, "median per-round ratio other / cri") {
			t.Errorf("%s: note %q", m, bres[i].Note)
		}
		if bres[i].PairedWith != "cri" || !(bres[i].PerRound > 0) || ares[i].PairedWith != "" {
			t.Errorf("%s: b paired with %q at %v per round, a with %q", m, bres[i].PairedWith, bres[i].PerRound, ares[i].PairedWith)
		}
		// Three rounds or fewer are too few for a 95 % interval.
		if bres[i].PerRoundCI != nil || strings.Contains(bres[i].Note, "CI") {
			t.Errorf("%s: an interval from %d rounds: %v, note %q", m, wantN[i], bres[i].PerRoundCI, bres[i].Note)
		}
	}
	for _, r := range []Result{ares[0], bres[0]} {
		if !strings.Contains(r.Note, "→ sandbox created") || !strings.Contains(r.Note, "sandbox created → started") {
			t.Errorf("%s: single start note %q lacks the split", r.Agent, r.Note)
		}
	}
	// Only b named its processes: its starts' CPU is noted, a's not.
	for _, r := range bres[:2] {
		if !strings.Contains(r.Note, "its CPU from asked to started ") {
			t.Errorf("%s: note %q lacks the CPU of b's processes", r.Measure, r.Note)
		}
	}
	for _, r := range []Result{ares[0], ares[1], ares[2], bres[2]} {
		if strings.Contains(r.Note, "CPU") {
			t.Errorf("%s by %s: note %q names a CPU not measured", r.Measure, r.Agent, r.Note)
		}
	}
	// 3 single starts and 2 bursts of 10 on each runtime, none elsewhere.
	if got := len(a.calls["RunPodSandbox"]); got != 3+20 {
		t.Errorf("a ran %d sandboxes, want 23", got)
	}
	if got := len(b.calls["RunPodSandbox"]); got != 3+20 {
		t.Errorf("b ran %d sandboxes, want 23", got)
	}
	for _, f := range []*critest.Runtime{fa, fb} {
		if sbs, err := f.ListPodSandbox(t.Context(), nil); err != nil || len(sbs) != 0 {
			t.Errorf("%d sandboxes left (%v)", len(sbs), err)
		}
	}
}

// TestVersusIdlesBothAgentsAtOnce: with both agents' processes named, the
// idle row runs 10 pods on each runtime, samples both agents' CPU over one
// window, and leaves both runtimes without sandboxes; without one side's
// processes there is no such row.
func TestVersusIdlesBothAgentsAtOnce(t *testing.T) {
	fa, fb, rta, rtb, a, b := twoSides(t)
	self := []int{os.Getpid()}
	o := Options{Settle: time.Minute, Idle: 10 * time.Millisecond, Only: []string{MeasureIdleVersus}}
	ares, bres, err := Versus(t.Context(), Side{Agent: a, Runtime: rta, PIDs: self}, Side{Agent: b, Runtime: rtb, PIDs: self}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(ares) != 1 || len(bres) != 1 || ares[0].Measure != MeasureIdleVersus || bres[0].Measure != MeasureIdleVersus ||
		ares[0].Unit != "% of a core" || ares[0].Agent != "cri" || bres[0].Agent != "other" || ares[0].Value < 0 {
		t.Fatalf("results a %+v b %+v", ares, bres)
	}
	if len(a.calls["RunPodSandbox"]) != 10 || len(b.calls["RunPodSandbox"]) != 10 {
		t.Errorf("sandboxes run: %d and %d, want 10 on each", len(a.calls["RunPodSandbox"]), len(b.calls["RunPodSandbox"]))
	}
	for _, f := range []*critest.Runtime{fa, fb} {
		if sbs, err := f.ListPodSandbox(t.Context(), nil); err != nil || len(sbs) != 0 {
			t.Errorf("%d sandboxes left (%v)", len(sbs), err)
		}
	}
	ares, bres, err = Versus(t.Context(), Side{Agent: a, Runtime: rta}, Side{Agent: b, Runtime: rtb, PIDs: self}, o)
	if err != nil || len(ares)+len(bres) != 0 {
		t.Errorf("one side without processes: %+v %+v (%v), want no row", ares, bres, err)
	}
}

// failsTen is a raw-CRI agent under another name that fails to ask for
// 10 pods at once.
type failsTen struct{ otherAgent }

func (f failsTen) Apply(ctx context.Context, names []string, via Via) error {
	if len(names) == 10 {
		return errors.New("ten refused")
	}
	return f.otherAgent.Apply(ctx, names, via)
}

// TestVersusKeepsTheRowsDoneBeforeAFailure: a row that fails ends the run
// with its error, and the rows measured before it are returned.
func TestVersusKeepsTheRowsDoneBeforeAFailure(t *testing.T) {
	_, _, rta, rtb, a, b := twoSides(t)
	ares, bres, err := Versus(t.Context(), Side{Agent: a, Runtime: rta}, Side{Agent: failsTen{b}, Runtime: rtb}, Options{Runs: 2, Settle: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "ten refused") {
		t.Fatalf("err %v, want the failed row's", err)
	}
	if len(ares) != 1 || len(bres) != 1 || ares[0].Measure != MeasureStartFileVersus || len(bres[0].Seconds) != 2 {
		t.Errorf("results a %+v b %+v, want the single starts' row of both", ares, bres)
	}
}

// TestFloorAsksForWhatTheExecutorAsks: the floor's pod costs the runtime
// what syncpod's costs it. Its sandbox and container configs carry what
// the executor's do that changes the runtime's work (the namespaces of a
// host-network pod, with the shell as PID 1 of its own namespace, so it
// waits out the grace period as the agents' do; RuntimeDefault seccomp
// on the sandbox, which alone costs containerd 2.4 about 20 ms a
// RunPodSandbox; the default masked and read-only paths; the node's DNS;
// the kubelet's hosts and termination-log mounts; the BestEffort OOM
// score), and no label, so syncpod's PLEG never takes the floor's pods
// for its own where the two share a runtime.
func TestFloorAsksForWhatTheExecutorAsks(t *testing.T) {
	c := &RawCRI{Image: "localhost/syncpod/busybox:1.36", LogDir: t.TempDir()}
	sb := c.sandboxConfig("bench-cri-1")
	wantNS := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if got := sb.GetLinux().GetSecurityContext().GetNamespaceOptions(); !proto.Equal(got, wantNS) {
		t.Errorf("sandbox namespaces %v, want %v", got, wantNS)
	}
	if got := sb.GetLinux().GetSecurityContext().GetSeccomp().GetProfileType(); got != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("sandbox seccomp %v, want RuntimeDefault", got)
	}
	if md := sb.GetMetadata(); md.GetName() != "bench-cri-1" || md.GetNamespace() != Namespace || md.GetUid() != "bench-bench-cri-1" {
		t.Errorf("sandbox metadata %v", md)
	}
	if !strings.HasPrefix(sb.GetLogDirectory(), c.LogDir+"/") {
		t.Errorf("sandbox log directory %q is not under %q", sb.GetLogDirectory(), c.LogDir)
	}
	if len(sb.GetLabels()) != 0 || len(sb.GetAnnotations()) != 0 {
		t.Errorf("sandbox labels %v annotations %v, want none", sb.GetLabels(), sb.GetAnnotations())
	}
	for attempt := uint32(0); attempt < 2; attempt++ {
		ctr, err := c.containerConfig("bench-cri-1", attempt)
		if err != nil {
			t.Fatal(err)
		}
		if ctr.GetMetadata().GetName() != "app" || ctr.GetMetadata().GetAttempt() != attempt ||
			ctr.GetImage().GetImage() != c.Image || !slicesEqual(ctr.GetCommand(), Command) ||
			ctr.GetLogPath() != fmt.Sprintf("app/%d.log", attempt) {
			t.Errorf("attempt %d: container %v", attempt, ctr)
		}
		sc := ctr.GetLinux().GetSecurityContext()
		if !proto.Equal(sc.GetNamespaceOptions(), wantNS) {
			t.Errorf("container namespaces %v, want %v", sc.GetNamespaceOptions(), wantNS)
		}
		if len(sc.GetMaskedPaths()) == 0 || len(sc.GetReadonlyPaths()) == 0 {
			t.Errorf("container masked %v read-only %v, want the defaults", sc.GetMaskedPaths(), sc.GetReadonlyPaths())
		}
		if got := ctr.GetLinux().GetResources().GetOomScoreAdj(); got != 1000 {
			t.Errorf("OOM score adjustment %d, want the BestEffort 1000", got)
		}
		paths := map[string]string{}
		for _, m := range ctr.GetMounts() {
			paths[m.GetContainerPath()] = m.GetHostPath()
		}
		for _, p := range []string{"/etc/hosts", "/dev/termination-log"} {
			host, ok := paths[p]
			if !ok {
				t.Errorf("attempt %d: no mount at %s in %v", attempt, p, ctr.GetMounts())
				continue
			}
			if _, err := os.Stat(host); err != nil {
				t.Errorf("attempt %d: mount source of %s: %v", attempt, p, err)
			}
		}
		if len(ctr.GetLabels()) != 0 || len(ctr.GetAnnotations()) != 0 {
			t.Errorf("container labels %v annotations %v, want none", ctr.GetLabels(), ctr.GetAnnotations())
		}
	}
}

// listCounter counts the sandbox lists, one per look at the runtime.
type listCounter struct {
	*critest.Runtime
	mu    sync.Mutex
	lists int
}

func (r *listCounter) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	r.lists++
	r.mu.Unlock()
	return r.Runtime.ListPodSandbox(ctx, f)
}

func (r *listCounter) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists
}

// TestWaitsLookAtTheRuntimeOnItsEvents: with the runtime's CRI events
// followed, WaitStarted looks at the runtime once, then once per event,
// instead of listing it every PollInterval while the agent works (which
// slowed the agents' own calls, and only theirs: the floor's Apply
// returns once its pods run); without events it polls, as before.
func TestWaitsLookAtTheRuntimeOnItsEvents(t *testing.T) {
	defer func(d time.Duration) { eventSafety = d }(eventSafety)
	eventSafety = time.Hour // no look but on an event
	for _, evented := range []bool{true, false} {
		t.Run(fmt.Sprintf("evented=%t", evented), func(t *testing.T) {
			mode := critest.EventsUnimplemented
			if evented {
				mode = critest.EventsOffered
			}
			fake := &listCounter{Runtime: critest.NewRuntime().WithEvents(mode)}
			rt := &Runtime{RS: fake, IS: critest.NewImages("img")}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if got := rt.FollowEvents(ctx); got != evented {
				t.Fatalf("FollowEvents = %t with events offered %t", got, evented)
			}
			sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: Namespace, Uid: "u"}}
			sb, err := fake.RunPodSandbox(ctx, sbCfg, "")
			if err != nil {
				t.Fatal(err)
			}
			cid, err := fake.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "img"}}, sbCfg)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				started map[string]Started
				err     error
			}
			done := make(chan result, 1)
			go func() {
				st, err := rt.WaitStarted(ctx, []string{"p"}, nil)
				done <- result{st, err}
			}()
			for fake.count() == 0 {
				time.Sleep(time.Millisecond)
			}
			if evented {
				time.Sleep(30 * PollInterval) // long enough for a poller to look many times
				if n := fake.count(); n != 1 {
					t.Errorf("%d looks at the runtime before any event, want 1", n)
				}
			} else {
				// A runtime without events is polled: a second look comes
				// (however loaded the machine, so no bound but a generous one).
				for deadline := time.Now().Add(time.Minute); fake.count() < 2; time.Sleep(PollInterval) {
					if time.Now().After(deadline) {
						t.Fatalf("%d looks at a runtime without events in a minute, want it polled", fake.count())
					}
				}
			}
			if err := fake.StartContainer(ctx, cid); err != nil {
				t.Fatal(err)
			}
			st, err := fake.ContainerStatus(ctx, cid, false)
			if err != nil {
				t.Fatal(err)
			}
			fake.Emit(fake.Event(cid, sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, st.GetStatus().GetStartedAt()))
			r := <-done
			if r.err != nil || r.started["p"].ID != cid {
				t.Fatalf("WaitStarted = %v, %v; want container %s", r.started, r.err, cid)
			}
			if evented && fake.count() != 2 {
				t.Errorf("%d looks at the runtime after one event, want 2", fake.count())
			}
		})
	}
}

// lookFirst is the raw-CRI agent whose Apply returns only once its pods
// run, and starts them only after the bench has looked at the runtime
// once while it was being asked.
type lookFirst struct {
	*RawCRI
	looked <-chan struct{}
}

func (l lookFirst) Apply(ctx context.Context, names []string, via Via) error {
	select {
	case <-l.looked:
	case <-ctx.Done():
		return ctx.Err()
	}
	return l.RawCRI.Apply(ctx, names, via)
}

// lookCounter closes looked at the first ListPodSandbox.
type lookCounter struct {
	*critest.Runtime
	once   sync.Once
	looked chan struct{}
}

func (l *lookCounter) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	l.once.Do(func() { close(l.looked) })
	return l.Runtime.ListPodSandbox(ctx, f)
}

// A synchronous agent (the floor) is watched while it is asked, as the
// agents that work after Apply returns are: with the wait begun only
// after Apply, this agent would never start its pods. An Apply that fails
// ends the wait with its error.
func TestUpWatchesTheRuntimeWhileTheAgentIsAsked(t *testing.T) {
	fake := &lookCounter{Runtime: critest.NewRuntime(), looked: make(chan struct{})}
	rt := &Runtime{RS: fake, IS: critest.NewImages("img")}
	agent := lookFirst{RawCRI: &RawCRI{RT: rt, Image: "img", LogDir: t.TempDir()}, looked: fake.looked}
	r := &run{rt: rt, a: agent, o: Options{Timeout: time.Minute}, tag: "t"}
	names := r.names(1)
	_, started, err := r.up(t.Context(), names, ViaAPI)
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 {
		t.Fatalf("started %v", started)
	}

	failing := &run{rt: rt, a: failingAgent{}, o: Options{Timeout: time.Minute}, tag: "f"}
	if _, _, err := failing.up(t.Context(), failing.names(1), ViaAPI); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("failing Apply: err %v, want its own error at once", err)
	}
}

type failingAgent struct{ otherAgent }

func (failingAgent) Apply(context.Context, []string, Via) error { return errors.New("refused") }

// TestReadMemorySplitsResidentMemory: the idle RSS row says how much of
// the agent's memory is its own (anonymous) and how much its binaries'
// pages, per process, from /proc/PID/status.
func TestReadMemorySplitsResidentMemory(t *testing.T) {
	self := os.Getpid()
	m, err := readMemory([]int{self, self})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Each) != 2 || m.Each[0] <= 0 || m.RSS != m.Each[0]+m.Each[1] {
		t.Fatalf("per process %v, total %v", m.Each, m.RSS)
	}
	if m.Anon <= 0 || m.File <= 0 || m.Anon+m.File > m.RSS+1 {
		t.Errorf("anonymous %.1f + file-backed %.1f MB against %.1f MB resident", m.Anon, m.File, m.RSS)
	}
	if !strings.Contains(m.note(), fmt.Sprintf("per process %.1f + %.1f MB", m.Each[0], m.Each[1])) {
		t.Errorf("note %q", m.note())
	}
	if _, err := readMemory([]int{-1}); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

// TestSyncpodAppliesByCLI: by CLI each pod's manifest is written and
// handed to one run of the syncpodctl command, "apply -f FILE" after its
// own arguments; without a command there is no such way in.
func TestSyncpodAppliesByCLI(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	log := filepath.Join(dir, "calls")
	// A stand-in for syncpodctl: it records its arguments and the file's
	// pod name.
	ctl := []string{"/bin/sh", "-c", `echo "$@" "$(grep -m1 '  name:' "$5")" >>` + log, "syncpodctl", "--server", "unix:///planner.sock"}
	s := Syncpod{FileAgent: FileAgent{Dir: manifests, Image: "img"}, CLI: ctl}
	if !slices.Contains(s.Vias(), ViaCLI) || slices.Contains(Syncpod{}.Vias(), ViaCLI) {
		t.Fatalf("vias %v, and without a command %v", s.Vias(), Syncpod{}.Vias())
	}
	if err := s.Apply(t.Context(), []string{"p1"}, ViaCLI); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "--server unix:///planner.sock apply -f " + filepath.Join(dir, ".bench-cli", "p1.yaml") + "   name: p1\n"
	if string(b) != want {
		t.Errorf("syncpodctl ran with %q, want %q", b, want)
	}
	s.CLI = []string{"/bin/sh", "-c", "echo refused >&2; exit 1", "syncpodctl"}
	if err := s.Apply(t.Context(), []string{"p2"}, ViaCLI); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a failed syncpodctl: %v, want its output in the error", err)
	}
}

// TestRemoveAllSandboxes: every sandbox of the runtime is stopped and
// removed, whatever its name, and the count says how many there were;
// RemoveSandboxes removes only those named.
func TestRemoveAllSandboxes(t *testing.T) {
	ctx := t.Context()
	fake := critest.NewRuntime()
	rt := &Runtime{RS: fake, IS: critest.NewImages("img")}
	for i := range 12 {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("p%d", i), Uid: fmt.Sprintf("u%d", i), Namespace: "n"}}
		if _, err := fake.RunPodSandbox(ctx, cfg, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.RemoveSandboxes(ctx, map[string]bool{"p0": true, "p1": true}); err != nil {
		t.Fatal(err)
	}
	left, err := fake.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 10 {
		t.Fatalf("%d sandboxes left after removing 2 of 12", len(left))
	}
	n, err := rt.RemoveAllSandboxes(ctx, 4)
	if err != nil || n != 10 {
		t.Fatalf("RemoveAllSandboxes: %d, %v; want 10", n, err)
	}
	if left, err = fake.ListPodSandbox(ctx, nil); err != nil || len(left) != 0 {
		t.Errorf("%d sandboxes left (%v)", len(left), err)
	}
}

// TestWaitQuietBound: with a busy share no machine is under, the wait
// ends at its bound, and says how busy the last window was; with no
// bound it does not wait (even on a canceled context).
func TestWaitQuietBound(t *testing.T) {
	waited, busy, err := waitQuiet(t.Context(), 300*time.Millisecond, 0, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if waited < 0 || busy < 0 || busy > 100 {
		t.Errorf("waited %v, busy %.1f %%", waited, busy)
	}
	if _, _, err := waitQuiet(canceled(t), time.Minute, 0, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled wait: %v", err)
	}
	if waited, busy, err := waitQuiet(canceled(t), 0, 0, time.Second); waited != 0 || busy != 0 || err != nil {
		t.Errorf("no bound: waited %v, busy %.1f %%, %v; want no wait at all", waited, busy, err)
	}
}

func canceled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// busyRemoval refuses each sandbox's first removal, as containerd does
// when a container of it is still running (a stop that did not finish).
// With stuck, every removal of that sandbox is refused.
type busyRemoval struct {
	*critest.Runtime
	mu      sync.Mutex
	refused map[string]bool
	stuck   string
}

func (b *busyRemoval) RemovePodSandbox(ctx context.Context, id string) error {
	b.mu.Lock()
	first := !b.refused[id]
	b.refused[id] = true
	b.mu.Unlock()
	if first || id == b.stuck {
		return status.Error(codes.Unknown, "failed to remove container: container is still running, to stop first")
	}
	return b.Runtime.RemovePodSandbox(ctx, id)
}

// TestRemoveAllSandboxesTriesAgain: a removal the runtime refuses is
// tried again, and every sandbox is gone in the end.
func TestRemoveAllSandboxesTriesAgain(t *testing.T) {
	ctx := t.Context()
	fake := &busyRemoval{Runtime: critest.NewRuntime(), refused: map[string]bool{}}
	for i := range 3 {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("p%d", i), Uid: fmt.Sprintf("u%d", i), Namespace: "n"}}
		if _, err := fake.RunPodSandbox(ctx, cfg, ""); err != nil {
			t.Fatal(err)
		}
	}
	rt := &Runtime{RS: fake, IS: critest.NewImages("img"), retryDelay: time.Millisecond}
	if n, err := rt.RemoveAllSandboxes(ctx, 3); err != nil || n != 3 {
		t.Fatalf("RemoveAllSandboxes: %d, %v; want 3", n, err)
	}
	if left, err := fake.Runtime.ListPodSandbox(ctx, nil); err != nil || len(left) != 0 {
		t.Errorf("%d sandboxes left (%v)", len(left), err)
	}
}

// TestRemoveAllSandboxesGoesOnPastOneThatStays: a sandbox the runtime
// never lets go is counted and named, and the others are still removed.
func TestRemoveAllSandboxesGoesOnPastOneThatStays(t *testing.T) {
	ctx := t.Context()
	fake := &busyRemoval{Runtime: critest.NewRuntime(), refused: map[string]bool{}}
	var ids []string
	for i := range 3 {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("p%d", i), Uid: fmt.Sprintf("u%d", i), Namespace: "n"}}
		id, err := fake.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	fake.stuck = ids[1]
	rt := &Runtime{RS: fake, IS: critest.NewImages("img"), retryDelay: time.Millisecond}
	n, err := rt.RemoveAllSandboxes(ctx, 1)
	if n != 3 || err == nil || !strings.Contains(err.Error(), "1 of 3 sandboxes not removed") || !strings.Contains(err.Error(), ids[1]) {
		t.Fatalf("RemoveAllSandboxes: %d, %v; want 3 and the stuck one named", n, err)
	}
	left, err := fake.Runtime.ListPodSandbox(ctx, nil)
	if err != nil || len(left) != 1 || left[0].GetId() != ids[1] {
		t.Errorf("left %v (%v), want only the stuck sandbox", left, err)
	}
}
