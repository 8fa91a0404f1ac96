package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

func failoverValue(f func(*runner.Failover) float64) func(runner.Record) (float64, bool) {
	return func(r runner.Record) (float64, bool) {
		if r.Failover == nil || r.Failover.Takeover == nil || r.Failover.Standby == nil {
			return 0, false
		}
		return f(r.Failover), true
	}
}

func freshValue(phase int, f func(child.FreshPhase) float64) func(runner.Record) (float64, bool) {
	return func(r runner.Record) (float64, bool) {
		if len(r.Fresh) <= phase {
			return 0, false
		}
		return f(r.Fresh[phase]), true
	}
}

// Scenario 4 and 5 metrics.
var (
	StopFirstHandled = Metric{"first handled s", runner.FailoverStop, "%.2f", failoverValue(func(f *runner.Failover) float64 { return f.FirstHandled.Seconds() })}
	StopAllHandled   = Metric{"all handled s", runner.FailoverStop, "%.2f", failoverValue(func(f *runner.Failover) float64 { return f.AllHandled.Seconds() })}
	KillFirstHandled = Metric{"first handled s", runner.FailoverKill, "%.2f", StopFirstHandled.value}
	KillAllHandled   = Metric{"all handled s", runner.FailoverKill, "%.2f", StopAllHandled.value}
	StandbyHeap      = Metric{"standby heap MiB", runner.FailoverStop, "%.1f", failoverValue(func(f *runner.Failover) float64 { return float64(f.Standby.Heap) / mib })}
	StandbyRSS       = Metric{"standby RSS MiB", runner.FailoverStop, "%.0f", failoverValue(func(f *runner.Failover) float64 { return float64(f.Standby.RSS) / mib })}
	LeaderSync       = Metric{"leader's sync s", runner.FailoverStop, "%.2f", func(r runner.Record) (float64, bool) {
		if r.Failover == nil || r.Failover.Leader == nil {
			return 0, false
		}
		return r.Failover.Leader.Elapsed.Seconds(), true
	}}

	FreshSyncP50      = Metric{"initial p50 ms", child.Fresh, "%.1f", freshValue(0, func(p child.FreshPhase) float64 { return ms(p.P50.Seconds()) })}
	FreshSyncP99      = Metric{"initial p99 ms", child.Fresh, "%.1f", freshValue(0, func(p child.FreshPhase) float64 { return ms(p.P99.Seconds()) })}
	FreshSyncBehind   = Metric{"initial: pods behind", child.Fresh, "%.0f", freshValue(0, func(p child.FreshPhase) float64 { return float64(p.Behind) })}
	FreshBacklog      = Metric{"initial backlog s", child.Fresh, "%.2f", freshValue(0, func(p child.FreshPhase) float64 { return p.Backlog.Seconds() })}
	FreshResyncP50    = Metric{"resync p50 ms", child.Fresh, "%.1f", freshValue(1, func(p child.FreshPhase) float64 { return ms(p.P50.Seconds()) })}
	FreshResyncP99    = Metric{"resync p99 ms", child.Fresh, "%.1f", freshValue(1, func(p child.FreshPhase) float64 { return ms(p.P99.Seconds()) })}
	FreshResyncBehind = Metric{"resync: pods behind", child.Fresh, "%.0f", freshValue(1, func(p child.FreshPhase) float64 { return float64(p.Behind) })}
)

var (
	failoverStopColumns = []Metric{StopFirstHandled, StopAllHandled, StandbyHeap, StandbyRSS, LeaderSync}
	failoverKillColumns = []Metric{KillFirstHandled, KillAllHandled}
	failoverRatios      = []Metric{StopFirstHandled, StopAllHandled, KillFirstHandled, KillAllHandled, StandbyRSS}
	freshColumns        = []Metric{FreshSyncP50, FreshSyncP99, FreshSyncBehind, FreshBacklog, FreshResyncP50, FreshResyncP99, FreshResyncBehind}
	freshRatios         = []Metric{FreshSyncP50, FreshSyncP99, FreshResyncP50, FreshResyncP99, FreshBacklog}
)

