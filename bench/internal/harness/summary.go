package harness

import (
	"slices"
	"time"
)

// Summary holds the medians of several runs of one implementation.
type Summary struct {
	Impl         string
	Runs         int
	EventsPerSec float64
	// MinEventsPerSec and MaxEventsPerSec show the spread of the runs.
	MinEventsPerSec, MaxEventsPerSec float64
	AllocsPerEvent                   float64
	Elapsed                          time.Duration
	HandlerCalls                     float64
}

// Summarize returns the per-field medians of results, which must all be
// runs of one implementation. It returns a zero Summary for no results.
func Summarize(results []Result) Summary {
	if len(results) == 0 {
		return Summary{}
	}
	s := Summary{Impl: results[0].Impl, Runs: len(results)}
	s.EventsPerSec = median(results, Result.EventsPerSecond)
	s.MinEventsPerSec = slices.Min(values(results, Result.EventsPerSecond))
	s.MaxEventsPerSec = slices.Max(values(results, Result.EventsPerSecond))
	s.AllocsPerEvent = median(results, Result.AllocsPerEvent)
	s.Elapsed = time.Duration(median(results, func(r Result) float64 { return float64(r.Elapsed) }))
	s.HandlerCalls = median(results, func(r Result) float64 { return float64(r.HandlerCalls) })
	return s
}

func values(results []Result, f func(Result) float64) []float64 {
	vs := make([]float64, len(results))
	for i, r := range results {
		vs[i] = f(r)
	}
	return vs
}

func median(results []Result, f func(Result) float64) float64 {
	vs := values(results, f)
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}
