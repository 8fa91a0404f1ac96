// Command fresh measures how long a change waits behind an initial list:
// each implementation starts on a source of -objects objects, handles each
// in -handle (3 workers), and while that backlog is being handled
// -fresh new objects are created, one every -every. It prints, per
// implementation, the p50 and p99 time from a new object's creation to its
// handling, and how long the whole backlog took, with ratios against
// Kooper measured in the same run, and writes the raw figures as JSON.
//
//	cd bench && go run ./cmd/fresh
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/bench/internal/impls"
	"github.com/kooperkit/kooper/bench/internal/memsource"
	"github.com/kooperkit/kooper/bench/internal/workload"
)

func main() {
	objects := flag.Int("objects", 10000, "objects in the source before the start: the backlog")
	fresh := flag.Int("fresh", 100, "objects created while the backlog is handled")
	every := flag.Duration("every", 10*time.Millisecond, "time between two fresh objects")
	handle := flag.Duration("handle", time.Millisecond, "time each handling takes")
	rounds := flag.Int("rounds", 3, "rounds; each runs every implementation once")
	out := flag.String("json", "results/fresh.json", "where to write the raw figures (empty: nowhere)")
	chart := flag.String("png", "", "where to write a chart of the medians (empty: nowhere)")
	from := flag.String("from", "", "read the figures from this JSON file (written by -json) instead of running: redraw the report and chart")
	flag.Parse()
	impls.SilenceLogs()

	all := []impls.Impl{impls.Kooper{}, impls.ControllerRuntime{PriorityQueue: true}, impls.ControllerRuntime{}, impls.KooperV2{}, impls.Floor{}}
	var results []result
	if *from != "" {
		data, err := os.ReadFile(*from)
		if err == nil {
			err = json.Unmarshal(data, &results)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		*rounds, *out = 0, ""
	}
	for round := range *rounds {
		for _, impl := range all {
			r, err := run(impl, *objects, *fresh, *every, *handle)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", impl.Name(), err)
				os.Exit(1)
			}
			r.Round = round + 1
			results = append(results, r)
			fmt.Fprintf(os.Stderr, "round %d %-22s p50 %8s p99 %8s backlog %s\n", r.Round, r.Impl,
				ms(r.P50), ms(r.P99), r.Backlog.Round(time.Millisecond))
		}
	}
	bars := report(results, all)
	if *chart != "" {
		if err := writePNG(*chart, bars); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *out != "" {
		data, err := json.MarshalIndent(results, "", "  ")
		if err == nil {
			err = os.MkdirAll(filepath.Dir(*out), 0o755)
		}
		if err == nil {
			err = os.WriteFile(*out, data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// result is one implementation's run.
type result struct {
	Impl  string
	Round int
	// Waits are the creation-to-handling times of the fresh objects.
	Waits    []time.Duration
	P50, P99 time.Duration
	// Backlog is the time from the start to every object handled.
	Backlog time.Duration
}

func run(impl impls.Impl, objects, fresh int, every, handleTime time.Duration) (_ result, err error) {
	src := memsource.New(false)
	if _, err := workload.Seed(src, objects); err != nil {
		return result{}, err
	}
	var (
		mu      sync.Mutex
		created = map[string]time.Time{}
		waits   []time.Duration
		handled atomic.Int64
		seen    sync.Map
	)
	all := make(chan struct{})
	handle := func(obj runtime.Object) {
		time.Sleep(handleTime)
		cm := obj.(*corev1.ConfigMap)
		if _, dup := seen.LoadOrStore(cm.Name, true); dup {
			return
		}
		mu.Lock()
		if at, ok := created[cm.Name]; ok {
			waits = append(waits, time.Since(at))
		}
		mu.Unlock()
		if handled.Add(1) == int64(objects+fresh) {
			close(all)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- impl.Run(ctx, src, handle) }()
	defer func() {
		cancel()
		if runErr := <-done; runErr != nil && err == nil {
			err = fmt.Errorf("run: %w", runErr)
		}
	}()

	// The fresh objects arrive while the backlog is handled.
	for handled.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := range fresh {
		obj := workload.Object(objects + i)
		obj.Name = fmt.Sprintf("fresh-%04d", i)
		mu.Lock()
		created[obj.Name] = time.Now()
		mu.Unlock()
		if _, err := src.Add(obj); err != nil {
			return result{}, err
		}
		time.Sleep(every)
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		return result{}, errors.New("not every object was handled in 5 minutes")
	}
	r := result{Impl: impl.Name(), Backlog: time.Since(began)}
	mu.Lock()
	r.Waits = slices.Clone(waits)
	mu.Unlock()
	slices.Sort(r.Waits)
	r.P50, r.P99 = percentile(r.Waits, 50), percentile(r.Waits, 99)
	return r, nil
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

// report prints each implementation's median over the rounds of p50, p99
// and backlog, and their ratios to Kooper's, and returns the medians.
func report(results []result, all []impls.Impl) []bar {
	median := func(name string, f func(result) time.Duration) time.Duration {
		var v []time.Duration
		for _, r := range results {
			if r.Impl == name {
				v = append(v, f(r))
			}
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	p50 := func(r result) time.Duration { return r.P50 }
	p99 := func(r result) time.Duration { return r.P99 }
	backlog := func(r result) time.Duration { return r.Backlog }
	k50, k99 := median(impls.NameKooper, p50), median(impls.NameKooper, p99)
	var (
		b    strings.Builder
		bars []bar
	)
	fmt.Fprintf(&b, "%-22s %10s %10s %10s %14s %14s\n", "implementation", "p50", "p99", "backlog", "p50 / kooper", "p99 / kooper")
	for _, impl := range all {
		n := impl.Name()
		m50, m99 := median(n, p50), median(n, p99)
		fmt.Fprintf(&b, "%-22s %10s %10s %10s %13.1fx %13.1fx\n", n, ms(m50), ms(m99),
			median(n, backlog).Round(time.Millisecond), float64(m50)/float64(k50), float64(m99)/float64(k99))
		bars = append(bars, bar{name: n, p50: float64(m50) / 1e6, p99: float64(m99) / 1e6})
	}
	fmt.Print(b.String())
	return bars
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
