package report

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// syncRuns are results of scenario 1 in which kooper takes half kooper-v2's
// time, the floor seven times it (beyond the chart's scale), and
// controller-runtime has no completed run; no pair ran.
func syncRuns() runner.Results {
	run := func(impl string, elapsed time.Duration) runner.Record {
		return runner.Record{Impl: impl, Scenario: child.Single, Sync: &child.Sync{Elapsed: elapsed, CPU: elapsed}}
	}
	return runner.Results{
		Pods: 10, Rounds: 1, Scenarios: runner.Scenarios{Sync: true},
		SingleImpls: []string{impls.NameKooper, impls.NameKooperV2, impls.NameFloor, impls.NameControllerRuntime},
		Runs: []runner.Record{
			run(impls.NameKooper, 2*time.Second),
			run(impls.NameKooperV2, 4*time.Second),
			run(impls.NameFloor, 28*time.Second),
			{Impl: impls.NameControllerRuntime, Scenario: child.Single, Err: "hung"},
		},
	}
}

// committed reads results the repository keeps in bench/results.
func committed(t *testing.T, name string) runner.Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "results", name))
	if err != nil {
		t.Fatal(err)
	}
	var res runner.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRatioBlocksDivideByTheBaseOnOneCutScale(t *testing.T) {
	blocks := ratioBlocks(syncRuns())
	if len(blocks) != 4 || len(blocks[0]) != 2 {
		t.Fatalf("got %d rows of %d blocks, want 4 rows of 2", len(blocks), len(blocks[0]))
	}
	tests := []struct {
		name   string
		block  barBlock
		title  string
		names  []string
		values []float64 // NaN: no bar
		labels []string
	}{
		{
			"time: the floor's bar cut at the scale's end", blocks[0][0], "initial sync: time-to-all-handled",
			[]string{impls.NameKooper, impls.NameFloor, impls.NameControllerRuntime},
			[]float64{0.5, 7, math.NaN()}, []string{"0.50x", ">7.00x", "-"},
		},
		{
			"CPU", blocks[1][0], "initial sync: CPU",
			[]string{impls.NameKooper, impls.NameFloor, impls.NameControllerRuntime},
			[]float64{0.5, 7, math.NaN()}, []string{"0.50x", ">7.00x", "-"},
		},
		{"a scenario that did not run", blocks[2][1], "two controllers: heap per pod", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.block
			if b.title != tt.title || b.max != maxChartXMax || b.rule != 1 {
				t.Errorf("got title %q, scale to %v, line at %v; want %q, %v, 1", b.title, b.max, b.rule, tt.title, maxChartXMax)
			}
			var names, labels []string
			var values []float64
			for _, r := range b.rows {
				names, labels, values = append(names, r.name), append(labels, r.label), append(values, r.value)
				if r.color != colorOf(r.name) {
					t.Errorf("%s: got color %v, want %v", r.name, r.color, colorOf(r.name))
				}
			}
			if !slices.Equal(names, tt.names) || !slices.Equal(labels, tt.labels) {
				t.Errorf("got bars %v labelled %v, want %v labelled %v", names, labels, tt.names, tt.labels)
			}
			if !slices.EqualFunc(values, tt.values, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
				t.Errorf("got values %v, want %v", values, tt.values)
			}
		})
	}
}

func TestRatioBlocksScaleToTheLongestBar(t *testing.T) {
	res := syncRuns()
	res.SingleImpls = []string{impls.NameKooper, impls.NameKooperV2}
	if got, want := ratioBlocks(res)[0][0].max, 1.25; got != want {
		t.Errorf("got a scale to %v with bars of 0.5, want at least %v so that the line at 1.0 stands clear", got, want)
	}
	res.Runs[0].Sync.Elapsed = 6 * time.Second // 1.5x
	if got, want := ratioBlocks(res)[0][0].max, 1.5*1.1; math.Abs(got-want) > 1e-9 {
		t.Errorf("got a scale to %v for a longest bar of 1.5, want %v: room for its label", got, want)
	}
}

