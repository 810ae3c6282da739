package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/syncpod/syncpod/bench"
)

// podsPlotSuffix ends the name of a section's start-against-pods plot.
const podsPlotSuffix = "start-against-pods.svg"

// The plots' size.
const (
	plotWidth  = 7 * vg.Inch
	plotHeight = 4 * vg.Inch
)

// sectionPlots draws a section's plots: one per row that two or more
// agents measured at least twice (distributionPlot), in table order, then
// the start of N pods against N (podsPlot) when the section has starts of
// two pod counts or more. Their names begin with the slug of the
// section's title, so that the plots of sections carried over from
// earlier runs (Merge) never share a name with this run's.
func sectionPlots(s Section) ([]Plot, error) {
	prefix := slug(s.Title)
	agents, byAgent := bench.Columns(s.Reports)
	var out []Plot
	for _, m := range bench.Measures {
		var names []string
		var samples []bench.Sample
		for _, a := range agents {
			r := byAgent[a][m]
			if r == nil || r.Unit != "" || len(r.Seconds) < 2 {
				continue
			}
			names = append(names, a)
			samples = append(samples, r.Seconds)
		}
		if len(names) < 2 {
			continue
		}
		svg, err := distributionPlot(m, names, samples)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		out = append(out, Plot{Name: prefix + "-" + slug(m) + ".svg", Title: m, SVG: svg})
	}
	if series := podSeries(agents, byAgent); len(series) > 0 {
		svg, err := podsPlot(series)
		if err != nil {
			return nil, fmt.Errorf("start against pods: %w", err)
		}
		out = append(out, Plot{Name: prefix + "-" + podsPlotSuffix, Title: "start of the last of N pods asked for at once, against N", SVG: svg})
	}
	return out, nil
}

// distributionPlot draws one row's samples: a box plot per agent, in
// milliseconds, every sample a dot beside its agent's box.
func distributionPlot(measure string, agents []string, samples []bench.Sample) ([]byte, error) {
	p := plot.New()
	p.Title.Text = wrap(measure, 72)
	p.Y.Label.Text = "milliseconds"
	labels := make([]string, len(agents))
	for i, a := range agents {
		ms := make(plotter.Values, len(samples[i]))
		for j, s := range samples[i] {
			ms[j] = s * 1000
		}
		box, err := plotter.NewBoxPlot(vg.Points(36), float64(i), ms)
		if err != nil {
			return nil, err
		}
		box.FillColor = lighter(plotutil.Color(i))
		dots := make(plotter.XYs, len(ms))
		for j, v := range ms {
			dots[j] = plotter.XY{X: float64(i) + 0.3, Y: v}
		}
		sc, err := plotter.NewScatter(dots)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(i), Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
		p.Add(box, sc)
		labels[i] = fmt.Sprintf("%s (n=%d)", a, len(ms))
	}
	p.NominalX(labels...)
	// Room for the last agent's dots.
	p.X.Min, p.X.Max = -0.5, float64(len(agents))-0.5
	p.Add(plotter.NewGrid())
	return svgOf(p)
}

// podRow is a row that starts a number of pods at once, and the way in
// it names (a series of the start-against-pods plot is an agent's way in).
type podRow struct {
	measure string
	pods    int // 0: the result's Pods
	way     string
}

// podRows are the rows of the start-against-pods plot.
var podRows = []podRow{
	{bench.MeasureStartAPI, 1, "API"},
	{bench.Measure10API, 10, "API"},
	{bench.Measure50API, 50, "API"},
	{bench.MeasureStartFile, 1, "manifest file"},
	{bench.Measure10File, 10, "manifest file"},
	{bench.Measure50File, 50, "manifest file"},
	{bench.MeasureStartPaired, 1, "alternating with raw CRI"},
	{bench.Measure10Paired, 10, "alternating with raw CRI"},
	{bench.MeasureStartFileVersus, 1, "manifest file, alternating the two agents"},
	{bench.Measure10FileVersus, 10, "manifest file, alternating the two agents"},
	{bench.MeasureScaleStart, 0, "simulated runtime"},
}

// podPoint is one start of pods pods: the median and its 95 % interval
// (ok false: too few samples for one).
type podPoint struct {
	pods           int
	median, lo, hi float64
	ok             bool
}

