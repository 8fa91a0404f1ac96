package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kooperkit/kooper/bench/internal/chart"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// Sharding chart size, in pixels.
const (
	shardHeight = 560
	shardLegend = 190 // the legend, right of the plot
)

// Colors of the replicas, in start order, and of the unbalanced spans.
var (
	replicaColors = []color.RGBA{
		{0x1f, 0x6f, 0xd1, 0xff}, // blue
		{0xe8, 0x6a, 0x10, 0xff}, // orange
		{0x2e, 0x9e, 0x3f, 0xff}, // green
		{0x7b, 0x4f, 0xc4, 0xff}, // purple
		{0xc2, 0x4c, 0x9a, 0xff}, // magenta
	}
	unbalancedColor = color.RGBA{0xfd, 0xe6, 0xc8, 0xff}
	markerColor     = color.RGBA{0x8c, 0x95, 0x9f, 0xff}
)

// WriteShardingPNG draws the first completed membership run of scenario 6
// (ShardingChart) to path: a PNG, or another format if the extension names
// one (see chart.Page.Save).
func WriteShardingPNG(path string, res runner.Results) error {
	pg, err := ShardingChart(res)
	if err != nil {
		return err
	}
	return pg.Save(path)
}

// ShardingChart is the handlings per second of each replica of a
// membership run over time (a log scale: slot moves handle hundreds of
// pods at once, the writer a few per second), with each change marked and
// the time until the slots were balanced again shaded.
func ShardingChart(res runner.Results) (*chart.Page, error) {
	var m *runner.ShardMoves
	round := 0
	for _, r := range res.Runs {
		if r.Moves != nil && len(r.Moves.Rates.Counts) > 0 {
			m, round = r.Moves, r.Round
			if r.Err == "" {
				break
			}
		}
	}
	if m == nil {
		return nil, errors.New("no membership run (scenario 6) to chart")
	}
	st := res.Sharding
	if st == nil {
		st = &runner.ShardingSettings{}
	}
	l := res.Lease
	p, legend, err := movesPlot(m)
	if err != nil {
		return nil, err
	}
	return &chart.Page{
		Title: "Kooper sharding: handlings per second of each replica as replicas come and go (log scale)",
		Subtitle: fmt.Sprintf("%d pods, gate on (%s), %d slots; a writer updates a random pod every %s; each handling sleeps %s; Lease %s/%s/%s; round %d; GOMAXPROCS %d",
			m.Pods, m.Mode, st.Slots, st.WriteEvery, st.Handle, l.LeaseDuration, l.RenewDeadline, l.RetryPeriod, round, res.GOMAXPROCS),
		Footnote: fmt.Sprintf("Handlings per second (1 s buckets, by their end); dashed: membership changes; shaded: until the slots were balanced again. %d overlaps, %d final versions lost.",
			m.Overlaps, m.Lost),
		Plots:  [][]*plot.Plot{{p}},
		Width:  chartWidth,
		Height: shardHeight,
		Right:  shardLegend,
		Legend: legend,
	}, nil
}

// movesPlot plots m: a line per replica, from its first bucket with a
// handling to its last (before it joined and after it left, it handled
// nothing), on a log scale that keeps 0; the changes as dashed lines with
// their labels at the top; the time from each change until its slots were
// balanced again as a shaded span. The legend names each replica with its
// handlings.
func movesPlot(m *runner.ShardMoves) (*plot.Plot, *plot.Legend, error) {
	p := chart.New()
	p.X.Label.Text = "seconds since the first replicas started"
	p.Y.Label.Text = "handlings per second"
	p.Y.Scale = log1pScale{}
	p.Y.Tick.Marker = plot.TickerFunc(zeroAndLogTicks)
	p.Y.AutoRescale = true
	p.X.Tick.Marker = plot.TickerFunc(chart.EveryTick)
	legend := chart.NewLegend()

	width := m.Rates.Width.Seconds()
	buckets := 0
	for _, counts := range m.Rates.Counts {
		buckets = max(buckets, len(counts))
	}
	spans := &spans{color: unbalancedColor}
	for i, c := range m.Changes {
		if c.Balanced == 0 {
			continue
		}
		end := c.At + c.Balanced
		if c.Balanced < 0 { // never balanced: until the next change
			end = m.Changes[min(i+1, len(m.Changes)-1)].At
		}
		spans.spans = append(spans.spans, [2]float64{c.At.Seconds(), end.Seconds()})
	}
	marks := &marks{style: draw.LineStyle{Color: markerColor, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(2), vg.Points(2.5)}}}
	for _, c := range m.Changes {
		marks.at = append(marks.at, c.At.Seconds())
		marks.labels = append(marks.labels, shortChange(c.What))
	}
	p.Add(spans, chart.Grid(true), marks)

	for i, counts := range m.Rates.Counts {
		name := m.Rates.Replicas[i]
		first := slices.IndexFunc(counts, func(n int) bool { return n > 0 })
		if first < 0 {
			continue
		}
		last := len(counts) - 1
		for counts[last] == 0 {
			last--
		}
		var xys plotter.XYs
		for b := first; b <= last; b++ {
			xys = append(xys, plotter.XY{X: (float64(b) + 0.5) * width, Y: float64(counts[b])})
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, nil, fmt.Errorf("could not plot replica %s: %w", name, err)
		}
		line.Color, line.Width = replicaColors[i%len(replicaColors)], vg.Points(1.25)
		p.Add(line)
		legend.Add(fmt.Sprintf("replica %s: %d handlings", name, m.Handlings[name]), line)
	}
	legend.Add("unbalanced", spans)
	legend.Add("membership change", marks)
	p.X.Min, p.X.Max = 0, float64(max(buckets, 1))*width
	p.Y.Min, p.Y.Max = 0, math.Max(p.Y.Max, 1) // 1 when no replica handled anything
	return p, &legend, nil
}