func TestValueBlocksShowMediansInTheirUnits(t *testing.T) {
	res := committed(t, "failover.json")
	blocks := valueBlocks(res)
	tests := []struct {
		block  barBlock
		title  string
		axis   string
		names  []string
		labels []string
	}{
		{
			blocks[0][0], "failover, leader stopped cleanly: first handling", "median, s", res.FailoverImpls,
			[]string{"1.53 s", "0.02 s", "17.3 s", "4.28 s", "2.47 s"},
		},
		{
			blocks[3][0], "failover: a standby's RSS", "median, MiB", res.FailoverImpls,
			[]string{"31.3 MiB", "282 MiB", "31.1 MiB", "31.2 MiB", "344 MiB"},
		},
		{
			blocks[0][1], "fresh first: p99, pods created during the initial backlog", "median, ms", res.FreshImpls,
			[]string{"13.4 ms", "23.2 ms", "4.26 s", "3.86 s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.title, func(t *testing.T) {
			b := tt.block
			if b.title != tt.title || b.axis != tt.axis || b.max != 0 || b.rule != 0 {
				t.Errorf("got %q on %q, scale to %v, line at %v; want %q on %q, each block on its own scale, no line", b.title, b.axis, b.max, b.rule, tt.title, tt.axis)
			}
			var names, labels []string
			for _, r := range b.rows {
				names, labels = append(names, r.name), append(labels, r.label)
			}
			if !slices.Equal(names, tt.names) || !slices.Equal(labels, tt.labels) {
				t.Errorf("got bars %v labelled %v, want %v labelled %v", names, labels, tt.names, tt.labels)
			}
		})
	}
}

// nominal returns the labels of an axis made with NominalY, bottom to top.
func nominal(a plot.Axis) []string {
	var names []string
	for _, tick := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		names = append(names, tick.Label)
	}
	return names
}

func TestBarBlockPlotsTheFirstRowOnTop(t *testing.T) {
	tests := []struct {
		name      string
		block     barBlock
		title     string
		names     []string // bottom to top
		low, high float64  // the value axis
	}{
		{
			"a ratio block", barBlock{title: "churn: CPU", axis: "ratio", max: 2, rule: 1, rows: []barRow{
				{name: "a", value: 0.5, label: "0.50x"}, {name: "b", value: math.NaN(), label: "-"}, {name: "c", value: 3, label: ">3.00x"},
			}},
			"churn: CPU", []string{"c", "b", "a"}, 0, 2,
		},
		{
			"a block on its own scale", barBlock{title: "RSS", axis: "median, MiB", rows: []barRow{
				{name: "a", value: 31, label: "31.0 MiB"}, {name: "b", value: 282, label: "282 MiB"},
			}},
			"RSS", []string{"b", "a"}, 0, 282,
		},
		{"a block without bars", barBlock{title: "two controllers: RSS"}, "two controllers: RSS: not run", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.block.plot()
			if err != nil {
				t.Fatal(err)
			}
			if p.Title.Text != tt.title || p.X.Label.Text != tt.block.axis {
				t.Errorf("got title %q and axis %q, want %q and %q", p.Title.Text, p.X.Label.Text, tt.title, tt.block.axis)
			}
			if got := nominal(p.Y); !slices.Equal(got, tt.names) {
				t.Errorf("got names %v bottom to top, want %v", got, tt.names)
			}
			if tt.names != nil && (p.X.Min != tt.low || p.X.Max != tt.high) {
				t.Errorf("got a value axis from %v to %v, want %v to %v", p.X.Min, p.X.Max, tt.low, tt.high)
			}
		})
	}
}

