package report

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kooperkit/kooper/bench/internal/chart"
	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// ChartBase is what every bar of the chart is divided by.
const ChartBase = impls.NameKooperV2

// chartBlock is one metric of the chart: a bar per implementation.
type chartBlock struct {
	title  string
	metric Metric
}

// The chart's two columns of blocks, top to bottom.
var chartColumns = [][]chartBlock{
	{
		{"initial sync: time-to-all-handled", TimeToAllHandled},
		{"initial sync: CPU", SyncCPU},
		{"initial sync: heap per cached pod", HeapPerPod},
		{"initial sync: RSS", RSS},
	},
	{
		{"churn: CPU", ChurnCPU},
		{"churn: p99 latency", ChurnP99},
		{"two controllers: heap per pod", PairHeapPerPod},
		{"two controllers: RSS", PairRSS},
	},
}

// Chart size, in pixels: the width is fixed, the height grows with the
// bars of the tallest row of blocks.
const (
	chartWidth   = 1200
	chartPadding = 110 // title, subtitle and footnote
	blockPadding = 62  // a block's title and value axis
	barPitch     = 18  // a bar and the gap to the next
	maxChartXMax = 5.0 // longer bars are cut (their label says how long)
)

// barWidth is the thickness of a bar.
var barWidth = chart.Pixels(12)

// Colors of the implementations.
var (
	baseColor  = color.RGBA{0x1f, 0x23, 0x28, 0xff}
	implColors = map[string]color.RGBA{
		impls.NameKooper:            {0x1f, 0x6f, 0xd1, 0xff}, // blue
		impls.NameKooperMetadata:    {0x2e, 0x9e, 0x3f, 0xff}, // green
		impls.NameControllerRuntime: {0xe8, 0x6a, 0x10, 0xff}, // orange
		impls.NameFloor:             {0x8a, 0x6d, 0x1e, 0xff}, // ochre
	}
	otherColor = color.RGBA{0xd0, 0x2f, 0x3a, 0xff} // red
)

// barRow is one bar of a block.
type barRow struct {
	name  string
	value float64 // the bar's length; NaN for no bar
	label string  // beside the bar's end
	color color.Color
}

// barBlock is one metric of a chart: a horizontal bar per implementation,
// top to bottom, on a value axis from 0.
type barBlock struct {
	title string
	axis  string // the value axis's label
	rows  []barRow
	max   float64 // the end of the value axis (longer bars are cut); 0: the longest bar's
	rule  float64 // a vertical line here, the baseline of ratios; 0: none
}

// WritePNG draws the chart of res's key ratios (Chart) and writes it to
// path: a PNG, or another format if the extension names one (see
// chart.Page.Save).
func WritePNG(path string, res runner.Results) error {
	pg, err := Chart(res)
	if err != nil {
		return err
	}
	return pg.Save(path)
}

// Chart is every implementation's median ÷ kooper-v2's for the key
// metrics: horizontal bars, one block per metric, all on one scale, with
// a line at 1.0.
func Chart(res runner.Results) (*chart.Page, error) {
	blocks := ratioBlocks(res)
	pg := &chart.Page{
		Title: "Kooper vs its peers on a real control plane: median / kooper-v2's median (lower is better)",
		Subtitle: fmt.Sprintf("%d pods (%.0f B JSON, %.0f B protobuf each), %d updates, rounds: %d, each run in a fresh process; GOMAXPROCS %d, %s",
			res.Pods, res.PodSize.JSON, res.PodSize.Protobuf, res.Updates, res.Rounds, res.GOMAXPROCS, res.GoVersion),
		Footnote: fmt.Sprintf("Each bar: an implementation's median (rounds: %d) divided by %s's median for the same metric; every block on one scale, 0 to %.2gx.",
			res.Rounds, ChartBase, blocks[0][0].max),
		Width: chartWidth,
	}
	var err error
	if pg.Plots, pg.Height, err = blockPlots(blocks); err != nil {
		return nil, err
	}
	pg.Height += chartPadding
	return pg, nil
}

