// Command cluster compares Kooper with its peers on a real local control
// plane (hack/envtest: etcd and kube-apiserver built by
// `make controlplane`). It seeds pod-sized pods once, then runs each
// scenario of each implementation in a fresh child process (this binary
// again), over several rounds in alternating order, and prints medians,
// ratios and the informational targets. A failed or hung run exits 1; a
// missed target does not.
//
//	go run ./cmd/cluster -pods 1000 -updates 500 -rounds 2
//	go run ./cmd/cluster -png ../docs/img/bench-cluster.png   # what `make bench-cluster` runs
//	go run ./cmd/cluster -scenarios sharding -rounds 1 -png-sharding ../docs/img/bench-sharding.png
//
// Scenarios: sync (1: time, CPU and memory to fill the cache and handle
// every pod once), churn (2: latency and CPU of updates handled after the
// sync, same process), pair (3: two controllers on pods in one process),
// failover (4: two replicas under leader election, the leader stopped or
// killed: time to the new leader's first and last handling, standby
// memory), fresh (5: latency of pods created while a slow handler works
// through the initial backlog and a resync) and, when asked, sharding (6,
// Kooper only: one controller sharded over active replicas, with the API
// server's sharding and without, then replicas coming and going while a
// writer updates pods; every handling is checked: no key handled twice at
// once, every final version handled). See bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
	"github.com/kooperkit/kooper/bench/internal/cluster/report"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

func main() {
	if child.IsChild(os.Args[1:]) {
		os.Exit(child.Main(os.Args[1:], os.Stdin, os.Stdout))
	}
	o, out, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, o, out, os.Stdout)
	stop()
	os.Exit(code)
}

// outputs are where results go besides stdout.
type outputs struct {
	png, failoverPNG, shardingPNG, json string
	// from is a JSON file of earlier results to report instead of running.
	from string
}

