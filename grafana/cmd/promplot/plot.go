package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Panel is one chart of the image: a title, the PromQL expression it shows and
// the series that expression returned.
type Panel struct {
	Title  string
	Expr   string
	Series []Series
}

// chart is everything the image shows. render draws it.
type chart struct {
	Title       string        // Title above all panels; none if empty.
	Start, End  time.Time     // Start and End of the x axis of every panel.
	Step        time.Duration // Step between samples: a longer gap breaks a line. 0 never breaks on gaps.
	Width       int           // Width of the image in pixels.
	PanelHeight int           // PanelHeight of each panel in pixels, titles and labels included.
	Panels      []Panel       // Panels stacked top to bottom.
}

// Layout, in pixels, and the limits of the image's size.
const (
	titleHeight    = 30 // band for the image title, when there is one
	margin         = 6  // around the panels
	legendGap      = 12 // between a plot area and its legend
	panelGap       = 8  // between two panels
	minTickPitch   = 24 // between two labelled value ticks
	panelChrome    = 70 // a panel's title and time axis, about: its height less its plot area's
	maxWidth       = 10000
	maxPanelHeight = 4000
	minWidth       = 400
	minPanelHeight = 100
)

// Colors. The palette holds the series colors in order; none is a gray, so no
// series can be mistaken for the grid or the axes.
var (
	textColor  = color.RGBA{0x1f, 0x23, 0x28, 0xff}
	labelColor = color.RGBA{0x57, 0x60, 0x6a, 0xff}
	gridColor  = color.RGBA{0xe6, 0xe8, 0xeb, 0xff}
	palette    = []color.RGBA{
		{0x1f, 0x6f, 0xd1, 0xff}, // blue
		{0xe8, 0x6a, 0x10, 0xff}, // orange
		{0x2e, 0x9e, 0x3f, 0xff}, // green
		{0xd0, 0x2f, 0x3a, 0xff}, // red
		{0x7b, 0x4f, 0xc4, 0xff}, // purple
		{0x0f, 0x9b, 0xa8, 0xff}, // teal
		{0xc2, 0x4c, 0x9a, 0xff}, // magenta
		{0x8a, 0x6d, 0x1e, 0xff}, // ochre
		{0x9c, 0xb0, 0x1a, 0xff}, // olive
		{0x4a, 0x3a, 0x8c, 0xff}, // indigo
	}
)

// sans is the typeface of every text: Liberation Sans, which gonum/plot
// embeds.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// lineWidth is the width of a series' line, and the diameter of a lone
// sample's dot.
var lineWidth = vg.Points(1.5)

// pixels is the length of n pixels in a PNG, which gonum/plot draws at
// vgimg.DefaultDPI.
func pixels(n int) vg.Length {
	return vg.Length(n) * vg.Inch / vgimg.DefaultDPI
}

// textStyle is the style of text of the given size in points, in color c.
func textStyle(size float64, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(sans, vg.Points(size)), Handler: plot.DefaultTextHandler}
}

// legendWidth is the width of the legend column right of the plot areas.
func legendWidth(width int) int {
	return min(max(width/4, 120), 320)
}

// imageSize is the size of the image drawn for c.
func imageSize(c chart) image.Point {
	h := len(c.Panels) * c.PanelHeight
	if c.Title != "" {
		h += titleHeight
	}
	return image.Pt(c.Width, h)
}

