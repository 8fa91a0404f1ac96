// Command compare runs the same workload on every implementation for several
// rounds, alternating their order, and prints medians and the target ratios.
// The targets are informational: a missed target never changes the exit code.
//
//	go run ./cmd/compare -rounds 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/proc"
	"github.com/kooperkit/kooper/bench/internal/harness"
	"github.com/kooperkit/kooper/bench/internal/impls"
)

func main() {
	objects := flag.Int("objects", 10000, "objects seeded before each run")
	updates := flag.Int("updates", 100000, "updates made round-robin during each run")
	rounds := flag.Int("rounds", 3, "rounds; each runs every implementation once, odd rounds in reverse order")
	only := flag.String("impls", "", "comma-separated implementations to run (default all): "+strings.Join(names(impls.All()), ","))
	disableWatchList := flag.Bool("disable-watch-list", false, "make the source refuse streamed initial lists (LIST+WATCH)")
	warmup := flag.Int("warmup", 1, "uncounted runs of the first implementation before round 1 (page in the heap)")
	timeout := flag.Duration("timeout", 5*time.Minute, "fail a run whose final versions are not all handled in this time")
	flag.Parse()

	selected, err := selectImpls(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	impls.SilenceLogs()

	mode := "watch-list"
	if *disableWatchList {
		mode = "LIST+WATCH"
	}
	fmt.Printf("%d objects, %d updates, %d rounds (+%d warm-up runs), %s source, GOMAXPROCS %d, %s\n\n",
		*objects, *updates, *rounds, *warmup, mode, runtime.GOMAXPROCS(0), runtime.Version())

	fmt.Printf("load average at start: %s\n", proc.LoadAverage())
	cfg := harness.Config{Objects: *objects, Updates: *updates, DisableWatchList: *disableWatchList, Timeout: *timeout}
	results := map[string][]harness.Result{}
	failed := false
	for range *warmup {
		if _, err := harness.Run(context.Background(), selected[0], cfg); err != nil {
			failed = true
			fmt.Printf("warm-up %-16s FAILED: %v\n", selected[0].Name(), err)
		}
	}
	for round := range *rounds {
		order := slices.Clone(selected)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, impl := range order {
			res, err := harness.Run(context.Background(), impl, cfg)
			if err != nil {
				failed = true
				fmt.Printf("round %d %-18s FAILED: %v\n", round+1, impl.Name(), err)
				continue
			}
			results[impl.Name()] = append(results[impl.Name()], res)
			fmt.Printf("round %d %-18s %10.0f events/s %7.1f allocs/event %8s to all handled %7d handler calls\n",
				round+1, res.Impl, res.EventsPerSecond(), res.AllocsPerEvent(), res.Elapsed.Round(time.Millisecond), res.HandlerCalls)
		}
	}

	summaries := map[string]harness.Summary{}
	fmt.Printf("\n%-20s %10s %17s %13s %20s %14s %5s\n", "median", "events/s", "(min-max)", "allocs/event", "time-to-all-handled", "handler calls", "runs")
	for _, impl := range selected {
		s := harness.Summarize(results[impl.Name()])
		if s.Runs == 0 {
			continue
		}
		summaries[impl.Name()] = s
		fmt.Printf("%-20s %10.0f %17s %13.1f %20s %14.0f %5d\n",
			s.Impl, s.EventsPerSec, fmt.Sprintf("(%.0f-%.0f)", s.MinEventsPerSec, s.MaxEventsPerSec), s.AllocsPerEvent, s.Elapsed.Round(time.Millisecond), s.HandlerCalls, s.Runs)
	}

	fmt.Printf("load average at end: %s\n\n", proc.LoadAverage())
	for _, t := range []struct {
		what, a, b string
		target     float64
	}{
		{"Kooper vs floor", impls.NameKooper, impls.NameFloor, 0.8},
		{"Kooper vs controller-runtime", impls.NameKooper, impls.NameControllerRuntime, 1.0},
		// kooper-v2 hands out the cached object; Kooper a copy.
		{"Kooper vs kooper v2", impls.NameKooper, impls.NameKooperV2, 0},
	} {
		a, okA := summaries[t.a]
		b, okB := summaries[t.b]
		if !okA || !okB {
			fmt.Printf("%-30s  n/a (needs %s and %s)\n", t.what, t.a, t.b)
			continue
		}
		ratio := a.EventsPerSec / b.EventsPerSec
		target := "(no target)"
		if t.target > 0 {
			target = fmt.Sprintf("(target >= %.1fx)  PASS", t.target)
			if ratio < t.target {
				target = fmt.Sprintf("(target >= %.1fx)  FAIL", t.target)
			}
		}
		fmt.Printf("%-30s  %.2fx events/s %s   allocs/event %.2fx\n", t.what, ratio, target, a.AllocsPerEvent/b.AllocsPerEvent)
	}
	if failed {
		// A run that failed (hang, missed version, leak) is an error, unlike a missed target.
		os.Exit(1)
	}
}

func names(all []impls.Impl) []string {
	ns := make([]string, len(all))
	for i, impl := range all {
		ns[i] = impl.Name()
	}
	return ns
}

func selectImpls(list string) ([]impls.Impl, error) {
	all := impls.All()
	if list == "" {
		return all, nil
	}
	var selected []impls.Impl
	for name := range strings.SplitSeq(list, ",") {
		i := slices.IndexFunc(all, func(impl impls.Impl) bool { return impl.Name() == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("unknown implementation %q, want one of %s", name, strings.Join(names(all), ","))
		}
		selected = append(selected, all[i])
	}
	return selected, nil
}
