package report

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

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

// Chart layout, in pixels.
const (
	chartWidth   = 1200
	titleBand    = 56
	footerBand   = 40
	columnWidth  = chartWidth / 2
	labelWidth   = 190 // implementation names, left of the bars
	valueWidth   = 64  // ratio labels, right of the bars
	blockTitle   = 22
	barRow       = 17
	barHeight    = 12
	blockGap     = 16
	maxChartXMax = 5.0 // longer bars are clipped (their label says how long)
)

// Colors, as in grafana/cmd/promplot.
var (
	white      = color.RGBA{0xff, 0xff, 0xff, 0xff}
	textColor  = color.RGBA{0x1f, 0x23, 0x28, 0xff}
	labelColor = color.RGBA{0x57, 0x60, 0x6a, 0xff}
	gridColor  = color.RGBA{0xe6, 0xe8, 0xeb, 0xff}
	baseColor  = color.RGBA{0x1f, 0x23, 0x28, 0xff}
	implColors = map[string]color.RGBA{
		impls.NameKooper:            {0x1f, 0x6f, 0xd1, 0xff}, // blue
		impls.NameKooperMetadata:    {0x2e, 0x9e, 0x3f, 0xff}, // green
		impls.NameControllerRuntime: {0xe8, 0x6a, 0x10, 0xff}, // orange
		impls.NameFloor:             {0x8a, 0x6d, 0x1e, 0xff}, // ochre
	}
	otherColor = color.RGBA{0xd0, 0x2f, 0x3a, 0xff} // red
)

var face = basicfont.Face7x13

// WritePNG draws the chart of res's key ratios and writes it to path.
func WritePNG(path string, res runner.Results) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("could not create %s: %w", path, err)
	}
	if err := png.Encode(f, Chart(res)); err != nil {
		_ = f.Close()
		return fmt.Errorf("could not write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("could not write %s: %w", path, err)
	}
	return nil
}

// Chart draws every implementation's median ÷ kooper-v2's for the key
// metrics: horizontal bars, one block per metric, a line at 1.0.
func Chart(res runner.Results) *image.RGBA {
	blockImpls := func(b chartBlock) []string {
		names := res.SingleImpls
		if b.metric.Scenario == PairRSS.Scenario {
			names = res.PairImpls
		}
		var out []string
		for _, n := range names {
			if n != ChartBase {
				out = append(out, n)
			}
		}
		return out
	}
	height := 0
	xMax := 1.25
	for _, col := range chartColumns {
		h := 0
		for _, b := range col {
			names := blockImpls(b)
			h += blockTitle + max(len(names), 1)*barRow + blockGap
			for _, n := range names {
				if r, ok := Ratio(res, n, ChartBase, b.metric); ok {
					xMax = math.Max(xMax, r*1.05)
				}
			}
		}
		height = max(height, h)
	}
	xMax = math.Min(math.Ceil(xMax*4)/4, maxChartXMax)
	img := image.NewRGBA(image.Rect(0, 0, chartWidth, titleBand+height+footerBand))
	fill(img, img.Bounds(), white)

	title := "Kooper vs its peers on a real control plane: median / kooper-v2's median (lower is better)"
	drawText(img, (chartWidth-textWidth(title))/2, 20, title, textColor)
	sub := fmt.Sprintf("%d pods (%.0f B JSON, %.0f B protobuf each), %d updates, rounds: %d, each run in a fresh process; GOMAXPROCS %d, %s",
		res.Pods, res.PodSize.JSON, res.PodSize.Protobuf, res.Updates, res.Rounds, res.GOMAXPROCS, res.GoVersion)
	drawText(img, (chartWidth-textWidth(sub))/2, 40, sub, labelColor)

	for c, col := range chartColumns {
		x0 := c * columnWidth
		barLeft, barRight := x0+labelWidth, x0+columnWidth-valueWidth-12
		xOf := func(v float64) int {
			return barLeft + int(math.Round(math.Min(v, xMax)/xMax*float64(barRight-barLeft)))
		}
		y := titleBand
		for _, b := range col {
			drawText(img, x0+12, y+15, b.title, textColor)
			names := blockImpls(b)
			top, bottom := y+blockTitle, y+blockTitle+max(len(names), 1)*barRow
			for v := 0.5; v < xMax+1e-9; v += 0.5 {
				fill(img, image.Rect(xOf(v), top-2, xOf(v)+1, bottom), gridColor)
			}
			fill(img, image.Rect(barLeft, top-2, barLeft+1, bottom), labelColor)
			one := xOf(1)
			fill(img, image.Rect(one, top-4, one+2, bottom+2), baseColor)
			drawText(img, one+4, y+15, "1.0 = "+ChartBase, labelColor)
			if len(names) == 0 {
				drawText(img, barLeft+8, top+12, "not run", labelColor)
			}
			for i, n := range names {
				rowTop := top + i*barRow
				drawText(img, barLeft-8-textWidth(n), rowTop+11, n, labelColor)
				r, ok := Ratio(res, n, ChartBase, b.metric)
				if !ok {
					drawText(img, barLeft+6, rowTop+11, "-", labelColor)
					continue
				}
				clr, known := implColors[n]
				if !known {
					clr = otherColor
				}
				end := xOf(r)
				fill(img, image.Rect(barLeft+1, rowTop+1, max(end, barLeft+2), rowTop+1+barHeight), clr)
				label := fmt.Sprintf("%.2fx", r)
				if r > xMax {
					label = fmt.Sprintf(">%.2fx", r)
				}
				// On white, so the 1.0 line never cuts through it.
				fill(img, image.Rect(end+3, rowTop, end+7+textWidth(label), rowTop+barRow-1), white)
				drawText(img, end+5, rowTop+11, label, textColor)
			}
			y = bottom + blockGap
		}
	}
	foot := fmt.Sprintf("Each bar: an implementation's median (rounds: %d) divided by %s's median for the same metric. Scale 0-%.2gx; grid every 0.5x.",
		res.Rounds, ChartBase, xMax)
	drawText(img, (chartWidth-textWidth(foot))/2, titleBand+height+20, foot, labelColor)
	return img
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, &image.Uniform{C: c}, image.Point{}, draw.Src)
}

func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: &image.Uniform{C: c}, Face: face, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func textWidth(s string) int {
	return font.MeasureString(face, s).Round()
}