// render draws c in format, "png" or "svg", and returns the encoded image:
// the title on top, then the panels, their plot areas aligned, each with its
// legend on the right. The same chart gives the same bytes.
func render(c chart, format string) ([]byte, error) {
	size := imageSize(c)
	w, err := draw.NewFormattedCanvas(pixels(size.X), pixels(size.Y), format)
	if err != nil {
		return nil, fmt.Errorf("could not draw a %s image: %w", format, err)
	}
	dc := draw.New(w)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())
	top := dc.Max.Y
	if c.Title != "" {
		sty := textStyle(10, textColor)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: top - pixels(titleHeight)/2}, c.Title)
		top -= pixels(titleHeight)
	}

	if len(c.Panels) > 0 {
		plots := make([][]*plot.Plot, len(c.Panels))
		for i, p := range c.Panels {
			plots[i] = []*plot.Plot{panelPlot(c, p)}
		}
		area := draw.Crop(dc, pixels(margin), -pixels(margin+legendGap+legendWidth(c.Width)), pixels(margin), top-dc.Max.Y)
		canvases := plot.Align(plots, draw.Tiles{Rows: len(plots), Cols: 1, PadY: pixels(panelGap) * 2}, area)
		for i, p := range c.Panels {
			plots[i][0].Draw(canvases[i][0])
			data := plots[i][0].DataCanvas(canvases[i][0])
			box := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: data.Max.X + pixels(legendGap), Y: data.Min.Y},
				Max: vg.Point{X: dc.Max.X - pixels(margin), Y: data.Max.Y},
			}}
			l := panelLegend(p.Series, box.Size())
			l.Draw(box)
		}
	}

	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("could not encode the %s image: %w", format, err)
	}
	return b.Bytes(), nil
}

// newPlot returns a plot in the image's fonts and colors.
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle = textStyle(9.5, textColor)
	p.Title.TextStyle.XAlign, p.Title.TextStyle.YAlign = draw.XCenter, draw.YTop
	p.Title.Padding = pixels(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Tick.Label.Font = font.From(sans, 8)
		a.Tick.Label.Color = labelColor
		a.Color, a.Tick.Color = labelColor, labelColor
		a.Tick.Length = vg.Points(4)
	}
	return p
}

// panelPlot plots p over c's time range: a line per series in the palette's
// colors, broken where samples are missing (segments), on a value axis that
// spans the finite values and starts at 0 when none is negative, so that a
// small wobble does not look like a surge. Time ticks are in UTC.
func panelPlot(c chart, p Panel) *plot.Plot {
	pl := newPlot()
	pl.Title.Text = p.Title
	unit := timeUnit(c.End.Sub(c.Start))
	pl.X.Tick.Marker = plot.TimeTicks{Format: "15:04:05", Time: func(x float64) time.Time {
		return time.UnixMilli(int64(math.Round(x * float64(unit.Milliseconds())))).UTC()
	}}
	pl.Y.Tick.Marker = valueTicks(pixels(c.PanelHeight - panelChrome))
	grid := plotter.NewGrid()
	grid.Vertical = draw.LineStyle{Color: gridColor, Width: vg.Points(0.75)}
	grid.Horizontal = grid.Vertical
	pl.Add(grid)

	for j, s := range p.Series {
		clr := palette[j%len(palette)]
		for _, seg := range segments(s, c.Step, unit) {
			if len(seg) == 1 {
				// A lone sample: a dot the line's width.
				dot := &plotter.Scatter{XYs: seg, GlyphStyle: draw.GlyphStyle{Color: clr, Radius: lineWidth / 2, Shape: draw.CircleGlyph{}}}
				pl.Add(dot)
				continue
			}
			pl.Add(&plotter.Line{XYs: seg, LineStyle: draw.LineStyle{Color: clr, Width: lineWidth}})
		}
	}
	pl.X.Min, pl.X.Max = plotX(c.Start, unit), plotX(c.End, unit)
	pl.Y.Min, pl.Y.Max = valueRange(p.Series)
	return pl
}

// timeUnit is the unit of the time axis of a chart spanning span: the one in
// which plot.DefaultTicks' steps of 1, 2, 2.5, 3, 4 or 5 times a power of ten
// fall on round wall-clock times for that span, rather than at 14:46:40.
func timeUnit(span time.Duration) time.Duration {
	switch {
	case span < 5*time.Minute:
		return time.Second
	case span < 4*time.Hour:
		return time.Minute
	}
	return time.Hour
}

// plotX is t in units since the Unix epoch, the x of the plots.
func plotX(t time.Time, unit time.Duration) float64 {
	return float64(t.UnixMilli()) / float64(unit.Milliseconds())
}

