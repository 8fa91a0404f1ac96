package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/ledger"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// ShardHeapGoal is the goal for a sharded replica's heap over the
// unsharded replica's, server-side with 3 replicas.
const ShardHeapGoal = 0.4

// printSharding writes scenario 6's tables, its goals and its checks, one
// set per run.
func printSharding(w io.Writer, res runner.Results) {
	st := res.Sharding
	if st == nil {
		st = &runner.ShardingSettings{}
	}
	l := res.Lease
	fmt.Fprintf(w, "\n## Scenario 6: sharding, Kooper only (no peer shards one controller's objects over active replicas)\n\n")
	fmt.Fprintf(w, "%d slots; Lease %s/%s/%s (duration/renew deadline/retry period%s); %d workers per replica.\n",
		st.Slots, l.LeaseDuration, l.RenewDeadline, l.RetryPeriod, defaultsNote(l), 3 /* the library's default ConcurrentWorkers */)
	fmt.Fprintf(w, "Every replica is a child process; the replicas, the parent and the API server share the machine (GOMAXPROCS %d),\n", res.GOMAXPROCS)
	fmt.Fprintln(w, "so times are figures, not targets. Each run fails on a handling of one key while another is running, in any")
	fmt.Fprintln(w, "replica, and the membership run also on a final resourceVersion never handled.")
	for _, r := range res.Runs {
		switch {
		case r.Split != nil && r.Split.Baseline.Name != "":
			printSplit(w, r)
		case r.Moves != nil && len(r.Moves.Changes) > 0:
			printMoves(w, res, r)
		}
	}
}

// defaultsNote says whether the Lease timings are the library's defaults.
func defaultsNote(l impls.Election) string {
	if l.LeaseDuration == sharding.DefaultLeaseDuration && l.RenewDeadline == sharding.DefaultRenewDeadline && l.RetryPeriod == sharding.DefaultRetryPeriod {
		return ", the library's defaults"
	}
	return fmt.Sprintf(", not the library's defaults %s/%s/%s", sharding.DefaultLeaseDuration, sharding.DefaultRenewDeadline, sharding.DefaultRetryPeriod)
}

