package main

import (
	"bytes"
	"cmp"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
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

// countNear counts the pixels of img inside r within a few levels of c in
// every channel: the middle of an anti-aliased line.
func countNear(img image.Image, r image.Rectangle, c color.RGBA) int {
	near := func(a, b uint8) bool { return max(a, b)-min(a, b) <= 24 }
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			if near(p.R, c.R) && near(p.G, c.G) && near(p.B, c.B) {
				n++
			}
		}
	}
	return n
}

// minutes are the x of samples at the given minutes after testStart.
func minutes(ms ...float64) []float64 {
	xs := make([]float64, len(ms))
	for i, m := range ms {
		xs[i] = plotX(testStart, time.Minute) + m
	}
	return xs
}

func TestSegmentsBreakAtNaNInfAndMissingSteps(t *testing.T) {
	gap := line("a", 1, 2, 3, 4, 5)
	gap.Points = append(gap.Points[:2], gap.Points[3:]...) // minute 2 is missing
	tests := []struct {
		name   string
		series Series
		step   time.Duration
		want   [][]float64 // the x of each segment's samples, in minutes after testStart
	}{
		{"an unbroken line", line("a", 1, 2, 3), time.Minute, [][]float64{minutes(0, 1, 2)}},
		{"a NaN sample", line("a", 1, 1, math.NaN(), 1, 1), time.Minute, [][]float64{minutes(0, 1), minutes(3, 4)}},
		{"an infinite sample", line("a", 1, math.Inf(-1), 1, 1), time.Minute, [][]float64{minutes(0), minutes(2, 3)}},
		{"a missing step", gap, time.Minute, [][]float64{minutes(0, 1), minutes(3, 4)}},
		{"a step of 0 never breaks on gaps", gap, 0, [][]float64{minutes(0, 1, 3, 4)}},
		{"a lone sample between NaNs", line("a", math.NaN(), 4, math.NaN()), time.Minute, [][]float64{minutes(1)}},
		{"nothing finite", line("a", math.NaN(), math.Inf(1)), time.Minute, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]float64
			for _, seg := range segments(tt.series, tt.step, time.Minute) {
				var xs []float64
				for _, xy := range seg {
					xs = append(xs, xy.X)
					if !isFinite(xy.Y) {
						t.Errorf("got a sample of %v in a segment", xy.Y)
					}
				}
				got = append(got, xs)
			}
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("got segments %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPanelPlotSpansTheRangeAndStartsValuesAtZero(t *testing.T) {
	tests := []struct {
		name      string
		series    []Series
		low, high float64
	}{
		{"non-negative values start at 0", []Series{line("a", 3, 5), line("b", 4, 7)}, 0, 7},
		{"a negative value is kept", []Series{line("a", -3, 4)}, -3, 4},
		{"a flat zero gets room above", []Series{line("a", 0, 0, 0)}, 0, 1},
		{"no finite value is 0 to 1", []Series{line("a", math.NaN(), math.Inf(1))}, 0, 1},
		{"values off the time range count too", []Series{func() Series {
			s := line("a", 2, 9)
			s.Points[1].T = testStart.Add(time.Hour)
			return s
		}()}, 0, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := panelPlot(testChart(), Panel{Title: "Queue length", Series: tt.series})
			if p.Title.Text != "Queue length" {
				t.Errorf("got title %q, want %q", p.Title.Text, "Queue length")
			}
			if p.Y.Min != tt.low || p.Y.Max != tt.high {
				t.Errorf("got a value axis from %v to %v, want %v to %v", p.Y.Min, p.Y.Max, tt.low, tt.high)
			}
			if want := minutes(0, 10); p.X.Min != want[0] || p.X.Max != want[1] {
				t.Errorf("got a time axis from %v to %v, want the chart's range %v", p.X.Min, p.X.Max, want)
			}
		})
	}
}

func TestTimeTicksFallOnRoundUTCTimes(t *testing.T) {
	tests := []struct {
		name  string
		start string
		span  time.Duration
		want  []string
	}{
		{"forty seconds", "2025-11-22T15:48:38Z", 40 * time.Second, []string{"15:48:40", "15:48:50", "15:49:00", "15:49:10"}},
		{"ten minutes", "2025-11-22T14:50:00Z", 10 * time.Minute, []string{"14:50:00", "14:55:00", "15:00:00"}},
		{"fifteen minutes, the default", "2025-11-22T14:45:07Z", 15 * time.Minute, []string{"14:48:00", "14:54:00", "15:00:00"}},
		{"an hour", "2025-11-22T14:00:07Z", time.Hour, []string{"14:10:00", "14:20:00", "14:30:00", "14:40:00", "14:50:00", "15:00:00"}},
		{"six hours", "2025-11-22T09:00:07Z", 6 * time.Hour, []string{"10:00:00", "12:00:00", "14:00:00"}},
		{"a start in another zone is labelled in UTC", "2025-11-22T16:50:00+01:00", 10 * time.Minute, []string{"15:50:00", "15:55:00", "16:00:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, err := time.Parse(time.RFC3339, tt.start)
			if err != nil {
				t.Fatal(err)
			}
			c := testChart()
			c.Start, c.End = start, start.Add(tt.span)
			p := panelPlot(c, Panel{Title: "p", Series: []Series{line("a", 1)}})
			var got []string
			for _, tick := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
				if !tick.IsMinor() {
					got = append(got, tick.Label)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValueTicksLabelEveryTickWhenThereIsRoom(t *testing.T) {
	tests := []struct {
		name      string
		height    int // of the plot area, in pixels
		low, high float64
		want      []string
	}{
		{"room for all", 200, 0, 4.3, []string{"0", "1", "2", "3", "4"}},
		{"room for DefaultTicks' own", 80, 0, 4.3, []string{"0", "2", "4"}},
		{"no float noise", 400, 0, 0.75, []string{"0", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.35", "0.4", "0.45", "0.5", "0.55", "0.6", "0.65", "0.7", "0.75"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ticks := valueTicks(pixels(tt.height)).Ticks(tt.low, tt.high)
			slices.SortFunc(ticks, func(a, b plot.Tick) int { return cmp.Compare(a.Value, b.Value) })
			var got []string
			for _, tick := range ticks {
				if !tick.IsMinor() {
					got = append(got, tick.Label)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got labels %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLegendNamesListAsManySeriesAsFit(t *testing.T) {
	sty := textStyle(8, textColor)
	wide := sty.Width(`controller="pod-terminator"`)
	series := func(n int) []Series {
		var s []Series
		for i := range n {
			s = append(s, line("c"+string(rune('a'+i))))
		}
		return s
	}
	tests := []struct {
		name   string
		series []Series
		rows   int
		want   []string
	}{
		{"all fit", series(2), 5, []string{`controller="ca"`, `controller="cb"`}},
		{"just fit", series(3), 3, []string{`controller="ca"`, `controller="cb"`, `controller="cc"`}},
		{"one row left for the rest", series(5), 3, []string{`controller="ca"`, `controller="cb"`, "+3 more"}},
		{"one row", series(5), 1, []string{"+5 more"}},
		{"no room", series(5), 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := legendNames(tt.series, tt.rows, wide, sty); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTruncateFitsTextInAWidth(t *testing.T) {
	sty := textStyle(8, textColor)
	const label = `controller="pod-terminator"`
	tests := []struct {
		name  string
		width float64 // in points
		whole bool
	}{
		{"room to spare", 400, true},
		{"exactly its width", sty.Width(label).Points(), true},
		{"half its width", sty.Width(label).Points() / 2, false},
		{"room for a letter and the dots", sty.Width("c...").Points(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncate(label, vg.Length(tt.width), sty)
			if tt.whole {
				if got != label {
					t.Errorf("got %q, want it whole", got)
				}
				return
			}
			head, cut := strings.CutSuffix(got, "...")
			if !cut || head == "" || !strings.HasPrefix(label, head) {
				t.Fatalf("got %q, want a start of %q and ...", got, label)
			}
			if sty.Width(got) > vg.Length(tt.width) {
				t.Errorf("got %q, %v wide, want at most %v", got, sty.Width(got), tt.width)
			}
			if longer := label[:len(head)+1] + "..."; sty.Width(longer) <= vg.Length(tt.width) {
				t.Errorf("got %q, want the longer %q that fits too", got, longer)
			}
		})
	}
	if got := truncate(label, vg.Length(1), sty); got != "" {
		t.Errorf("got %q in a point, want nothing", got)
	}
}

func TestRenderDrawsEachSeriesInItsPanel(t *testing.T) {
	c := testChart(
		Panel{Title: "Queue length", Series: []Series{
			line("a", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
			line("b", 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5),
		}},
		Panel{Title: "Rate", Series: []Series{line("c", 0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1)}},
	)
	c.Title = "Kooper under load"
	b, err := render(c, "png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("could not decode the PNG: %v", err)
	}
	if got, want := img.Bounds().Size(), image.Pt(800, titleHeight+2*240); got != want {
		t.Fatalf("got size %v, want %v", got, want)
	}
	panel := func(i int) image.Rectangle {
		return image.Rect(0, titleHeight+i*240, 800-legendWidth(800), titleHeight+(i+1)*240)
	}
	// Each line crosses its plot area, more than half the panel's width.
	for _, tt := range []struct {
		name    string
		area    image.Rectangle
		c       color.RGBA
		atLeast int
	}{
		{"first series of the top panel", panel(0), palette[0], 400},
		{"second series of the top panel", panel(0), palette[1], 400},
		{"only series of the bottom panel, in the first color", panel(1), palette[0], 400},
		{"no second series in the bottom panel", panel(1), palette[1], 0},
	} {
		got := countNear(img, tt.area, tt.c)
		if tt.atLeast == 0 && got != 0 || got < tt.atLeast {
			t.Errorf("%s: got %d pixels of %v in %v, want at least %d (0: none)", tt.name, got, tt.c, tt.area, tt.atLeast)
		}
	}
}

func TestRenderKeepsLinesInsideThePlotAreas(t *testing.T) {
	// Samples outside the time range must be clipped, not drawn over the
	// title or the value labels.
	s := line("a", 3, 1e6, 3)
	s.Points[0].T = testStart.Add(-time.Hour)
	s.Points[2].T = testStart.Add(time.Hour)
	c := testChart(Panel{Title: "p", Series: []Series{s}})
	c.Title = "Kooper under load"
	b, err := render(c, "png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("could not decode the PNG: %v", err)
	}
	if got := countNear(img, img.Bounds(), palette[0]); got == 0 {
		t.Fatal("got no pixel of the series, want its line")
	}
	for _, outside := range []image.Rectangle{
		image.Rect(0, 0, 800, titleHeight), // the title
		image.Rect(0, 0, 40, 270),          // the value labels
	} {
		if got := countNear(img, outside, palette[0]); got != 0 {
			t.Errorf("got %d pixels of the series in %v, want none", got, outside)
		}
	}
}

func TestRenderWritesAnSVGWithTheTextsOfTheChart(t *testing.T) {
	c := testChart(Panel{Title: "Queue length by controller", Series: []Series{line("pod-terminator", 1, 3, 2), line("multi-resource", 0.5, math.NaN(), 4)}})
	c.Title = "Kooper under load"
	b, err := render(c, "svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", ">Kooper under load<", ">Queue length by controller<", ">controller=&#34;pod-terminator&#34;<", ">controller=&#34;multi-resource&#34;<", ">14:55:00<"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	c := testChart(Panel{Title: "p", Series: []Series{line("a", 1, 3, 2), line("b", 0.5, math.NaN(), 4)}})
	first, err := render(c, "png")
	if err != nil {
		t.Fatal(err)
	}
	second, err := render(c, "png")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Error("got two different PNGs for the same chart, want the same bytes")
	}
}

func TestRenderRefusesAnUnknownFormat(t *testing.T) {
	if _, err := render(testChart(Panel{Title: "p", Series: []Series{line("a", 1)}}), "bmp"); err == nil {
		t.Error("got a bmp image, want an error")
	}
}
