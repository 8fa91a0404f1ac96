package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// Baselines every implementation is compared with.
var Baselines = []string{impls.NameKooperV2, impls.NameControllerRuntime, impls.NameFloor}

// Column sets of the tables.
var (
	singleColumns = []Metric{TimeToAllHandled, FirstHandled, SyncCPU, SyncGCs, SyncGCCPU, HeapPerPod, RSS, PeakRSS, ChildCPU}
	churnColumns  = []Metric{ChurnP50, ChurnP99, ChurnCPU, ChurnGCs, ChurnGCCPU}
	pairColumns   = []Metric{PairTime, PairSyncCPU, PairHeapPerPod, PairRSS, PairPeakRSS}
	singleRatios  = []Metric{TimeToAllHandled, SyncCPU, HeapPerPod, RSS, PeakRSS, ChurnCPU, ChurnP50, ChurnP99}
)

// Print writes the whole report: the setup, a table of medians (min-max)
// per scenario, ratio tables against each baseline, the targets and the
// requests each implementation made, as Markdown tables.
func Print(w io.Writer, res runner.Results) {
	fmt.Fprintf(w, "%d pods (%.0f B as JSON, %.0f B as protobuf on average, seeded in %s), %d updates (%d in flight), %d rounds, GOMAXPROCS %d, %s\n",
		res.Pods, res.PodSize.JSON, res.PodSize.Protobuf, res.Seeding.Round(time.Millisecond), res.Updates, res.ChurnWriters, res.Rounds, res.GOMAXPROCS, res.GoVersion)
	if res.HandlerDelay > 0 {
		fmt.Fprintf(w, "every handling sleeps %s (a handler waiting on I/O)\n", res.HandlerDelay)
	}
	fmt.Fprintf(w, "load average at start %s, at end %s; pods in the namespace at the end: %d\n", res.LoadStart, res.LoadEnd, res.PodsAtEnd)

	if len(res.SingleImpls) > 0 {
		if res.Scenarios.Sync {
			fmt.Fprintf(w, "\n## Scenario 1: initial sync of %d pods, one controller per fresh process (median (min-max))\n\n", res.Pods)
			statTable(w, res, res.SingleImpls, singleColumns)
		}
		if res.Scenarios.Churn {
			fmt.Fprintf(w, "\n## Scenario 2: %d updates to distinct pods after the sync, same process (median (min-max))\n\n", res.Updates)
			statTable(w, res, res.SingleImpls, churnColumns)
		}
		for _, base := range Baselines {
			fmt.Fprintf(w, "\nScenarios 1-2, ratios of medians vs %s (lower is better):\n\n", base)
			ratioTable(w, res, res.SingleImpls, base, singleRatios)
		}
	}
	if len(res.PairImpls) > 0 {
		fmt.Fprintf(w, "\n## Scenario 3: two controllers on pods in one process (median (min-max))\n\n")
		fmt.Fprintln(w, "controller-runtime's two controllers share the manager's cache (one informer) by design; floor, kooper and")
		fmt.Fprintln(w, "kooper-v2 run two independent informers.")
		fmt.Fprintln(w)
		statTable(w, res, res.PairImpls, pairColumns)
		for _, base := range append(Baselines, impls.NameKooper) {
			fmt.Fprintf(w, "\nScenario 3, ratios of medians vs %s (lower is better):\n\n", base)
			ratioTable(w, res, res.PairImpls, base, pairColumns)
		}
	}

	if len(res.FailoverImpls) > 0 {
		printFailover(w, res)
	}
	if len(res.FreshImpls) > 0 {
		printFresh(w, res)
	}
	if len(res.ShardingImpls) > 0 {
		printSharding(w, res)
	}

	if len(res.SingleImpls)+len(res.PairImpls) > 0 {
		fmt.Fprintf(w, "\nTargets of scenarios 1-3 (informational: missing one never changes the exit code):\n\n")
		for _, t := range Targets() {
			fmt.Fprintln(w, t.Line(res))
		}
	}

	if len(res.SingleImpls)+len(res.PairImpls) > 0 {
		fmt.Fprintf(w, "\nRequests each implementation made until every pod was handled (its first completed run):\n\n")
	}
	for _, s := range []struct {
		scenario string
		impls    []string
	}{{"single", res.SingleImpls}, {"pair", res.PairImpls}} {
		for _, impl := range s.impls {
			for _, r := range res.Runs {
				if r.Impl == impl && r.Scenario == s.scenario && r.Sync != nil {
					fmt.Fprintf(w, "- %s (%s): %s\n", impl, s.scenario, strings.Join(r.Sync.Requests, "; "))
					break
				}
			}
		}
	}

	if failed := res.Failed(); len(failed) > 0 {
		fmt.Fprintf(w, "\n%d runs FAILED:\n", len(failed))
		for _, r := range failed {
			fmt.Fprintf(w, "- round %d %s %s: %s\n", r.Round, r.Scenario, r.Impl, r.Err)
		}
	}
}

func statTable(w io.Writer, res runner.Results, names []string, columns []Metric) {
	header := []string{"implementation"}
	for _, m := range columns {
		header = append(header, m.Name)
	}
	header = append(header, "runs")
	rows := [][]string{header}
	for _, impl := range names {
		row := []string{impl}
		runs := 0
		for _, m := range columns {
			s := Summarize(res, impl, m)
			runs = max(runs, s.Runs)
			if s.Runs == 0 {
				row = append(row, "-")
				continue
			}
			row = append(row, fmt.Sprintf(m.Format+" ("+m.Format+"-"+m.Format+")", s.Median, s.Min, s.Max))
		}
		rows = append(rows, append(row, fmt.Sprint(runs)))
	}
	markdown(w, rows)
}

func ratioTable(w io.Writer, res runner.Results, names []string, base string, columns []Metric) {
	header := []string{"vs " + base}
	for _, m := range columns {
		header = append(header, m.Name)
	}
	rows := [][]string{header}
	for _, impl := range names {
		if impl == base {
			continue
		}
		row := []string{impl}
		for _, m := range columns {
			if r, ok := Ratio(res, impl, base, m); ok {
				row = append(row, formatRatio(r))
			} else {
				row = append(row, "-")
			}
		}
		rows = append(rows, row)
	}
	markdown(w, rows)
}

// markdown writes rows (the first is the header) as a Markdown table with
// padded columns; every column but the first is right-aligned.
func markdown(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)), 3)
		}
	}
	line := func(row []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i == 0 {
				b.WriteString(" " + cell + pad + " |")
			} else {
				b.WriteString(" " + pad + cell + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(widths))
	for i, n := range widths {
		if i == 0 {
			sep[i] = strings.Repeat("-", n)
		} else {
			sep[i] = strings.Repeat("-", n-1) + ":"
		}
	}
	line(sep)
	for _, row := range rows[1:] {
		line(row)
	}
}

// formatRatio prints a ratio with two decimals, or with three significant
// digits below 0.1.
func formatRatio(r float64) string {
	if r < 0.1 {
		return fmt.Sprintf("%.3gx", r)
	}
	return fmt.Sprintf("%.2fx", r)
}
