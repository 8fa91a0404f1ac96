// Package chart holds what the benchmarks' charts share on gonum/plot: the
// fonts and colors, sizes in pixels, a page of several plots under a title,
// and saving in the format a file name's extension asks for.
package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colors of text and lines, as in grafana/cmd/promplot.
var (
	// TextColor is the color of titles, names and values.
	TextColor = color.RGBA{0x1f, 0x23, 0x28, 0xff}
	// LabelColor is the color of subtitles, tick labels and axes.
	LabelColor = color.RGBA{0x57, 0x60, 0x6a, 0xff}
	// GridColor is the color of grid lines.
	GridColor = color.RGBA{0xe6, 0xe8, 0xeb, 0xff}
)

// sans is the typeface of every text: Liberation Sans, which gonum/plot
// embeds, reads better on a screen than its default serif.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Pixels is the length of n pixels in a PNG, which gonum/plot draws at
// vgimg.DefaultDPI.
func Pixels(n int) vg.Length {
	return vg.Length(n) * vg.Inch / vgimg.DefaultDPI
}

// Text is the style of text of the given size in points, in color c.
func Text(size float64, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(sans, vg.Points(size)), Handler: plot.DefaultTextHandler}
}

// New returns a plot with the charts' fonts and colors: sans-serif text,
// gray tick labels and axes.
func New() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(sans, 10)
	p.Title.TextStyle.Color = TextColor
	p.Title.Padding = vg.Points(4)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 9)
		a.Label.TextStyle.Color = LabelColor
		a.Tick.Label.Font = font.From(sans, 8.5)
		a.Tick.Label.Color = LabelColor
		a.Color = LabelColor
		a.Tick.Color = LabelColor
		a.Tick.Length = vg.Points(4)
	}
	p.Legend = NewLegend()
	return p
}

// NewLegend returns a legend in the charts' font, its entries apart.
func NewLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle = Text(8.5, TextColor)
	l.Padding = Pixels(4)
	return l
}

// EveryTick is plot.DefaultTicks with its minor ticks labelled too, for an
// axis wide enough to take them: DefaultTicks labels about three, which
// leaves a chart a thousand pixels wide hard to read off.
func EveryTick(low, high float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(low, high)
	for i, t := range ticks {
		if t.IsMinor() {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'g', 6, 64)
		}
	}
	return ticks
}

// Grid returns grid lines at the labelled ticks: vertical ones only when
// horizontal is false.
func Grid(horizontal bool) *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: GridColor, Width: vg.Points(0.75)}
	g.Horizontal = g.Vertical
	if !horizontal {
		g.Horizontal.Color = nil
	}
	return g
}

// Page is a chart of plots in rows and columns, aligned with plot.Align,
// under a title and a subtitle and above a footnote.
type Page struct {
	// Title and Subtitle are centered above the plots, Footnote below
	// them; an empty one takes no room.
	Title, Subtitle, Footnote string

	// Plots are the rows of plots, top to bottom, each left to right and
	// of the same length; a nil plot leaves its cell empty.
	Plots [][]*plot.Plot

	// Width and Height are the page's size in pixels.
	Width, Height int

	// Right is the width in pixels kept free right of the plots for
	// Legend.
	Right int

	// Legend, if not nil, is drawn in the Right band, level with the data
	// of the first row's last plot.
	Legend *plot.Legend
}

// Styles of the page's own text.
var (
	titleStyle    = Text(11, TextColor)
	subtitleStyle = Text(8.5, LabelColor)
	footnoteStyle = Text(8.5, LabelColor)
)

// margin is the space around the page's content.
var margin = Pixels(8)

// Draw draws the page on c.
func (pg *Page) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Path())

	top := c.Max.Y - margin
	for _, line := range []struct {
		text  string
		style text.Style
	}{{pg.Title, titleStyle}, {pg.Subtitle, subtitleStyle}} {
		if line.text == "" {
			continue
		}
		sty := line.style
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: c.Center().X, Y: top}, line.text)
		top -= sty.Height(line.text) + Pixels(4)
	}
	top -= Pixels(6)
	bottom := c.Min.Y + margin
	if pg.Footnote != "" {
		sty := footnoteStyle
		sty.XAlign = draw.XCenter
		c.FillText(sty, vg.Point{X: c.Center().X, Y: bottom + sty.FontExtents().Descent}, pg.Footnote)
		bottom += sty.Height(pg.Footnote) + Pixels(6)
	}

	if len(pg.Plots) == 0 {
		return
	}
	area := draw.Crop(c, margin, -margin-Pixels(pg.Right), bottom-c.Min.Y, top-c.Max.Y)
	tiles := draw.Tiles{Rows: len(pg.Plots), Cols: len(pg.Plots[0]), PadX: Pixels(24), PadY: Pixels(10)}
	canvases := plot.Align(pg.Plots, tiles, area)
	for j, row := range pg.Plots {
		for i, p := range row {
			if p != nil {
				p.Draw(canvases[j][i])
			}
		}
	}
	if last := pg.Plots[0][len(pg.Plots[0])-1]; pg.Legend != nil && last != nil {
		data := last.DataCanvas(canvases[0][len(canvases[0])-1])
		l := *pg.Legend
		l.Left, l.Top = true, true
		l.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: data.Max.X + Pixels(16), Y: data.Min.Y},
			Max: vg.Point{X: c.Max.X - margin, Y: data.Max.Y},
		}})
	}
}

// Save writes the page to path in the format its extension names, one of
// gonum/plot's (.svg, .pdf, .png, ...), or else as a PNG. The file is
// written whole or not at all.
func (pg *Page) Save(path string) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if !slices.Contains(draw.Formats(), format) {
		format = "png"
	}
	w, err := draw.NewFormattedCanvas(Pixels(pg.Width), Pixels(pg.Height), format)
	if err != nil {
		return fmt.Errorf("could not draw %s: %w", path, err)
	}
	pg.Draw(draw.New(w))
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return fmt.Errorf("could not encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("could not write %s: %w", path, err)
	}
	return nil
}
