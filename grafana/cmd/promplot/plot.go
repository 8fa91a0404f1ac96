package main

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"strconv"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Panel is one chart of the image: a title, the PromQL expression it shows and
// the series that expression returned.
type Panel struct {
	Title  string
	Expr   string
	Series []Series
}

// chart is everything the image shows. render draws it without I/O.
type chart struct {
	Title       string        // Title above all panels; none if empty.
	Start, End  time.Time     // Start and End of the x axis of every panel.
	Step        time.Duration // Step between samples: a longer gap breaks a line. 0 never breaks on gaps.
	Width       int           // Width of the image in pixels.
	PanelHeight int           // PanelHeight of each panel in pixels, titles and labels included.
	Panels      []Panel       // Panels stacked top to bottom.
}

// Layout, in pixels. The left margin is fixed rather than fitted to the
// labels so that the plot areas of all panels line up.
const (
	titleHeight      = 30  // band for the image title, when there is one
	panelTitleHeight = 24  // band above each plot area for the panel title
	xLabelHeight     = 22  // band below each plot area for the time labels
	leftMargin       = 72  // right-aligned y labels: 9 characters of basicfont
	legendGap        = 12  // between a plot area and its legend
	legendRow        = 15  // height of one legend line
	yTicks           = 5   // about this many y ticks per panel
	xLabelSpacing    = 110 // minimum pixels between time labels
	lineWidth        = 2   // of series lines, in pixels
	maxWidth         = 10000
	maxPanelHeight   = 4000
	minWidth         = 400
	minPanelHeight   = 100
)

// Colors. The palette holds the series colors in order; none is a gray, so no
// series can be mistaken for the grid or the axes.
var (
	white      = color.RGBA{0xff, 0xff, 0xff, 0xff}
	textColor  = color.RGBA{0x1f, 0x23, 0x28, 0xff}
	labelColor = color.RGBA{0x57, 0x60, 0x6a, 0xff}
	gridColor  = color.RGBA{0xe6, 0xe8, 0xeb, 0xff}
	axisColor  = color.RGBA{0x9a, 0xa0, 0xa6, 0xff}
	ruleColor  = color.RGBA{0xd0, 0xd7, 0xde, 0xff}
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

// face is the only font: 7 pixels wide, 13 high, ASCII.
var face = basicfont.Face7x13

// legendWidth is the width of the legend column right of the plot areas.
func legendWidth(width int) int {
	return min(max(width/4, 120), 320)
}

// plotArea is where panel i of an image width pixels wide draws its series,
// inside its grid and axes.
func plotArea(width, panelHeight int, hasTitle bool, i int) image.Rectangle {
	top := i * panelHeight
	if hasTitle {
		top += titleHeight
	}
	return image.Rect(leftMargin, top+panelTitleHeight,
		width-legendWidth(width)-legendGap, top+panelHeight-xLabelHeight)
}

// imageSize is the size of the image drawn for c.
func imageSize(c chart) image.Point {
	h := len(c.Panels) * c.PanelHeight
	if c.Title != "" {
		h += titleHeight
	}
	return image.Pt(c.Width, h)
}

// render draws c on a white image. The same chart gives the same pixels.
func render(c chart) *image.RGBA {
	img := image.NewRGBA(image.Rectangle{Max: imageSize(c)})
	fill(img, img.Bounds(), white)
	if c.Title != "" {
		x := (c.Width - textWidth(c.Title)) / 2
		drawText(img, max(x, 4), 20, c.Title, textColor)
	}
	for i, p := range c.Panels {
		drawPanel(img, c, i, p)
	}
	return img
}

// drawPanel draws panel i: title, grid, axes with labels, series and legend.
func drawPanel(img *image.RGBA, c chart, i int, p Panel) {
	area := plotArea(c.Width, c.PanelHeight, c.Title != "", i)
	top := area.Min.Y - panelTitleHeight
	if top > 0 {
		fill(img, image.Rect(0, top, c.Width, top+1), ruleColor)
	}
	drawText(img, area.Min.X, top+17, p.Title, textColor)

	ax := valueAxis(p.Series)
	span := c.End.Sub(c.Start).Seconds()
	if span <= 0 {
		span = 1 // an empty range: draw at the left edge rather than divide by zero
	}
	xOf := func(t time.Time) int {
		return area.Min.X + int(math.Round(t.Sub(c.Start).Seconds()/span*float64(area.Dx()-1)))
	}
	yOf := func(v float64) int {
		return area.Max.Y - 1 - int(math.Round((v-ax.Min)/(ax.Max-ax.Min)*float64(area.Dy()-1)))
	}

	for _, v := range ax.Ticks {
		y := yOf(v)
		fill(img, image.Rect(area.Min.X, y, area.Max.X, y+1), gridColor)
		label := formatValue(v, ax.Step)
		drawText(img, area.Min.X-6-textWidth(label), y+4, label, labelColor)
	}
	for _, t := range timeTicks(c.Start, c.End, max(area.Dx()/xLabelSpacing, 2)) {
		x := xOf(t)
		fill(img, image.Rect(x, area.Min.Y, x+1, area.Max.Y), gridColor)
		label := t.Format("15:04:05")
		lx := x - textWidth(label)/2
		if lx >= area.Min.X-leftMargin/2 && lx+textWidth(label) <= area.Max.X+legendGap {
			drawText(img, lx, area.Max.Y+15, label, labelColor)
		}
	}
	fill(img, image.Rect(area.Min.X, area.Min.Y, area.Min.X+1, area.Max.Y), axisColor)
	fill(img, image.Rect(area.Min.X, area.Max.Y-1, area.Max.X, area.Max.Y), axisColor)

	for j, s := range p.Series {
		drawSeries(img, area, s, palette[j%len(palette)], c.Step, xOf, yOf)
	}
	drawLegend(img, image.Rect(area.Max.X+legendGap, area.Min.Y, c.Width-4, area.Max.Y), p.Series)
}

// valueAxis is the y axis for series: it spans their finite values, and starts
// at 0 when none is negative so that a small wobble does not look like a surge.
func valueAxis(series []Series) axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, pt := range s.Points {
			if isFinite(pt.V) {
				lo, hi = math.Min(lo, pt.V), math.Max(hi, pt.V)
			}
		}
	}
	if math.IsInf(lo, 1) { // no finite value at all
		lo, hi = 0, 1
	}
	if lo > 0 {
		lo = 0
	}
	return niceAxis(lo, hi, yTicks)
}