func parseFlags(args []string) (runner.Options, outputs, error) {
	var (
		o         = runner.Options{Progress: os.Stderr}
		out       outputs
		only      string
		scenarios string
	)
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.IntVar(&o.Pods, "pods", 10000, "pods seeded before the rounds")
	fs.IntVar(&o.Updates, "updates", 5000, "updates per churn run, to that many distinct pods")
	fs.IntVar(&o.Rounds, "rounds", 4, "rounds; each runs every implementation once per scenario, odd rounds in reverse order")
	fs.StringVar(&only, "impls", "", "comma-separated implementations (default all): "+strings.Join(names(), ","))
	fs.StringVar(&scenarios, "scenarios", "sync,churn,pair,failover,fresh", "comma-separated scenarios: sync (1), churn (2), pair (3), failover (4), fresh (5), sharding (6, only when asked)")
	fs.IntVar(&o.Warmup, "warmup", 1, "uncounted sync-only runs of the first implementation before round 1 (0 for none)")
	fs.IntVar(&o.ChurnWriters, "churn-writers", pods.DefaultChurnWriters, "updates in flight while churning (more only queue in the API server)")
	fs.DurationVar(&o.HandlerDelay, "handler-delay", 0, "sleep this long in every handling, for every implementation (a handler waiting on I/O; 0: no-op)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "fail a run whose pods are not all handled in this time (sync, then churn)")
	fs.DurationVar(&o.Lease.LeaseDuration, "lease-duration", 15*time.Second, "failover and sharding: the Lease duration")
	fs.DurationVar(&o.Lease.RenewDeadline, "renew-deadline", 10*time.Second, "failover and sharding: the renew deadline")
	fs.DurationVar(&o.Lease.RetryPeriod, "retry-period", 2*time.Second, "failover and sharding: the retry period")
	fs.DurationVar(&o.StandbySettle, "standby-settle", 10*time.Second, "failover: how long the standby stands by before the leader stops (time to fill a warm cache)")
	fs.IntVar(&o.FreshPods, "fresh-pods", 100, "fresh: pods created during the initial backlog, and again during a resync")
	fs.DurationVar(&o.FreshEvery, "fresh-every", 10*time.Millisecond, "fresh: interval between those creations")
	fs.DurationVar(&o.FreshHandle, "fresh-handle", time.Millisecond, "fresh: sleep in every handling")
	fs.DurationVar(&o.FreshResync, "fresh-resync", 30*time.Second, "fresh: resync period (must come after the initial backlog is handled)")
	fs.IntVar(&o.ShardingOffPods, "sharding-off-pods", 2000, "sharding: pods seeded on the second control plane, the one with the ShardedListAndWatch gate off")
	fs.IntVar(&o.ShardingUpdates, "sharding-updates", 1000, "sharding: distinct pods updated once the replicas are balanced, to measure each one's share")
	fs.DurationVar(&o.ShardingHandle, "sharding-handle", time.Millisecond, "sharding: sleep in every handling of the membership run")
	fs.DurationVar(&o.ShardingHold, "sharding-hold", 5*time.Second, "sharding: how long each set of replicas runs once balanced, in the membership run")
	fs.DurationVar(&o.ShardingWriteEvery, "sharding-write-every", 20*time.Millisecond, "sharding: interval between updates of random pods during the membership run")
	fs.StringVar(&out.png, "png", "", "write a PNG chart of the key ratios of scenarios 1-3 to this path")
	fs.StringVar(&out.failoverPNG, "png-failover", "", "write a PNG chart of scenarios 4 and 5 to this path")
	fs.StringVar(&out.shardingPNG, "png-sharding", "", "write a PNG chart of scenario 6's membership run (handlings per second per replica) to this path")
	fs.StringVar(&out.from, "from", "", "report (and chart) the results in this JSON file (see -json) instead of running")
	fs.StringVar(&out.json, "json", "results/cluster.json", "write the raw results as JSON to this path (empty: none)")
	if err := fs.Parse(args); err != nil {
		return o, out, err
	}
	if o.Warmup == 0 {
		o.Warmup = -1 // runner.Options: 0 is the default (1), negative is none
	}
	var err error
	if o.Scenarios, err = runner.ParseScenarios(scenarios); err != nil {
		return o, out, err
	}
	if only != "" {
		for name := range strings.SplitSeq(only, ",") {
			o.Impls = append(o.Impls, strings.TrimSpace(name))
		}
	}
	return o, out, nil
}

// run runs the benchmark, prints the report to w and writes the files; it
// returns the exit code.
func run(ctx context.Context, o runner.Options, out outputs, w io.Writer) int {
	var (
		res runner.Results
		err error
	)
	if out.from != "" {
		res, err = load(out.from)
		out.json = "" // nothing new to write
	} else {
		res, err = runner.Run(ctx, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if len(res.Runs) == 0 {
			return 1
		}
	}
	report.Print(w, res)
	code := 0
	if err != nil || len(res.Failed()) > 0 || res.PodsAtEnd != res.Pods {
		code = 1
	}
	if out.json != "" {
		b, jerr := json.MarshalIndent(res, "", "  ")
		if jerr == nil {
			jerr = os.WriteFile(out.json, append(b, '\n'), 0o644)
		}
		if jerr != nil {
			fmt.Fprintf(os.Stderr, "could not write %s: %v\n", out.json, jerr)
			code = 1
		}
	}
	for _, chart := range []struct {
		path  string
		write func(string, runner.Results) error
	}{{out.png, report.WritePNG}, {out.failoverPNG, report.WriteFailoverPNG}, {out.shardingPNG, report.WriteShardingPNG}} {
		if chart.path == "" {
			continue
		}
		if perr := chart.write(chart.path, res); perr != nil {
			fmt.Fprintln(os.Stderr, perr)
			code = 1
		} else {
			fmt.Fprintf(os.Stderr, "wrote %s\n", chart.path)
		}
	}
	return code
}

// load reads results written with -json.
func load(path string) (runner.Results, error) {
	var res runner.Results
	b, err := os.ReadFile(path)
	if err != nil {
		return res, fmt.Errorf("could not read the results: %w", err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("could not parse the results in %s: %w", path, err)
	}
	return res, nil
}

func names() []string {
	var ns []string
	for _, impl := range impls.All() {
		ns = append(ns, impl.Name())
	}
	return ns
}