func TestTheChartsAreWrittenInTheFormatOfTheirExtension(t *testing.T) {
	sync, failover, sharding := syncRuns(), committed(t, "failover.json"), committed(t, "sharding.json")
	tests := []struct {
		name  string
		write func(string, runner.Results) error
		res   runner.Results
		texts []string // in the SVG
	}{
		{"ratios", WritePNG, sync, []string{"Kooper vs its peers", "initial sync: CPU", "&gt;7.00x", "two controllers: RSS: not run"}},
		{"failover", WriteFailoverPNG, failover, []string{"Failover and fresh changes first", "controller-runtime-warmup", "344 MiB"}},
		{"sharding", WriteShardingPNG, sharding, []string{"Kooper sharding", "replica c: 12244 handlings", "unbalanced", "kill a (2)", "10000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tt.write(filepath.Join(dir, "chart.png"), tt.res); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(dir, "chart.png"))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("could not decode the chart as a PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() != chartWidth || b.Dy() < 400 {
				t.Errorf("got a %dx%d chart, want %d wide and at least 400 high", b.Dx(), b.Dy(), chartWidth)
			}

			if err := tt.write(filepath.Join(dir, "chart.svg"), tt.res); err != nil {
				t.Fatal(err)
			}
			svg, err := os.ReadFile(filepath.Join(dir, "chart.svg"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.texts {
				if !strings.Contains(string(svg), ">"+want) {
					t.Errorf("the SVG lacks the text %q", want)
				}
			}
		})
	}
}

func TestShardingChartNeedsAMembershipRun(t *testing.T) {
	if _, err := ShardingChart(syncRuns()); err == nil {
		t.Error("got a chart of results without scenario 6, want an error")
	}
}

func TestMovesPlotDrawsEachReplicaWhileItHandled(t *testing.T) {
	m := &runner.ShardMoves{
		Changes: []runner.ShardChange{{What: "start a, b", At: 0, Balanced: 2 * time.Second}, {What: "stop b: 1 replicas", At: 3 * time.Second, Balanced: -1}},
		Rates: runner.ShardRates{
			Width: time.Second, Replicas: []string{"a", "b", "c"},
			Counts: [][]int{{5, 0, 7, 9}, {0, 300, 2, 0}, {0, 0, 0, 0}},
		},
		Handlings: map[string]int{"a": 21, "b": 302},
	}
	p, legend, err := movesPlot(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Min != 0 || p.X.Max != 4 {
		t.Errorf("got a time axis from %v to %v, want 0 to 4 (4 buckets of 1 s)", p.X.Min, p.X.Max)
	}
	if p.Y.Min != 0 || p.Y.Max < 300 || !p.Y.AutoRescale {
		t.Errorf("got a rate axis from %v to %v, want from 0 to the next tick above 300", p.Y.Min, p.Y.Max)
	}
	// c handled nothing: no line and no legend entry.
	svg := vgsvg.New(400, 200)
	legend.Draw(draw.New(svg))
	var b bytes.Buffer
	if _, err := svg.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">replica a: 21 handlings<", ">replica b: 302 handlings<", ">unbalanced<", ">membership change<"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the legend lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "replica c") {
		t.Error("the legend names replica c, which handled nothing")
	}
}

func TestLog1pScaleKeepsZeroAtTheBottom(t *testing.T) {
	for _, tt := range []struct {
		v, want float64
	}{{0, 0}, {9999, 1}, {99, 0.5}} {
		if got := (log1pScale{}).Normalize(0, 9999, tt.v); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Normalize(0, 9999, %v): got %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestZeroAndLogTicksLabelZeroAndEachPowerOfTen(t *testing.T) {
	var labels []string
	for _, tick := range zeroAndLogTicks(0, 2300) {
		if !tick.IsMinor() {
			labels = append(labels, tick.Label)
		}
	}
	if want := []string{"0", "1", "10", "100", "1000", "10000"}; !slices.Equal(labels, want) {
		t.Errorf("got labels %v, want %v", labels, want)
	}
}

func TestShortChangeLabelsAChange(t *testing.T) {
	for _, tt := range []struct{ what, want string }{
		{"start a, b, c: 3 replicas", "a, b, c"},
		{"start d: 4 replicas", "+d (4)"},
		{"stop e: 4 replicas", "-e (4)"},
		{"SIGKILL a: 2 replicas", "kill a (2)"},
		{"API server restart", "API server restart"},
	} {
		if got := shortChange(tt.what); got != tt.want {
			t.Errorf("shortChange(%q): got %q, want %q", tt.what, got, tt.want)
		}
	}
}
