package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/report"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

func record(impl string, elapsed time.Duration, heap float64) runner.Record {
	return runner.Record{Impl: impl, Scenario: child.Single, Sync: &child.Sync{Elapsed: elapsed, HeapPerPod: heap}}
}

func results() runner.Results {
	return runner.Results{
		Pods: 10, Rounds: 3, Scenarios: runner.Scenarios{Sync: true},
		SingleImpls: []string{impls.NameKooper, impls.NameKooperV2},
		Runs: []runner.Record{
			record(impls.NameKooper, 1*time.Second, 1000),
			record(impls.NameKooper, 3*time.Second, 1000),
			record(impls.NameKooper, 2*time.Second, 1000),
			record(impls.NameKooperV2, 4*time.Second, 2000),
			{Impl: impls.NameKooperV2, Scenario: child.Single, Err: "hung"},
		},
	}
}

func TestSummarizeTakesTheMedianOfCompletedRuns(t *testing.T) {
	s := report.Summarize(results(), impls.NameKooper, report.TimeToAllHandled)
	if want := (report.Stat{Median: 2, Min: 1, Max: 3, Runs: 3}); s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if s := report.Summarize(results(), impls.NameKooperV2, report.TimeToAllHandled); s.Runs != 1 {
		t.Errorf("got %d runs of kooper-v2, want 1 (the failed one has no metric)", s.Runs)
	}
}

func TestTargetLinesSayMetMissedOrNotApplicable(t *testing.T) {
	res := results()
	for _, c := range []struct {
		target report.Target
		want   string
	}{
		{report.Target{What: "time", Metric: report.TimeToAllHandled, Impls: []string{impls.NameKooper}, Base: impls.NameKooperV2, Max: 0.9}, "0.50x  target <= 0.90x  met"},
		{report.Target{What: "heap", Metric: report.HeapPerPod, Impls: []string{impls.NameKooper}, Base: impls.NameKooperV2, Max: 0.2}, "0.50x  target <= 0.20x  MISSED"},
		{report.Target{What: "heap", Metric: report.HeapPerPod, Impls: []string{impls.NameFloor}, Base: impls.NameKooperV2, Max: 0.2}, "n/a (needs floor and kooper-v2)"},
	} {
		if got := c.target.Line(res); !strings.HasSuffix(got, c.want) {
			t.Errorf("got %q, want it to end with %q", got, c.want)
		}
	}
}

func TestPrintListsFailedRuns(t *testing.T) {
	var b bytes.Buffer
	report.Print(&b, results())
	for _, want := range []string{"## Scenario 1", "| kooper ", "2.000 (1.000-3.000)", "1 runs FAILED", "hung"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestTheChartHasABlockPerMetric(t *testing.T) {
	pg, err := report.Chart(results())
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Plots) != 4 || len(pg.Plots[0]) != 2 {
		t.Fatalf("got %d rows of %d plots, want 4 rows of 2", len(pg.Plots), len(pg.Plots[0]))
	}
	if got, want := pg.Plots[0][0].Title.Text, "initial sync: time-to-all-handled"; got != want {
		t.Errorf("got first block %q, want %q", got, want)
	}
	if pg.Width != 1200 || pg.Height < 400 {
		t.Errorf("got a %dx%d chart, want 1200 wide", pg.Width, pg.Height)
	}
}
