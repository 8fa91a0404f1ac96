package report

import (
	"fmt"
	"strings"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// Target is one informational goal: the best median of Impls for Metric is
// at most Max times Base's. Max 0 means no target: the ratio is shown.
type Target struct {
	What   string
	Metric Metric
	Impls  []string
	Base   string
	Max    float64
}

// Targets returns the targets, in report order.
func Targets() []Target {
	// Kooper hands every handling its own deep copy; kooper-v2 and the
	// floor never copy.
	kooper := []string{impls.NameKooper}
	return []Target{
		{"time-to-all-handled", TimeToAllHandled, kooper, impls.NameKooperV2, 0.9},
		{"time-to-all-handled", TimeToAllHandled, kooper, impls.NameControllerRuntime, 0.7},
		{"heap per cached pod", HeapPerPod, kooper, impls.NameKooperV2, 0.8},
		{"heap per cached pod", HeapPerPod, []string{impls.NameKooperMetadata}, impls.NameKooperV2, 0.2},
		{"RSS", RSS, kooper, impls.NameControllerRuntime, 0.75},
		{"churn CPU", ChurnCPU, kooper, impls.NameKooperV2, 1.0},
		{"two controllers, heap per pod", PairHeapPerPod, kooper, impls.NameKooperV2, 0},
		{"two controllers, RSS", PairRSS, kooper, impls.NameKooperV2, 0},
	}
}

// Line is the target's report line: the ratio, the best implementation,
// and whether it was met.
func (t Target) Line(res runner.Results) string {
	what := fmt.Sprintf("%-30s %-42s vs %-18s", t.What, strings.Join(t.Impls, " or "), t.Base)
	best, bestImpl := 0.0, ""
	for _, impl := range t.Impls {
		if r, ok := Ratio(res, impl, t.Base, t.Metric); ok && (bestImpl == "" || r < best) {
			best, bestImpl = r, impl
		}
	}
	if bestImpl == "" {
		return fmt.Sprintf("- %s  n/a (needs %s and %s)", what, strings.Join(t.Impls, " or "), t.Base)
	}
	line := fmt.Sprintf("- %s %5.2fx", what, best)
	if len(t.Impls) > 1 {
		line += " (" + bestImpl + ")"
	}
	if t.Max == 0 {
		return line + "  (no target)"
	}
	verdict := "met"
	if best > t.Max {
		verdict = "MISSED"
	}
	return fmt.Sprintf("%s  target <= %.2fx  %s", line, t.Max, verdict)
}
