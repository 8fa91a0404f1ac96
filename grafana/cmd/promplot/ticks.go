package main

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// axis is a linear value axis from Min to Max with a tick every Step.
type axis struct {
	Min, Max float64
	Step     float64
	Ticks    []float64 // Ticks from Min to Max included, Step apart.
}

// niceAxis returns an axis that covers [lo, hi] with about target ticks placed
// on multiples of 1, 2 or 5 times a power of ten, so labels stay short (0,
// 0.25, 0.5 rather than 0, 0.237, 0.474). An empty or degenerate range widens
// to something drawable: [0, 0] becomes [0, 1].
func niceAxis(lo, hi float64, target int) axis {
	if math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0) {
		lo, hi = 0, 1
	}
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi-lo <= 1e-9*math.Max(math.Abs(lo), math.Abs(hi)) {
		// A flat line: give it room on both sides, or above a zero.
		pad := math.Abs(lo) / 10
		if pad == 0 {
			pad = 1
		}
		if lo == 0 {
			hi = pad
		} else {
			lo, hi = lo-pad, hi+pad
		}
	}
	if target < 2 {
		target = 2
	}

	// The step is m×10^e with m in {1, 2, 5}, the nearest to an even split.
	raw := (hi - lo) / float64(target-1)
	e := int(math.Floor(math.Log10(raw)))
	var m float64
	switch norm := raw / math.Pow10(e); {
	case norm < 1.5:
		m = 1
	case norm < 3:
		m = 2
	case norm < 7:
		m = 5
	default:
		m, e = 1, e+1
	}
	// value computes k×m×10^e dividing by an exact power of ten for negative
	// exponents, so that 3 steps of 0.1 are 0.3, not 0.30000000000000004.
	value := func(k float64) float64 {
		if e >= 0 {
			return k * m * math.Pow10(e)
		}
		return k * m / math.Pow10(-e)
	}
	step := value(1)
	const slack = 1e-9 // absorbs the rounding of lo/step when lo is on a tick
	k0 := math.Floor(lo/step + slack)
	k1 := math.Ceil(hi/step - slack)

	ax := axis{Min: value(k0), Max: value(k1), Step: step}
	for k := k0; k <= k1; k++ {
		ax.Ticks = append(ax.Ticks, value(k))
	}
	return ax
}

// siPrefixes are the suffixes of compact labels, largest first.
var siPrefixes = []struct {
	factor float64
	suffix string
}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}

// formatValue labels the tick v of an axis whose ticks are step apart: with a
// k, M, G or T suffix from a thousand up (1.5k, 2M), and with just the
// decimals that tell ticks apart below (0.25, 0.004), so seconds stay in
// seconds. A step of 0 or less means unknown: three significant digits.
func formatValue(v, step float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		if v == 0 {
			return "0"
		}
		return strconv.FormatFloat(v, 'f', -1, 64) // NaN, +Inf, -Inf
	}
	scale, suffix := 1.0, ""
	for _, p := range siPrefixes {
		if math.Abs(v) >= p.factor {
			scale, suffix = p.factor, p.suffix
			break
		}
	}
	scaled := v / scale
	var s string
	if step <= 0 {
		s = strconv.FormatFloat(scaled, 'g', 3, 64)
	} else {
		decimals := 0
		if st := step / scale; st < 1 {
			decimals = min(int(math.Ceil(-math.Log10(st)-1e-9)), 15)
		}
		s = strconv.FormatFloat(scaled, 'f', decimals, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
	}
	if s == "-0" {
		s = "0"
	}
	return s + suffix
}

// timeSteps are the spacings of time ticks, each dividing a day so that ticks
// fall on round wall-clock times in UTC.
var timeSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// timeTicks returns at most maxTicks times in [start, end] on multiples of the
// smallest round spacing that needs no more, counted from midnight UTC.
func timeTicks(start, end time.Time, maxTicks int) []time.Time {
	span := end.Sub(start)
	if span <= 0 {
		return nil
	}
	if maxTicks < 1 {
		maxTicks = 1
	}
	var step time.Duration
	for _, s := range timeSteps {
		if span/s < time.Duration(maxTicks) {
			step = s
			break
		}
	}
	if step == 0 { // longer than maxTicks days: whole days
		days := span/(24*time.Hour)/time.Duration(maxTicks) + 1
		step = days * 24 * time.Hour
	}
	// Truncate counts from the zero time, a UTC midnight, so multiples of
	// steps that divide a day land on round UTC times.
	t := start.Truncate(step)
	if t.Before(start) {
		t = t.Add(step)
	}
	var ticks []time.Time
	for ; !t.After(end); t = t.Add(step) {
		ticks = append(ticks, t.UTC())
	}
	return ticks
}
