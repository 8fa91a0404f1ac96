package report

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// valueBlock is one metric of the failover chart, in its own units: a bar
// per implementation, scaled to the block's longest.
type valueBlock struct {
	title  string
	metric Metric
	unit   string
	fresh  bool // scenario 5's implementations, else scenario 4's
}

// The failover chart's two columns of blocks, top to bottom.
var valueColumns = [][]valueBlock{
	{
		{"failover, leader stopped cleanly: first handling", StopFirstHandled, "s", false},
		{"failover, leader stopped cleanly: every pod handled", StopAllHandled, "s", false},
		{"failover, leader killed (SIGKILL): first handling", KillFirstHandled, "s", false},
		{"failover: a standby's RSS", StandbyRSS, "MiB", false},
	},
	{
		{"fresh first: p99, pods created during the initial backlog", FreshSyncP99, "ms", true},
		{"fresh first: p99, pods created during a resync", FreshResyncP99, "ms", true},
		{"fresh first: p50, pods created during the initial backlog", FreshSyncP50, "ms", true},
		{"fresh first: the whole initial backlog", FreshBacklog, "s", true},
	},
}

// More implementation colors for scenarios 4 and 5.
var moreColors = map[string]color.RGBA{
	impls.NameKooperCold:              {0x8c, 0xb4, 0xe8, 0xff}, // light blue
	impls.NameKooperV2:                {0xd0, 0x2f, 0x3a, 0xff}, // red
	impls.NameControllerRuntimeWarmup: {0xb3, 0x4a, 0x00, 0xff}, // dark orange
	impls.NameControllerRuntimePQ:     {0xb3, 0x4a, 0x00, 0xff}, // dark orange
}

func colorOf(impl string) color.RGBA {
	if c, ok := implColors[impl]; ok {
		return c
	}
	if c, ok := moreColors[impl]; ok {
		return c
	}
	return otherColor
}

// WriteFailoverPNG draws scenarios 4 and 5 (FailoverChart) to path.
func WriteFailoverPNG(path string, res runner.Results) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("could not create %s: %w", path, err)
	}
	if err := png.Encode(f, FailoverChart(res)); err != nil {
		_ = f.Close()
		return fmt.Errorf("could not write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("could not write %s: %w", path, err)
	}
	return nil
}

// FailoverChart draws the medians of scenarios 4 (failover) and 5 (fresh
// changes first) in their own units: horizontal bars, one block per
// metric, each scaled to its longest bar.
func FailoverChart(res runner.Results) *image.RGBA {
	blockImpls := func(b valueBlock) []string {
		if b.fresh {
			return res.FreshImpls
		}
		return res.FailoverImpls
	}
	height := 0
	for _, col := range valueColumns {
		h := 0
		for _, b := range col {
			h += blockTitle + max(len(blockImpls(b)), 1)*barRow + blockGap
		}
		height = max(height, h)
	}
	img := image.NewRGBA(image.Rect(0, 0, chartWidth, titleBand+height+footerBand))
	fill(img, img.Bounds(), white)

	title := "Failover and fresh changes first on a real control plane: medians (lower is better)"
	drawText(img, (chartWidth-textWidth(title))/2, 20, title, textColor)
	l := res.Lease
	sub := fmt.Sprintf("%d pods; failover: 2 replicas, Lease %s/%s/%s; fresh: %s per handling, %d pods created each time; rounds: %d; GOMAXPROCS %d, %s",
		res.Pods, l.LeaseDuration, l.RenewDeadline, l.RetryPeriod, res.FreshHandle, res.FreshPods, res.Rounds, res.GOMAXPROCS, res.GoVersion)
	drawText(img, (chartWidth-textWidth(sub))/2, 40, sub, labelColor)

	for c, col := range valueColumns {
		x0 := c * columnWidth
		barLeft, barRight := x0+labelWidth, x0+columnWidth-valueWidth-28
		y := titleBand
		for _, b := range col {
			drawText(img, x0+12, y+15, b.title, textColor)
			names := blockImpls(b)
			top, bottom := y+blockTitle, y+blockTitle+max(len(names), 1)*barRow
			fill(img, image.Rect(barLeft, top-2, barLeft+1, bottom), labelColor)
			longest := 0.0
			for _, n := range names {
				if s := Summarize(res, n, b.metric); s.Runs > 0 {
					longest = math.Max(longest, s.Median)
				}
			}
			if len(names) == 0 {
				drawText(img, barLeft+8, top+12, "not run", labelColor)
			}
			for i, n := range names {
				rowTop := top + i*barRow
				drawText(img, barLeft-8-textWidth(n), rowTop+11, n, labelColor)
				s := Summarize(res, n, b.metric)
				if s.Runs == 0 || longest <= 0 {
					drawText(img, barLeft+6, rowTop+11, "-", labelColor)
					continue
				}
				end := barLeft + 2 + int(math.Round(s.Median/longest*float64(barRight-barLeft-2)))
				fill(img, image.Rect(barLeft+1, rowTop+1, end, rowTop+1+barHeight), colorOf(n))
				drawText(img, end+5, rowTop+11, formatValue(s.Median, b.unit), textColor)
			}
			y = bottom + blockGap
		}
	}
	foot := fmt.Sprintf("Each bar: an implementation's median over %d rounds; each block has its own scale. kooper = warm standby (the default); kooper-cold = DisableWarmStandby.", res.Rounds)
	drawText(img, (chartWidth-textWidth(foot))/2, titleBand+height+20, foot, labelColor)
	return img
}

func formatValue(v float64, unit string) string {
	switch {
	case unit == "ms" && v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}