// drawSeries draws s as a line clipped to area. A NaN or infinite sample, or a
// gap longer than 1.5 steps (the series was absent), ends the line; the next
// finite sample starts a new one, so a lone sample still shows as a dot.
func drawSeries(img *image.RGBA, area image.Rectangle, s Series, c color.RGBA, step time.Duration,
	xOf func(time.Time) int, yOf func(float64) int) {
	var prev image.Point
	var prevT time.Time
	connected := false
	for _, pt := range s.Points {
		if !isFinite(pt.V) {
			connected = false
			continue
		}
		// Clamp so a sample outside the range cannot send the line walking
		// thousands of pixels outside the image.
		cur := image.Pt(
			min(max(xOf(pt.T), area.Min.X-1), area.Max.X),
			min(max(yOf(pt.V), area.Min.Y-1), area.Max.Y),
		)
		if connected && (step <= 0 || pt.T.Sub(prevT) <= step*3/2) {
			drawLine(img, area, prev, cur, c)
		} else {
			drawLine(img, area, cur, cur, c)
		}
		prev, prevT, connected = cur, pt.T, true
	}
}

// drawLegend lists series by label set in r, one line each in its color,
// cutting long label sets and ending with "+N more" when r is too short.
func drawLegend(img *image.RGBA, r image.Rectangle, series []Series) {
	dst, ok := img.SubImage(r).(*image.RGBA)
	if !ok || r.Empty() {
		return
	}
	rows := r.Dy() / legendRow
	shown := len(series)
	if shown > rows {
		shown = max(rows-1, 0)
	}
	maxChars := (r.Dx() - 16) / face.Advance
	for j := range shown {
		y := r.Min.Y + j*legendRow
		fill(dst, image.Rect(r.Min.X, y+4, r.Min.X+10, y+10), palette[j%len(palette)])
		drawText(dst, r.Min.X+16, y+11, truncate(labelString(series[j].Labels), maxChars), textColor)
	}
	if shown < len(series) && rows > 0 {
		more := "+" + strconv.Itoa(len(series)-shown) + " more"
		drawText(dst, r.Min.X+16, r.Min.Y+shown*legendRow+11, truncate(more, maxChars), labelColor)
	}
}

// truncate shortens s to at most n characters, ending with "..." if cut.
// labelString escapes label sets to ASCII, so bytes are characters.
func truncate(s string, n int) string {
	switch {
	case len(s) <= n:
		return s
	case n <= 3:
		return s[:max(n, 0)]
	default:
		return s[:n-3] + "..."
	}
}

// drawLine draws a lineWidth-wide segment from a to b with Bresenham's
// algorithm, clipped to clip. No anti-aliasing: a series has exactly its color.
func drawLine(img *image.RGBA, clip image.Rectangle, a, b image.Point, c color.RGBA) {
	dx, dy := abs(b.X-a.X), -abs(b.Y-a.Y)
	sx, sy := 1, 1
	if a.X > b.X {
		sx = -1
	}
	if a.Y > b.Y {
		sy = -1
	}
	e := dx + dy
	for p := a; ; {
		fill(img, image.Rect(p.X, p.Y, p.X+lineWidth, p.Y+lineWidth).Intersect(clip), c)
		if p == b {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			p.X += sx
		}
		if e2 <= dx {
			e += dx
			p.Y += sy
		}
	}
}

// fill paints r with c, clipped to the image.
func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, &image.Uniform{C: c}, image.Point{}, draw.Src)
}

// drawText draws s with its baseline at y, starting at x, clipped to dst.
func drawText(dst draw.Image, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: dst, Src: &image.Uniform{C: c}, Face: face, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// textWidth is the width of s in pixels.
func textWidth(s string) int {
	return font.MeasureString(face, s).Ceil()
}

// isFinite reports whether v is neither NaN nor infinite.
func isFinite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

// abs is the absolute value of an int.
func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
