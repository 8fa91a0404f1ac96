package main

import (
	"fmt"
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kooperkit/kooper/bench/internal/chart"
)

// bar is one implementation's line in the chart.
type bar struct {
	name     string
	p50, p99 float64 // milliseconds
}

// Chart size in pixels, and the range of its log-scale axis in
// milliseconds.
const (
	chartWidth  = 760
	chartHeight = 340
	axisLow     = 0.1
	axisHigh    = 10000
)

// Colors of the two percentiles.
var (
	p50Color = color.RGBA{70, 130, 180, 255}
	p99Color = color.RGBA{230, 120, 40, 255}
)

// writePNG draws p50 and p99 per implementation (freshPlot) and writes the
// chart to path: a PNG, or another format if the extension names one (see
// chart.Page.Save).
func writePNG(path string, bars []bar) error {
	p, err := freshPlot(bars)
	if err != nil {
		return err
	}
	pg := chart.Page{
		Title:  "time from creation to handling, 100 objects created during a 10,000-object backlog (log scale)",
		Plots:  [][]*plot.Plot{{p}},
		Width:  chartWidth,
		Height: chartHeight,
	}
	return pg.Save(path)
}

// freshPlot plots p50 and p99 per implementation as pairs of horizontal
// bars, the first implementation on top, on a logarithmic scale from
// 0.1 ms to 10 s; each bar is labelled with its value.
func freshPlot(bars []bar) (*plot.Plot, error) {
	if len(bars) == 0 {
		return nil, fmt.Errorf("no implementation to chart")
	}
	p := chart.New()
	p.X.Scale = floorLogScale{}
	p.X.Tick.Marker = plot.TickerFunc(durationTicks)
	p.X.Label.Text = "time from creation to handling (log scale)"
	p.Add(chart.Grid(false))

	width := chart.Pixels(12)
	names := make([]string, len(bars))
	for _, pc := range []struct {
		name   string
		value  func(bar) float64
		color  color.Color
		offset vg.Length // the p50 bar above the p99 one
	}{
		{"p50", func(b bar) float64 { return b.p50 }, p50Color, width / 2},
		{"p99", func(b bar) float64 { return b.p99 }, p99Color, -width / 2},
	} {
		values := make(plotter.Values, len(bars))
		labels := plotter.XYLabels{XYs: make(plotter.XYs, len(bars)), Labels: make([]string, len(bars))}
		for i, b := range bars {
			y := len(bars) - 1 - i
			names[y] = b.name
			values[y] = pc.value(b)
			labels.XYs[y] = plotter.XY{X: values[y], Y: float64(y)}
			labels.Labels[y] = fmt.Sprintf("%s %.1f ms", pc.name, values[y])
		}
		bc, err := plotter.NewBarChart(values, width)
		if err != nil {
			return nil, fmt.Errorf("could not plot the %s bars: %w", pc.name, err)
		}
		bc.Horizontal, bc.Color, bc.Offset, bc.LineStyle.Width = true, pc.color, pc.offset, 0
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, fmt.Errorf("could not label the %s bars: %w", pc.name, err)
		}
		for i := range l.TextStyle {
			l.TextStyle[i] = chart.Text(8, chart.TextColor)
			l.TextStyle[i].YAlign = draw.YCenter
		}
		l.Offset = vg.Point{X: vg.Points(3), Y: pc.offset}
		p.Add(bc, l)
		p.Legend.Add(pc.name, bc)
	}

	p.NominalY(names...)
	p.Y.Tick.Label.Color = chart.TextColor
	p.Y.Min, p.Y.Max = -0.5, float64(len(bars))-0.5
	p.X.Min, p.X.Max = axisLow, axisHigh
	p.Legend.Top = true
	return p, nil
}

// floorLogScale is plot.LogScale for values at or above the axis's
// minimum, and puts smaller ones, such as the 0 a bar starts from, at the
// minimum.
type floorLogScale struct{}

// Normalize implements plot.Normalizer.
func (floorLogScale) Normalize(low, high, v float64) float64 {
	return plot.LogScale{}.Normalize(low, high, math.Max(v, low))
}

// durationTicks are plot.LogTicks over milliseconds, labelled as
// durations: 100µs, 1ms, ... 10s.
func durationTicks(low, high float64) []plot.Tick {
	// LogTicks starts at 10 to the power of log10(low) truncated toward
	// zero, and math.Log10(0.1) is a hair above -1: asked from a hair below
	// low, it starts at low itself.
	ticks := plot.LogTicks{}.Ticks(low*(1-1e-6), high)
	for i, t := range ticks {
		if !t.IsMinor() {
			ticks[i].Label = time.Duration(t.Value * float64(time.Millisecond)).String()
		}
	}
	return ticks
}