// valueTicks is plot.DefaultTicks with all of them labelled when room, the
// height of the plot area, holds them minTickPitch apart; otherwise only
// those DefaultTicks labels, about three.
func valueTicks(room vg.Length) plot.Ticker {
	return plot.TickerFunc(func(low, high float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(low, high)
		if pixels(minTickPitch)*vg.Length(len(ticks)) > room {
			return ticks
		}
		for i := range ticks {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'g', 6, 64)
		}
		return ticks
	})
}

// segments cuts s into the runs of samples to draw as one line: a NaN or
// infinite sample, or a gap longer than 1.5 steps (the series was absent),
// ends a run; a step of 0 never breaks on gaps. x is in unit (plotX).
func segments(s Series, step, unit time.Duration) []plotter.XYs {
	var (
		segs  []plotter.XYs
		cur   plotter.XYs
		prevT time.Time
	)
	for _, pt := range s.Points {
		if !isFinite(pt.V) || (len(cur) > 0 && step > 0 && pt.T.Sub(prevT) > step*3/2) {
			if len(cur) > 0 {
				segs = append(segs, cur)
			}
			cur = nil
		}
		if isFinite(pt.V) {
			cur = append(cur, plotter.XY{X: plotX(pt.T, unit), Y: pt.V})
			prevT = pt.T
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// valueRange is the range of the value axis for series: their finite values,
// from 0 when none is negative; [0, 1] with none at all, and one unit above a
// flat line.
func valueRange(series []Series) (low, high float64) {
	low, high = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, pt := range s.Points {
			if isFinite(pt.V) {
				low, high = math.Min(low, pt.V), math.Max(high, pt.V)
			}
		}
	}
	if math.IsInf(low, 1) { // no finite value at all
		return 0, 1
	}
	low = math.Min(low, 0)
	if high <= low {
		high = low + 1
	}
	return low, high
}

// panelLegend is the legend of series in a box of the given size: one entry
// per series with a line of its color, as many as fit, label sets cut to the
// box's width, and "+N more" last when they do not all fit.
func panelLegend(series []Series, box vg.Point) plot.Legend {
	l := plot.NewLegend()
	l.TextStyle = textStyle(8, textColor)
	l.Top, l.Left = true, true
	l.Padding = pixels(3)
	l.ThumbnailWidth = pixels(16)
	width := box.X - l.ThumbnailWidth - l.TextStyle.Width(" ")
	// Every entry is one line of the same font: as high as any other.
	entry := l.TextStyle.Rectangle("Xy").Max.Y
	rows := int((box.Y + l.Padding) / (entry + l.Padding))
	names := legendNames(series, rows, width, l.TextStyle)
	more := len(names) < len(series) // the last name is "+N more"
	for j, name := range names {
		if more && j == len(names)-1 {
			l.Add(name)
			break
		}
		l.Add(name, &plotter.Line{LineStyle: draw.LineStyle{Color: palette[j%len(palette)], Width: lineWidth}})
	}
	return l
}

// legendNames are the texts of a legend of series with room for rows entries
// of width: a label set per series, cut to fit, or when there are more series
// than rows, the first rows-1 and "+N more".
func legendNames(series []Series, rows int, width vg.Length, sty text.Style) []string {
	shown := len(series)
	if shown > rows {
		shown = max(rows-1, 0)
	}
	var names []string
	for _, s := range series[:shown] {
		names = append(names, truncate(labelString(s.Labels), width, sty))
	}
	if shown < len(series) && rows > 0 {
		names = append(names, truncate("+"+strconv.Itoa(len(series)-shown)+" more", width, sty))
	}
	return names
}

// truncate shortens s until it is at most width wide in sty, ending with
// "..." if cut. labelString escapes label sets to ASCII, so bytes are
// characters.
func truncate(s string, width vg.Length, sty text.Style) string {
	if sty.Width(s) <= width {
		return s
	}
	for n := len(s) - 1; n > 0; n-- {
		if cut := s[:n] + "..."; sty.Width(cut) <= width {
			return cut
		}
	}
	return ""
}

// isFinite reports whether v is neither NaN nor infinite.
func isFinite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}
