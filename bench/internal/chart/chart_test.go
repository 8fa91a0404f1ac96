package chart_test

import (
	"cmp"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/kooperkit/kooper/bench/internal/chart"
)

// page is a page of two plots side by side, each with a line, and a legend.
func page(t *testing.T) *chart.Page {
	t.Helper()
	var plots []*plot.Plot
	legend := chart.NewLegend()
	for _, title := range []string{"left plot", "right plot"} {
		p := chart.New()
		p.Title.Text = title
		p.X.Label.Text = title + " x"
		line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}, {X: 10, Y: 3}})
		if err != nil {
			t.Fatal(err)
		}
		p.Add(chart.Grid(true), line)
		legend.Add(title+" line", line)
		plots = append(plots, p)
	}
	return &chart.Page{
		Title: "the title", Subtitle: "the subtitle", Footnote: "the footnote",
		Plots: [][]*plot.Plot{plots}, Width: 640, Height: 300, Right: 120, Legend: &legend,
	}
}

func TestSaveWritesTheFormatOfTheExtension(t *testing.T) {
	tests := []struct {
		name string
		file string
		svg  bool
	}{
		{"a PNG", "chart.png", false},
		{"an extension in capitals", "chart.PNG", false},
		{"no extension is a PNG", "chart", false},
		{"an unknown extension is a PNG", "chart.dat", false},
		{"an SVG", "chart.svg", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			if err := page(t).Save(path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if tt.svg {
				for _, want := range []string{"<svg", ">the title<", ">the subtitle<", ">the footnote<", ">left plot<", ">right plot x<", ">left plot line<", ">right plot line<"} {
					if !strings.Contains(string(b), want) {
						t.Errorf("the SVG lacks %q", want)
					}
				}
				return
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("could not decode %s as a PNG: %v", path, err)
			}
			if got := img.Bounds().Size(); got.X != 640 || got.Y != 300 {
				t.Errorf("got a %v PNG, want 640x300", got)
			}
		})
	}
}

func TestSaveFailsOnAFileItCannotWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "chart.png")
	if err := page(t).Save(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("got error %v, want one naming %s", err, path)
	}
}

func TestPixelsAreAtNinetySixDotsPerInch(t *testing.T) {
	for _, tt := range []struct {
		pixels int
		points float64
	}{{96, 72}, {1200, 900}, {0, 0}} {
		if got := chart.Pixels(tt.pixels).Points(); got != tt.points {
			t.Errorf("Pixels(%d): got %v points, want %v", tt.pixels, got, tt.points)
		}
	}
}

func TestEveryTickLabelsTheMinorTicksToo(t *testing.T) {
	tests := []struct {
		name      string
		low, high float64
		want      []string
	}{
		{"a minute", 0, 67, []string{"0", "10", "20", "30", "40", "50", "60"}},
		{"fractions, the major ticks as DefaultTicks writes them", 0, 1, []string{"0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ticks := chart.EveryTick(tt.low, tt.high)
			slices.SortFunc(ticks, func(a, b plot.Tick) int { return cmp.Compare(a.Value, b.Value) })
			var got []string
			for _, tick := range ticks {
				if tick.IsMinor() {
					t.Errorf("got tick %v without a label", tick.Value)
				}
				got = append(got, tick.Label)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got labels %v, want %v", got, tt.want)
			}
			// The labelled ticks are DefaultTicks', minor ones included.
			if d := (plot.DefaultTicks{}).Ticks(tt.low, tt.high); len(d) != len(ticks) {
				t.Errorf("got %d ticks, want DefaultTicks' %d", len(ticks), len(d))
			}
		})
	}
}