func printSplit(w io.Writer, r runner.Record) {
	s := r.Split
	gate := "on: server-side sharding"
	if r.Scenario == runner.ShardingGateOff {
		gate = "off: client-side sharding"
	}
	fmt.Fprintf(w, "\n### Gate %s, %d pods (round %d)\n\n", gate, s.Pods, r.Round)
	if r.Scenario == runner.ShardingGateOff {
		fmt.Fprintln(w, "A second control plane started with ShardedListAndWatch off, seeded with fewer pods than the first (seeding")
		fmt.Fprintln(w, "costs time; what is shown does not depend on the count).")
	}
	fmt.Fprintf(w, "One unsharded replica (controller.Run), then %d sharded replicas of one group (sharding.Runner), each in its own\n", len(s.Replicas))
	fmt.Fprintln(w, "process, all started by one go. Delivered: objects the replica's lists and watches delivered (a sharded one's")
	fmt.Fprintln(w, "include the one pod of its mode detection, a LIST with limit=1); keys: distinct pods it handled until measured")
	fmt.Fprintf(w, "(slots move while replicas join); share: of %d pods updated once each afterwards.\n\n", s.Updates)
	rows := [][]string{{"replica", "mode", "slots", "pods in its slots", "cached", "delivered", "delivered / pods", "heap MiB", "heap / unsharded", "RSS MiB", "keys", "share of updates"}}
	row := func(rep runner.ShardReplica, mode, share string) []string {
		slots := "-"
		if rep.Slots > 0 || mode != "unsharded" {
			slots = fmt.Sprint(rep.Slots)
		}
		return []string{rep.Name, mode, slots, fmt.Sprint(rep.SlotPods), fmt.Sprint(rep.Cached), fmt.Sprint(rep.Delivered),
			fmt.Sprintf("%.2f", float64(rep.Delivered)/float64(max(s.Pods, 1))), fmt.Sprintf("%.1f", float64(rep.Heap)/mib),
			formatRatio(heapRatio(rep, s.Baseline)), fmt.Sprintf("%.0f", float64(rep.RSS)/mib), fmt.Sprint(rep.Keys), share}
	}
	rows = append(rows, row(s.Baseline, "unsharded", "-"))
	for _, rep := range s.Replicas {
		rows = append(rows, row(rep, s.Mode, fmt.Sprintf("%.1f%%", rep.UpdateShare*100)))
	}
	markdown(w, rows)
	if len(s.Replicas) == 0 {
		return
	}
	fmt.Fprintf(w, "\nEvery pod handled %.2f s after the go unsharded, %.2f s sharded (by one replica or another); the slots balanced\n",
		s.BaselineAllHandled.Seconds(), s.AllHandled.Seconds())
	fmt.Fprintf(w, "%.2f s after the go; %d handlings in all, %d overlapping.\n", s.Balanced.Seconds(), s.Handlings, s.Overlaps)

	fmt.Fprintf(w, "\nGoals (informational; an overlap also fails the run):\n\n")
	n := len(s.Replicas)
	worstHeap, lowCached, highCached, lowOwned, highOwned, lowGot, highGot := 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0
	fairOwned, fairGot, cachesAll := true, true, true
	for _, rep := range s.Replicas {
		worstHeap = max(worstHeap, heapRatio(rep, s.Baseline))
		c := float64(rep.Cached) / float64(max(s.Pods, 1))
		lowCached, highCached = min(lowCached, c), max(highCached, c)
		g := float64(rep.Delivered) / float64(max(s.Pods, 1))
		lowGot, highGot = min(lowGot, g), max(highGot, g)
		fairGot = fairGot && ledger.Fair(g, n, runner.FairShare) && ledger.Fair(c, n, runner.FairShare)
		o := float64(rep.SlotPods) / float64(max(s.Pods, 1))
		lowOwned, highOwned = min(lowOwned, o), max(highOwned, o)
		fairOwned = fairOwned && ledger.Fair(o, n, runner.FairShare)
		cachesAll = cachesAll && rep.Cached == s.Pods
	}
	fair := fmt.Sprintf("1/%d (± %.0f %%)", n, runner.FairShare*100)
	if r.Scenario == runner.ShardingGateOn {
		goal(w, fmt.Sprintf("heap per sharded replica <= %.1fx the unsharded replica's", ShardHeapGoal), fmt.Sprintf("at most %s", formatRatio(worstHeap)), worstHeap <= ShardHeapGoal)
		goal(w, "pods each replica received (delivered) and caches: "+fair,
			fmt.Sprintf("%.1f-%.1f %%, %.1f-%.1f %%", lowGot*100, highGot*100, lowCached*100, highCached*100), fairGot)
	} else {
		goal(w, "each replica caches every pod (the API server cannot shard)", fmt.Sprintf("%.1f-%.1f %% cached", lowCached*100, highCached*100), cachesAll)
	}
	goal(w, "keys each replica handles (pods in its slots): "+fair, fmt.Sprintf("%.1f-%.1f %%", lowOwned*100, highOwned*100), fairOwned)
	goal(w, "updated pods handled where their slot is, and only there", fmt.Sprintf("%d of %d elsewhere", s.Misrouted, s.Updates), s.Misrouted == 0)
	goal(w, "no key handled by two replicas at once", fmt.Sprintf("%d overlaps in %d handlings", s.Overlaps, s.Handlings), s.Overlaps == 0)
	fmt.Fprintf(w, "\nRequests until measured:\n\n")
	for _, rep := range []runner.ShardReplica{s.Baseline, s.Replicas[0]} {
		fmt.Fprintf(w, "- %s: %s\n", rep.Name, strings.Join(rep.Requests, "; "))
	}
}