// ratioBlocks are the blocks of Chart, in rows: each implementation's
// ratio to ChartBase, on a scale from 0 to the longest bar plus room for
// its label, at least 1.25 and at most maxChartXMax.
func ratioBlocks(res runner.Results) [][]barBlock {
	blockImpls := func(b chartBlock) []string {
		names := res.SingleImpls
		if b.metric.Scenario == PairRSS.Scenario {
			names = res.PairImpls
		}
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == ChartBase })
	}
	xMax := 1.25
	for _, col := range chartColumns {
		for _, b := range col {
			for _, n := range blockImpls(b) {
				if r, ok := Ratio(res, n, ChartBase, b.metric); ok {
					xMax = math.Max(xMax, r*1.1)
				}
			}
		}
	}
	xMax = math.Min(xMax, maxChartXMax)
	rows := make([][]barBlock, len(chartColumns[0]))
	for _, col := range chartColumns {
		for i, b := range col {
			block := barBlock{title: b.title, axis: "median / " + ChartBase + "'s median (1.0: the line)", max: xMax, rule: 1}
			for _, n := range blockImpls(b) {
				row := barRow{name: n, value: math.NaN(), label: "-", color: colorOf(n)}
				if r, ok := Ratio(res, n, ChartBase, b.metric); ok {
					row.value, row.label = r, fmt.Sprintf("%.2fx", r)
					if r > xMax {
						row.label = ">" + row.label
					}
				}
				block.rows = append(block.rows, row)
			}
			rows[i] = append(rows[i], block)
		}
	}
	return rows
}

// blockPlots plots blocks, in rows, and returns the plots with the height
// in pixels they need, from the tallest block of each row.
func blockPlots(blocks [][]barBlock) ([][]*plot.Plot, int, error) {
	plots := make([][]*plot.Plot, len(blocks))
	height := 0
	for i, row := range blocks {
		bars := 1
		for _, b := range row {
			p, err := b.plot()
			if err != nil {
				return nil, 0, fmt.Errorf("could not plot %q: %w", b.title, err)
			}
			plots[i] = append(plots[i], p)
			bars = max(bars, len(b.rows))
		}
		height += blockPadding + bars*barPitch
	}
	return plots, height, nil
}

// plot draws the block: its title above, the implementations' names on the
// left, a bar for each with its label at its end, vertical grid lines at
// the value axis's ticks.
func (b barBlock) plot() (*plot.Plot, error) {
	p := chart.New()
	p.Title.Text = b.title
	p.X.Label.Text = b.axis
	if len(b.rows) == 0 {
		p.Title.Text += ": not run"
		p.HideAxes()
		return p, nil
	}
	p.Add(chart.Grid(false))
	if b.rule > 0 {
		rule, err := plotter.NewLine(plotter.XYs{{X: b.rule, Y: -0.5}, {X: b.rule, Y: float64(len(b.rows)) - 0.5}})
		if err != nil {
			return nil, err
		}
		rule.Color, rule.Width = baseColor, vg.Points(1.5)
		p.Add(rule)
	}
	// The first row is on top: its y is the highest.
	names := make([]string, len(b.rows))
	labels := plotter.XYLabels{}
	for i, r := range b.rows {
		y := float64(len(b.rows) - 1 - i)
		names[len(b.rows)-1-i] = r.name
		end := 0.0
		if !math.IsNaN(r.value) {
			bar, err := plotter.NewBarChart(plotter.Values{r.value}, barWidth)
			if err != nil {
				return nil, err
			}
			bar.Horizontal, bar.XMin, bar.Color, bar.LineStyle.Width = true, y, r.color, 0
			p.Add(bar)
			end = r.value
			if b.max > 0 {
				end = math.Min(end, b.max)
			}
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: end, Y: y})
		labels.Labels = append(labels.Labels, r.label)
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i] = chart.Text(8.5, chart.TextColor)
		l.TextStyle[i].YAlign = draw.YCenter
	}
	l.Offset.X = vg.Points(3)
	p.Add(l)

	p.NominalY(names...)
	p.Y.Tick.Label.Color = chart.TextColor
	p.Y.Min, p.Y.Max = -0.5, float64(len(b.rows))-0.5
	p.X.Min = 0
	if b.max > 0 {
		p.X.Max = b.max
	}
	return p, nil
}