// printFailover writes scenario 4's tables, its goals and the requests of
// each takeover.
func printFailover(w io.Writer, res runner.Results) {
	l := res.Lease
	fmt.Fprintf(w, "\n## Scenario 4: failover of %d pods, two replicas, Lease %s/%s/%s, the standby up %s before the leader stops (median (min-max))\n\n",
		res.Pods, l.LeaseDuration, l.RenewDeadline, l.RetryPeriod, res.StandbySettle)
	fmt.Fprintln(w, "Times are from the parent's stop request (or SIGKILL) to the new leader's first handling, and to its")
	fmt.Fprintln(w, "handling of every pod. kooper is a warm standby (the default), kooper-cold sets DisableWarmStandby.")
	fmt.Fprintf(w, "\nLeader stopped cleanly:\n\n")
	statTable(w, res, res.FailoverImpls, failoverStopColumns)
	fmt.Fprintf(w, "\nLeader killed (SIGKILL):\n\n")
	statTable(w, res, res.FailoverImpls, failoverKillColumns)
	for _, base := range []string{impls.NameControllerRuntimeWarmup, impls.NameControllerRuntime, impls.NameKooperV2} {
		fmt.Fprintf(w, "\nScenario 4, ratios of medians vs %s (lower is better; first columns after a clean stop, then after SIGKILL):\n\n", base)
		ratioTable(w, res, res.FailoverImpls, base, failoverRatios)
	}
	fmt.Fprintf(w, "\nGoals (informational):\n\n")
	for _, g := range failoverGoals(res) {
		fmt.Fprintln(w, g)
	}
	fmt.Fprintf(w, "\nRequests of each takeover (after the standby reported, its first completed run per mode):\n\n")
	for _, scenario := range []string{runner.FailoverStop, runner.FailoverKill} {
		for _, impl := range res.FailoverImpls {
			for _, r := range res.Runs {
				if r.Impl == impl && r.Scenario == scenario && r.Err == "" && r.Failover != nil && r.Failover.Takeover != nil {
					fmt.Fprintf(w, "- %s (%s): %s\n", impl, scenario, strings.Join(r.Failover.Takeover.Requests, "; "))
					break
				}
			}
		}
	}
}

// failoverGoals are the goals for the warm standby, as lines.
func failoverGoals(res runner.Results) []string {
	l := res.Lease
	warm := impls.NameKooper
	var lines []string
	line := func(what string, got Stat, limit time.Duration, also string) {
		if got.Runs == 0 {
			lines = append(lines, fmt.Sprintf("- %-58s n/a", what))
			return
		}
		verdict := "met"
		if got.Median > limit.Seconds() {
			verdict = "MISSED"
		}
		lines = append(lines, fmt.Sprintf("- %-58s %5.2fs (max %.2fs)  goal <= %.2fs%s  %s", what, got.Median, got.Max, limit.Seconds(), also, verdict))
	}
	line("kooper (warm) first handled after a clean stop", Summarize(res, warm, StopFirstHandled), time.Second+l.RetryPeriod, " (1 s + retry period)")
	line("kooper (warm) first handled after SIGKILL", Summarize(res, warm, KillFirstHandled), l.LeaseDuration+l.RetryPeriod+time.Second, " (lease + retry + 1 s)")
	target := Target{"warm first handled, clean stop", StopFirstHandled, []string{warm}, impls.NameControllerRuntimeWarmup, 1.0}
	lines = append(lines, target.Line(res))
	return lines
}

// printFresh writes scenario 5's tables and its goal.
func printFresh(w io.Writer, res runner.Results) {
	fmt.Fprintf(w, "\n## Scenario 5: fresh changes first: %d pods handled at %s each by %d workers; %d pods created (one every %s) during the initial backlog, and again during a resync (every %s) (median (min-max))\n\n",
		res.Pods, res.FreshHandle, impls.Workers, res.FreshPods, res.FreshEvery, res.FreshResync)
	fmt.Fprintln(w, "Latency: a created pod's handling minus the time just before its create request. Pods behind: seeded pods")
	fmt.Fprintln(w, "not yet handled (in that pass) when the last created pod was handled; 0 means they waited for the whole backlog.")
	fmt.Fprintln(w)
	statTable(w, res, res.FreshImpls, freshColumns)
	for _, base := range []string{impls.NameControllerRuntimePQ, impls.NameControllerRuntime} {
		fmt.Fprintf(w, "\nScenario 5, ratios of medians vs %s (lower is better):\n\n", base)
		ratioTable(w, res, res.FreshImpls, base, freshRatios)
	}
	fmt.Fprintf(w, "\nGoals (informational):\n\n")
	for _, t := range []Target{
		{"p99 during the initial backlog", FreshSyncP99, []string{impls.NameKooper}, impls.NameControllerRuntimePQ, 1.0},
		{"p99 during a resync", FreshResyncP99, []string{impls.NameKooper}, impls.NameControllerRuntimePQ, 1.0},
	} {
		fmt.Fprintln(w, t.Line(res))
	}
}