// log1pScale is a logarithmic scale of 1+v: it keeps 0, where a replica
// handled nothing, at the bottom of the axis.
type log1pScale struct{}

// Normalize implements plot.Normalizer.
func (log1pScale) Normalize(low, high, v float64) float64 {
	return (math.Log1p(v) - math.Log1p(low)) / (math.Log1p(high) - math.Log1p(low))
}

// zeroAndLogTicks are plot.LogTicks from 1 to a power of ten at or above
// high, and 0 below them.
func zeroAndLogTicks(_, high float64) []plot.Tick {
	return append([]plot.Tick{{Value: 0, Label: "0"}}, plot.LogTicks{Prec: -1}.Ticks(1, math.Max(high, 1))...)
}

// spans shades the whole height of the plot between pairs of x values.
type spans struct {
	spans [][2]float64
	color color.Color
}

// Plot implements plot.Plotter.
func (s *spans) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	for _, sp := range s.spans {
		from, to := x(sp[0]), max(x(sp[1]), x(sp[0])+chart.Pixels(2))
		c.FillPolygon(s.color, c.ClipPolygonX([]vg.Point{
			{X: from, Y: c.Min.Y}, {X: from, Y: c.Max.Y}, {X: to, Y: c.Max.Y}, {X: to, Y: c.Min.Y},
		}))
	}
}

// Thumbnail implements plot.Thumbnailer.
func (s *spans) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, c.ClipPolygonY([]vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y},
	}))
}

// marks draws a vertical line across the plot at each x, labelled at the
// top; the labels alternate between two rows so that close marks keep
// theirs readable.
type marks struct {
	at     []float64
	labels []string
	style  draw.LineStyle
}

// Plot implements plot.Plotter.
func (m *marks) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	sty := chart.Text(8.5, chart.TextColor)
	sty.YAlign = draw.YTop
	row := sty.Height("0") + chart.Pixels(2)
	for i, at := range m.at {
		xi := x(at)
		if !c.ContainsX(xi) {
			continue
		}
		c.StrokeLine2(m.style, xi, c.Min.Y, xi, c.Max.Y)
		width := sty.Width(m.labels[i])
		c.FillText(sty, vg.Point{X: min(xi+chart.Pixels(3), c.Max.X-width), Y: c.Max.Y - vg.Length(i%2)*row}, m.labels[i])
	}
}

// Thumbnail implements plot.Thumbnailer.
func (m *marks) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(m.style, c.Min.X, y, c.Max.X, y)
}

// shortChange labels a change on the chart: "start d: 4 replicas" is
// "+d (4)".
func shortChange(what string) string {
	head, count, _ := strings.Cut(what, ": ")
	count = strings.TrimSuffix(count, " replicas")
	switch {
	case strings.HasPrefix(head, "start ") && strings.Contains(head, ","):
		return strings.TrimPrefix(head, "start ")
	case strings.HasPrefix(head, "start "):
		return "+" + strings.TrimPrefix(head, "start ") + " (" + count + ")"
	case strings.HasPrefix(head, "stop "):
		return "-" + strings.Fields(head)[1] + " (" + count + ")"
	case strings.HasPrefix(head, "SIGKILL "):
		return "kill " + strings.TrimPrefix(head, "SIGKILL ") + " (" + count + ")"
	}
	return head
}
