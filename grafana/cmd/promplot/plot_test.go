package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"
	"time"
)

// testStart is the start of the charts of these tests.
var testStart = time.Date(2025, 11, 22, 14, 50, 0, 0, time.UTC)

// line returns a series with labels {controller=name} and one sample per
// minute from testStart.
func line(name string, values ...float64) Series {
	s := Series{Labels: map[string]string{"controller": name}}
	for i, v := range values {
		s.Points = append(s.Points, Point{T: testStart.Add(time.Duration(i) * time.Minute), V: v})
	}
	return s
}

// testChart is a 10-minute chart, one sample a minute, of the given panels.
func testChart(panels ...Panel) chart {
	return chart{
		Start: testStart, End: testStart.Add(10 * time.Minute), Step: time.Minute,
		Width: 800, PanelHeight: 240, Panels: panels,
	}
}

// countColor counts the pixels of img inside r that are exactly c.
func countColor(img image.Image, r image.Rectangle, c color.RGBA) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == c {
				n++
			}
		}
	}
	return n
}

func TestRenderDrawsEachSeriesInItsColorInsideItsPlotArea(t *testing.T) {
	c := testChart(
		Panel{Title: "Queue length", Series: []Series{
			line("a", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
			line("b", 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5),
		}},
		Panel{Title: "Rate", Series: []Series{line("c", 0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1)}},
	)
	c.Title = "Kooper under load"
	img := render(c)

	if got, want := img.Bounds().Size(), image.Pt(800, titleHeight+2*240); got != want {
		t.Fatalf("got size %v, want %v", got, want)
	}
	top, bottom := plotArea(800, 240, true, 0), plotArea(800, 240, true, 1)
	// Each line crosses the plot area from side to side, so it has at least
	// one pixel per column even where another line covers it.
	for _, tt := range []struct {
		name string
		area image.Rectangle
		c    color.RGBA
	}{
		{"first series of the top panel", top, palette[0]},
		{"second series of the top panel", top, palette[1]},
		{"only series of the bottom panel, in the first color", bottom, palette[0]},
	} {
		if got := countColor(img, tt.area, tt.c); got < tt.area.Dx() {
			t.Errorf("%s: got %d pixels of %v in %v, want at least %d", tt.name, got, tt.c, tt.area, tt.area.Dx())
		}
	}
	if got := countColor(img, bottom, palette[1]); got != 0 {
		t.Errorf("got %d pixels of the second color in the bottom panel, want 0: it has one series", got)
	}
	// The flat series at 5 of an axis from 0 to 12 is a horizontal line at
	// 5/12 of the height, 2 pixels thick.
	y := top.Max.Y - 1 - int(math.Round(5.0/12*float64(top.Dy()-1)))
	mid := image.Rect(top.Min.X+top.Dx()/2, y-3, top.Min.X+top.Dx()/2+1, y+4)
	if got := countColor(img, mid, palette[1]); got != lineWidth {
		t.Errorf("got %d pixels of the flat line around y=%d, want %d", got, y, lineWidth)
	}
}

func TestRenderKeepsLinesInsideThePlotAreas(t *testing.T) {
	// Samples outside the time range must be clipped, not drawn over labels.
	s := line("a", 3, 1e6, 3)
	s.Points[0].T = testStart.Add(-time.Hour)
	s.Points[2].T = testStart.Add(time.Hour)
	img := render(testChart(Panel{Title: "p", Series: []Series{s}}))

	area := plotArea(800, 240, false, 0)
	legend := image.Rect(area.Max.X, area.Min.Y, 800, area.Max.Y)
	total := countColor(img, img.Bounds(), palette[0])
	inside := countColor(img, area, palette[0]) + countColor(img, legend, palette[0])
	if total == 0 || inside != total {
		t.Errorf("got %d pixels of the series color, %d of them in the plot area or legend, want all of them", total, inside)
	}
}

func TestRenderBreaksLinesAtNaNInfAndMissingSteps(t *testing.T) {
	tests := []struct {
		name   string
		series Series
		step   time.Duration
	}{
		{"a NaN sample", line("a", 1, 1, 1, math.NaN(), 1, 1, 1, 1, 1, 1, 1), 0},
		{"an infinite sample", line("a", 1, 1, 1, math.Inf(1), 1, 1, 1, 1, 1, 1, 1), 0},
		{"a missing step", func() Series {
			s := line("a", 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
			s.Points = append(s.Points[:3], s.Points[4:]...)
			return s
		}(), time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testChart(Panel{Title: "p", Series: []Series{tt.series}})
			c.Step = tt.step
			img := render(c)
			area := plotArea(800, 240, false, 0)
			xOf := func(minute float64) int {
				return area.Min.X + int(math.Round(minute/10*float64(area.Dx()-1)))
			}
			// Samples at minutes 2 and 4 end and start a line: nothing between.
			gap := image.Rect(xOf(2)+lineWidth, area.Min.Y, xOf(4), area.Max.Y)
			if got := countColor(img, gap, palette[0]); got != 0 {
				t.Errorf("got %d pixels of the series between minutes 2 and 4, want 0", got)
			}
			drawn := image.Rect(xOf(0), area.Min.Y, xOf(2), area.Max.Y)
			if got := countColor(img, drawn, palette[0]); got < 2*drawn.Dx() {
				t.Errorf("got %d pixels of the series between minutes 0 and 2, want at least %d", got, 2*drawn.Dx())
			}
		})
	}
}

func TestRenderShowsALoneSampleAsADot(t *testing.T) {
	s := line("a", math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), 4, math.NaN())
	img := render(testChart(Panel{Title: "p", Series: []Series{s}}))
	if got, want := countColor(img, plotArea(800, 240, false, 0), palette[0]), lineWidth*lineWidth; got != want {
		t.Errorf("got %d pixels of the series, want a %dx%[2]d dot", got, lineWidth)
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	c := testChart(Panel{Title: "p", Series: []Series{line("a", 1, 3, 2), line("b", 0.5, math.NaN(), 4)}})
	var first, second bytes.Buffer
	if err := png.Encode(&first, render(c)); err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(&second, render(c)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("got two different PNGs for the same chart, want the same bytes")
	}
}

func TestRenderListsAsManySeriesAsTheLegendHolds(t *testing.T) {
	var series []Series
	for i := range 30 {
		series = append(series, line(string(rune('a'+i%26))+string(rune('a'+i/26)), float64(i), float64(i+1)))
	}
	img := render(testChart(Panel{Title: "p", Series: series}))

	area := plotArea(800, 240, false, 0)
	rows := area.Dy() / legendRow // the last row says "+N more"
	// Count the color swatches down the legend column.
	x := area.Max.X + legendGap + 5
	swatches, inSwatch := 0, false
	for y := area.Min.Y; y < area.Max.Y; y++ {
		colored := img.RGBAAt(x, y) != white
		if colored && !inSwatch {
			swatches++
		}
		inSwatch = colored
	}
	if swatches != rows-1 {
		t.Errorf("got %d legend entries, want %d: one row is left for \"+N more\"", swatches, rows-1)
	}
}

func TestTruncateFitsTextInCharacters(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{`controller="pod-terminator"`, 40, `controller="pod-terminator"`},
		{`controller="pod-terminator"`, 27, `controller="pod-terminator"`},
		{`controller="pod-terminator"`, 20, `controller="pod-t...`},
		{"abcdef", 3, "abc"},
		{"abcdef", 0, ""},
		{"abcdef", -4, ""},
	}
	for _, tt := range tests {
		if got := truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d): got %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
