// Package report turns a benchmark's runner.Results into tables of
// medians, ratios between implementations, the informational targets, and
// a PNG chart of the key ratios.
package report

import (
	"slices"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// Metric is one measured quantity of a scenario, in display units.
type Metric struct {
	// Name heads its column.
	Name string
	// Scenario is child.Single or child.Pair.
	Scenario string
	// Format is how a value is printed (fmt verb).
	Format string
	value  func(runner.Record) (float64, bool)
}

// Value returns the metric of a completed run, false if it has none.
func (m Metric) Value(r runner.Record) (float64, bool) {
	if r.Err != "" || r.Scenario != m.Scenario {
		return 0, false
	}
	return m.value(r)
}

func syncValue(f func(*child.Sync) float64) func(runner.Record) (float64, bool) {
	return func(r runner.Record) (float64, bool) {
		if r.Sync == nil {
			return 0, false
		}
		return f(r.Sync), true
	}
}

func churnValue(f func(*child.Churn) float64) func(runner.Record) (float64, bool) {
	return func(r runner.Record) (float64, bool) {
		if r.Churn == nil {
			return 0, false
		}
		return f(r.Churn), true
	}
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

// The metrics, per scenario.
var (
	TimeToAllHandled = Metric{"time-to-all-handled s", child.Single, "%.3f", syncValue(func(s *child.Sync) float64 { return s.Elapsed.Seconds() })}
	FirstHandled     = Metric{"first handled s", child.Single, "%.3f", syncValue(func(s *child.Sync) float64 { return s.FirstHandled.Seconds() })}
	SyncCPU          = Metric{"sync CPU s", child.Single, "%.2f", syncValue(func(s *child.Sync) float64 { return s.CPU.Seconds() })}
	SyncGCs          = Metric{"GCs", child.Single, "%.0f", syncValue(func(s *child.Sync) float64 { return float64(s.GCs) })}
	SyncGCCPU        = Metric{"GC CPU s", child.Single, "%.2f", syncValue(func(s *child.Sync) float64 { return s.GCCPU.Seconds() })}
	HeapPerPod       = Metric{"heap/pod KiB", child.Single, "%.2f", syncValue(func(s *child.Sync) float64 { return s.HeapPerPod / kib })}
	RSS              = Metric{"RSS MiB", child.Single, "%.0f", syncValue(func(s *child.Sync) float64 { return float64(s.RSS) / mib })}
	PeakRSS          = Metric{"peak RSS MiB", child.Single, "%.0f", syncValue(func(s *child.Sync) float64 { return float64(s.PeakRSS) / mib })}
	ChildCPU         = Metric{"child CPU s", child.Single, "%.2f", func(r runner.Record) (float64, bool) { return r.TotalCPU.Seconds(), r.TotalCPU > 0 }}

	ChurnP50   = Metric{"churn p50 ms", child.Single, "%.1f", churnValue(func(c *child.Churn) float64 { return ms(c.P50.Seconds()) })}
	ChurnP99   = Metric{"churn p99 ms", child.Single, "%.1f", churnValue(func(c *child.Churn) float64 { return ms(c.P99.Seconds()) })}
	ChurnCPU   = Metric{"churn CPU s", child.Single, "%.2f", churnValue(func(c *child.Churn) float64 { return c.CPU.Seconds() })}
	ChurnGCs   = Metric{"churn GCs", child.Single, "%.0f", churnValue(func(c *child.Churn) float64 { return float64(c.GCs) })}
	ChurnGCCPU = Metric{"churn GC CPU s", child.Single, "%.2f", churnValue(func(c *child.Churn) float64 { return c.GCCPU.Seconds() })}

	PairTime       = Metric{"time-to-all-handled s", child.Pair, "%.3f", TimeToAllHandled.value}
	PairSyncCPU    = Metric{"sync CPU s", child.Pair, "%.2f", SyncCPU.value}
	PairHeapPerPod = Metric{"heap/pod KiB", child.Pair, "%.2f", HeapPerPod.value}
	PairRSS        = Metric{"RSS MiB", child.Pair, "%.0f", RSS.value}
	PairPeakRSS    = Metric{"peak RSS MiB", child.Pair, "%.0f", PeakRSS.value}
)

func ms(seconds float64) float64 { return seconds * 1000 }

// Stat is the median and spread of one metric over an implementation's
// completed runs.
type Stat struct {
	Median, Min, Max float64
	Runs             int
}

// Summarize returns m's Stat over impl's runs in res; Runs is 0 if none has
// the metric.
func Summarize(res runner.Results, impl string, m Metric) Stat {
	var vs []float64
	for _, r := range res.Runs {
		if r.Impl != impl {
			continue
		}
		if v, ok := m.Value(r); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return Stat{}
	}
	slices.Sort(vs)
	s := Stat{Min: vs[0], Max: vs[len(vs)-1], Runs: len(vs)}
	if n := len(vs); n%2 == 0 {
		s.Median = (vs[n/2-1] + vs[n/2]) / 2
	} else {
		s.Median = vs[n/2]
	}
	return s
}

// Ratio is impl's median of m over base's; false if either has no runs or
// base's median is zero.
func Ratio(res runner.Results, impl, base string, m Metric) (float64, bool) {
	a, b := Summarize(res, impl, m), Summarize(res, base, m)
	if a.Runs == 0 || b.Runs == 0 || b.Median == 0 {
		return 0, false
	}
	return a.Median / b.Median, true
}
