package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RelistMetric is the PLEG's relist duration histogram.
const RelistMetric = "syncpod_pleg_relist_duration_seconds"

// KubeletRelistMetric is the kubelet's (its generic PLEG's relists).
const KubeletRelistMetric = "kubelet_pleg_relist_duration_seconds"

// scale asks for o.Scale pods at once (on crisim in simulated mode: no
// processes, so thousands fit), waits until all run, then, idle, samples
// the agent's CPU and memory and the PLEG's relists over o.Idle (from its
// metrics at o.PLEGMetrics: the relist duration histogram's buckets give
// the p99's upper bound), and deletes them.
func (s *run) scale(ctx context.Context, via Via) ([]Result, error) {
	n := s.o.Scale
	if _, err := s.rt.IS.PullImage(ctx, &runtimeapi.ImageSpec{Image: s.o.Image}, nil, nil); err != nil {
		return nil, fmt.Errorf("pull %s: %w", s.o.Image, err)
	}
	names := s.names(n)
	t0, started, err := s.up(ctx, names, via)
	if err != nil {
		return nil, err
	}
	start := Result{Measure: MeasureScaleStart, Agent: s.a.Name(), Note: fmt.Sprintf("[%d pods]", n), Pods: n}
	start.Seconds.Add(lastStarted(started).Sub(t0))
	if err := sleep(ctx, 5*time.Second); err != nil {
		return nil, err
	}
	before, err := cpuTicks(s.o.PIDs)
	if err != nil {
		return nil, err
	}
	h0, err := scrapeHistogram(ctx, s.o.PLEGMetrics, RelistMetric)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if err := sleep(ctx, s.o.Idle); err != nil {
		return nil, err
	}
	after, err := cpuTicks(s.o.PIDs)
	if err != nil {
		return nil, err
	}
	h1, err := scrapeHistogram(ctx, s.o.PLEGMetrics, RelistMetric)
	if err != nil {
		return nil, err
	}
	total := float64(after-before) / clkTck / time.Since(began).Seconds() * 100
	mem, err := readMemory(s.o.PIDs)
	if err != nil {
		return nil, err
	}
	d := h1.sub(h0)
	relist := Result{Measure: MeasureScaleRelist, Agent: s.a.Name(), Unit: "ms (upper bound)", Value: d.quantileBound(0.99) * 1000,
		Note: fmt.Sprintf("[%d relists, mean %.1f ms, %d pods]", int(d.count), d.mean()*1000, n)}
	out := []Result{
		start,
		{Measure: MeasureScaleCPU, Agent: s.a.Name(), Unit: "% of a core", Value: total / float64(n),
			Note: fmt.Sprintf("[%.2f %% of a core for %d pods]", total, n)},
		{Measure: MeasureScaleRSS, Agent: s.a.Name(), Unit: "MB", Value: mem.RSS, Note: fmt.Sprintf("[%d pods] %s", n, mem.note())},
		relist,
	}
	// Delete in one go; the sandboxes stopping is the end.
	if _, err := s.down(ctx, names, via); err != nil {
		return out, err
	}
	return out, nil
}

// histogram is one scraped Prometheus histogram: cumulative counts by
// upper bound, ascending, the last +Inf.
type histogram struct {
	le     []float64
	counts []float64
	sum    float64
	count  float64
}

func (h histogram) sub(o histogram) histogram {
	out := histogram{le: h.le, counts: make([]float64, len(h.counts)), sum: h.sum - o.sum, count: h.count - o.count}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(o.counts) {
			out.counts[i] -= o.counts[i]
		}
	}
	return out
}

func (h histogram) mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// quantileBound is the upper bound of the bucket holding the q-quantile
// (NaN when empty; +Inf when it is past the last finite bucket).
func (h histogram) quantileBound(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := math.Ceil(q * h.count)
	for i, c := range h.counts {
		if c >= rank {
			return h.le[i]
		}
	}
	return math.Inf(1)
}

// scrapeHistogram reads histogram name from a Prometheus text endpoint.
func scrapeHistogram(ctx context.Context, url, name string) (histogram, error) {
	return scrapeHistogramWith(ctx, http.DefaultClient, url, name)
}

// scrapeHistogramWith is scrapeHistogram through client (e.g. one that
// accepts the kubelet's self-signed serving certificate).
func scrapeHistogramWith(ctx context.Context, client *http.Client, url, name string) (histogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return histogram{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return histogram{}, err
	}
	defer resp.Body.Close()
	return parseHistogram(bufio.NewScanner(resp.Body), name)
}

func parseHistogram(sc *bufio.Scanner, name string) (histogram, error) {
	var h histogram
	found := false
	for sc.Scan() {
		line := sc.Text()
		val := func() (float64, error) {
			f := strings.Fields(line)
			return strconv.ParseFloat(f[len(f)-1], 64)
		}
		switch {
		case strings.HasPrefix(line, name+"_bucket{"):
			i := strings.Index(line, `le="`)
			if i < 0 {
				continue
			}
			rest := line[i+4:]
			le, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
			if err != nil {
				return h, fmt.Errorf("%s: %q: %w", name, line, err)
			}
			v, err := val()
			if err != nil {
				return h, fmt.Errorf("%s: %q: %w", name, line, err)
			}
			h.le, h.counts = append(h.le, le), append(h.counts, v)
			found = true
		case strings.HasPrefix(line, name+"_sum"):
			v, err := val()
			if err != nil {
				return h, err
			}
			h.sum = v
		case strings.HasPrefix(line, name+"_count"):
			v, err := val()
			if err != nil {
				return h, err
			}
			h.count = v
		}
	}
	if err := sc.Err(); err != nil {
		return h, err
	}
	if !found {
		return h, fmt.Errorf("no histogram %s in the metrics", name)
	}
	return h, nil
}