type podSerie struct {
	label  string
	points []podPoint
}

// podSeries are the agents' starts by pod count, one series per agent
// and way in, in the order of agents then podRows; none unless two pod
// counts or more were measured.
func podSeries(agents []string, byAgent map[string]map[string]*bench.Result) []podSerie {
	var out []podSerie
	counts := map[int]bool{}
	for _, a := range agents {
		var ways []string
		byWay := map[string][]podPoint{}
		for _, row := range podRows {
			r := byAgent[a][row.measure]
			if r == nil || len(r.Seconds) == 0 {
				continue
			}
			n := row.pods
			if n == 0 {
				n = r.Pods
			}
			med := r.Seconds.Quantile(0.5)
			if n <= 0 || !(med > 0) {
				continue
			}
			pt := podPoint{pods: n, median: med}
			if lo, hi, ok := r.Seconds.MedianCI(0.95); ok && lo > 0 {
				pt.lo, pt.hi, pt.ok = lo, hi, true
			}
			if byWay[row.way] == nil {
				ways = append(ways, row.way)
			}
			byWay[row.way] = append(byWay[row.way], pt)
			counts[n] = true
		}
		for _, w := range ways {
			pts := byWay[w]
			slices.SortStableFunc(pts, func(x, y podPoint) int { return x.pods - y.pods })
			out = append(out, podSerie{label: a + ", " + w, points: pts})
		}
	}
	if len(counts) < 2 {
		return nil
	}
	return out
}

// podsPlot draws each series' median start against its pod count, with
// the median's 95 % interval, on logarithmic axes.
func podsPlot(series []podSerie) ([]byte, error) {
	p := plot.New()
	p.Title.Text = "start of the last of N pods asked for at once"
	p.X.Label.Text = "pods (N)"
	p.Y.Label.Text = "milliseconds (median, 95 % interval)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, s := range series {
		xys := make(plotter.XYs, len(s.points))
		var bars errorPoints
		for j, pt := range s.points {
			xys[j] = plotter.XY{X: float64(pt.pods), Y: pt.median * 1000}
			lo, hi := pt.median, pt.median
			if pt.ok {
				lo, hi = pt.lo, pt.hi
				bars = append(bars, errorPoint{xys[j], (pt.median - lo) * 1000, (hi - pt.median) * 1000})
			}
			xmin, xmax = min(xmin, float64(pt.pods)), max(xmax, float64(pt.pods))
			ymin, ymax = min(ymin, lo*1000), max(ymax, hi*1000)
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		points.Color, points.Shape = plotutil.Color(i), plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.label, line, points)
		if len(bars) > 0 {
			eb, err := plotter.NewYErrorBars(bars)
			if err != nil {
				return nil, err
			}
			eb.Color = plotutil.Color(i)
			p.Add(eb)
		}
	}
	// Explicit ranges: a logarithmic axis cannot take the ±1 padding a
	// range of one value would get.
	p.X.Min, p.X.Max = xmin/2, xmax*2
	p.Y.Min, p.Y.Max = ymin/1.5, ymax*1.5
	p.Add(plotter.NewGrid())
	return svgOf(p)
}

// errorPoint is a point and its distances down and up to its interval's
// ends.
type errorPoint struct {
	plotter.XY
	down, up float64
}

type errorPoints []errorPoint

func (e errorPoints) Len() int                        { return len(e) }
func (e errorPoints) XY(i int) (float64, float64)     { return e[i].X, e[i].Y }
func (e errorPoints) YError(i int) (float64, float64) { return e[i].down, e[i].up }

// svgOf renders p as an SVG document.
func svgOf(p *plot.Plot) ([]byte, error) {
	w, err := p.WriterTo(plotWidth, plotHeight, "svg")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// lighter is c halfway to white, for a box's fill.
func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 255) / 2) }
	return color.RGBA{mix(r), mix(g), mix(b), 255}
}

// slug is a measure's name as a file name: lower-case ASCII letters and
// digits, every other run of characters one dash.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// wrap breaks s at spaces into as few lines of about equal length as keep
// each within width bytes (a longer word stays whole).
func wrap(s string, width int) string {
	if n := (len(s) + width - 1) / width; n > 1 {
		width = (len(s) + n - 1) / n
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}
