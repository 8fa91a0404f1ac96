package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kooperkit/kooper/bench/internal/impls"
)

// Every implementation handles every object, the fresh ones included, on a
// tiny workload: the figures come from `go run ./cmd/fresh`, not from here.
func TestEveryImplementationHandlesEveryFreshObject(t *testing.T) {
	impls.SilenceLogs()
	for _, impl := range []impls.Impl{impls.Kooper{}, impls.ControllerRuntime{PriorityQueue: true}, impls.ControllerRuntime{}, impls.KooperV2{}, impls.Floor{}} {
		t.Run(impl.Name(), func(t *testing.T) {
			r, err := run(impl, 200, 10, time.Millisecond, 100*time.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Waits) != 10 {
				t.Errorf("got %d fresh objects handled, want 10", len(r.Waits))
			}
		})
	}
}

func TestTheChartIsWritten(t *testing.T) {
	bars := []bar{{"kooper", 1.2, 2.5}, {"floor", 3300, 3800}}
	tests := []struct {
		file  string
		check func(t *testing.T, path string)
	}{
		{"fresh.png", func(t *testing.T, path string) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("could not decode %s as a PNG: %v", path, err)
			}
			if got := img.Bounds().Size(); got.X != chartWidth || got.Y != chartHeight {
				t.Errorf("got a %v chart, want %dx%d", got, chartWidth, chartHeight)
			}
		}},
		{"fresh.svg", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{">kooper<", ">floor<", ">p50 1.2 ms<", ">p99 3800.0 ms<", ">100µs<", ">10s<"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("the SVG lacks %q", want)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			if err := writePNG(path, bars); err != nil {
				t.Fatal(err)
			}
			tt.check(t, path)
		})
	}
}

func TestFreshPlotPutsTheFirstImplementationOnTop(t *testing.T) {
	p, err := freshPlot([]bar{{"kooper", 1.2, 2.5}, {"controller-runtime", 3432.7, 3930.4}, {"floor", 3300, 3800}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tick := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		names = append(names, tick.Label)
	}
	if want := []string{"floor", "controller-runtime", "kooper"}; !slices.Equal(names, want) {
		t.Errorf("got implementations %v bottom to top, want %v", names, want)
	}
	if p.X.Min != axisLow || p.X.Max != axisHigh {
		t.Errorf("got an axis from %v to %v ms, want %v to %v", p.X.Min, p.X.Max, axisLow, axisHigh)
	}
	if _, err := freshPlot(nil); err == nil {
		t.Error("got a chart of no implementation, want an error")
	}
}

func TestDurationTicksLabelEachPowerOfTen(t *testing.T) {
	var labels []string
	for _, tick := range durationTicks(axisLow, axisHigh) {
		if !tick.IsMinor() {
			labels = append(labels, tick.Label)
		}
	}
	if want := []string{"100µs", "1ms", "10ms", "100ms", "1s", "10s"}; !slices.Equal(labels, want) {
		t.Errorf("got labels %v, want %v", labels, want)
	}
}

func TestFloorLogScaleStartsBarsAtTheAxis(t *testing.T) {
	for _, tt := range []struct{ v, want float64 }{{0, 0}, {0.1, 0}, {10000, 1}, {10, 0.4}} {
		if got := (floorLogScale{}).Normalize(axisLow, axisHigh, tt.v); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Normalize(%v): got %v, want %v", tt.v, got, tt.want)
		}
	}
}
