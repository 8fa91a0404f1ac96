package report

import (
	"fmt"
	"image/color"
	"math"

	"github.com/kooperkit/kooper/bench/internal/chart"
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

// colorOf is impl's color in every chart.
func colorOf(impl string) color.RGBA {
	if c, ok := implColors[impl]; ok {
		return c
	}
	if c, ok := moreColors[impl]; ok {
		return c
	}
	return otherColor
}

// WriteFailoverPNG draws scenarios 4 and 5 (FailoverChart) to path: a
// PNG, or another format if the extension names one (see chart.Page.Save).
func WriteFailoverPNG(path string, res runner.Results) error {
	pg, err := FailoverChart(res)
	if err != nil {
		return err
	}
	return pg.Save(path)
}

// FailoverChart is the medians of scenarios 4 (failover) and 5 (fresh
// changes first) in their own units: horizontal bars, one block per
// metric, each on its own scale.
func FailoverChart(res runner.Results) (*chart.Page, error) {
	l := res.Lease
	pg := &chart.Page{
		Title: "Failover and fresh changes first on a real control plane: medians (lower is better)",
		Subtitle: fmt.Sprintf("%d pods; failover: 2 replicas, Lease %s/%s/%s; fresh: %s per handling, %d pods created each time; rounds: %d; GOMAXPROCS %d, %s",
			res.Pods, l.LeaseDuration, l.RenewDeadline, l.RetryPeriod, res.FreshHandle, res.FreshPods, res.Rounds, res.GOMAXPROCS, res.GoVersion),
		Footnote: fmt.Sprintf("Each bar: an implementation's median over %d rounds; each block has its own scale. kooper = warm standby (the default); kooper-cold = DisableWarmStandby.", res.Rounds),
		Width:    chartWidth,
	}
	var err error
	if pg.Plots, pg.Height, err = blockPlots(valueBlocks(res)); err != nil {
		return nil, err
	}
	pg.Height += chartPadding
	return pg, nil
}

// valueBlocks are the blocks of FailoverChart, in rows: each
// implementation's median, labelled in the block's unit.
func valueBlocks(res runner.Results) [][]barBlock {
	rows := make([][]barBlock, len(valueColumns[0]))
	for _, col := range valueColumns {
		for i, b := range col {
			names := res.FailoverImpls
			if b.fresh {
				names = res.FreshImpls
			}
			block := barBlock{title: b.title, axis: "median, " + b.unit}
			for _, n := range names {
				row := barRow{name: n, value: math.NaN(), label: "-", color: colorOf(n)}
				if s := Summarize(res, n, b.metric); s.Runs > 0 {
					row.value, row.label = s.Median, formatValue(s.Median, b.unit)
				}
				block.rows = append(block.rows, row)
			}
			rows[i] = append(rows[i], block)
		}
	}
	return rows
}

// formatValue labels a bar: v in unit with three significant digits or
// fewer, milliseconds from a thousand on in seconds.
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