func heapRatio(rep, base runner.ShardReplica) float64 {
	if base.Heap <= 0 {
		return 0
	}
	return float64(rep.Heap) / float64(base.Heap)
}

func goal(w io.Writer, what, got string, ok bool) {
	verdict := "met"
	if !ok {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "- %-66s %-30s %s\n", what, got, verdict)
}

func printMoves(w io.Writer, res runner.Results, r runner.Record) {
	m := r.Moves
	st := res.Sharding
	if st == nil {
		st = &runner.ShardingSettings{}
	}
	fmt.Fprintf(w, "\n### Membership changes, gate on, %d pods (round %d)\n\n", m.Pods, r.Round)
	fmt.Fprintf(w, "A writer updates a random pod every %s; every handling sleeps %s and is recorded (replica, key,\n", st.WriteEvery, st.Handle)
	fmt.Fprintf(w, "resourceVersion, start, end). Each set of replicas runs %s once balanced. Balanced: the live replicas' slots\n", st.Hold)
	fmt.Fprintln(w, "(Runner.Slots, reported on change) each at its quota, every slot owned once, for good until the next change.")
	fmt.Fprintln(w, "Slots acquired: by any replica until the next change (a slot taken back after a lapse counts again).")
	fmt.Fprintln(w)
	rows := [][]string{{"change", "at s", "live replicas", "balanced after s", "slots each", "slots acquired"}}
	for _, c := range m.Changes {
		balanced := "never"
		if c.Balanced >= 0 {
			balanced = fmt.Sprintf("%.2f", c.Balanced.Seconds())
		}
		slots := make([]string, len(c.Slots))
		for i, n := range c.Slots {
			slots[i] = fmt.Sprint(n)
		}
		rows = append(rows, []string{c.What, fmt.Sprintf("%.1f", c.At.Seconds()), strings.Join(c.Replicas, ", "), balanced, strings.Join(slots, ", "), acquired(c.Acquired)})
	}
	markdown(w, rows)
	l := res.Lease
	if k := m.Kill; k != nil {
		fmt.Fprintf(w, "\nSIGKILL of %s (%d slots): its slots balanced over the others %s after, a pod of each of them handled elsewhere\n",
			k.Replica, k.Slots, seconds(k.Owned))
		fmt.Fprintf(w, "%s after (expected: about LeaseDuration %s after its last renewal, which came up to RetryPeriod %s before).\n",
			seconds(k.Handled), l.LeaseDuration, l.RetryPeriod)
	}
	fmt.Fprintf(w, "API server restart: %.1f s from the stop to ready again (RenewDeadline %s).\n", m.Restart.Seconds(), l.RenewDeadline)
	var by []string
	total := 0
	for _, name := range m.Rates.Replicas {
		by = append(by, fmt.Sprintf("%s %d", name, m.Handlings[name]))
		total += m.Handlings[name]
	}
	fmt.Fprintf(w, "Writer: %d updates, %d failed (while the API server restarted). Handlings: %d (%s).\n", m.Writes, m.WriteErrors, total, strings.Join(by, ", "))
	fmt.Fprintf(w, "\nChecks (a failure fails the run):\n\n")
	goal(w, "no key handled by two replicas (or one) at once", fmt.Sprintf("%d overlaps in %d handlings", m.Overlaps, total), m.Overlaps == 0)
	goal(w, "every pod's final resourceVersion handled after the writer stopped",
		fmt.Sprintf("%d lost, last %s after", m.Lost, seconds(m.FinalHandled)), m.Lost == 0)
	for _, p := range m.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
}

// acquired writes the slots acquired in all, then by replica.
func acquired(by map[string]int) string {
	total := 0
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(by)) {
		total += by[name]
		parts = append(parts, fmt.Sprintf("%s %d", name, by[name]))
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

func seconds(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
