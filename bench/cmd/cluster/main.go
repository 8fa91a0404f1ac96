// Command cluster compares Kooper with its peers on a real local control
// plane (kooper/devcluster: etcd and kube-apiserver built by
// `make controlplane`). It seeds pod-sized pods once, then runs each
// scenario of each implementation in a fresh child process (this binary
// again), over several rounds in alternating order, and prints medians,
// ratios and the informational targets. A failed or hung run exits 1; a
// missed target does not.
//
//	go run ./cmd/cluster -pods 1000 -updates 500 -rounds 2
//	go run ./cmd/cluster -png ../docs/img/bench-cluster.png   # what `make bench-cluster` runs
//
// Scenarios: sync (1: time, CPU and memory to fill the cache and handle
// every pod once), churn (2: latency and CPU of updates handled after the
// sync, same process) and pair (3: two controllers on pods in one
// process). See bench/README.md.
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
	png, json string
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
	fs.StringVar(&scenarios, "scenarios", "sync,churn,pair", "comma-separated scenarios: sync (1), churn (2), pair (3)")
	fs.IntVar(&o.Warmup, "warmup", 1, "uncounted sync-only runs of the first implementation before round 1 (0 for none)")
	fs.IntVar(&o.ChurnWriters, "churn-writers", pods.DefaultChurnWriters, "updates in flight while churning (more only queue in the API server)")
	fs.DurationVar(&o.HandlerDelay, "handler-delay", 0, "sleep this long in every handling, for every implementation (a handler waiting on I/O; 0: no-op)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "fail a run whose pods are not all handled in this time (sync, then churn)")
	fs.StringVar(&out.png, "png", "", "write a PNG chart of the key ratios to this path")
	fs.StringVar(&out.json, "json", "", "write the raw results as JSON to this path")
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
	res, err := runner.Run(ctx, o)
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
	if out.png != "" {
		if perr := report.WritePNG(out.png, res); perr != nil {
			fmt.Fprintln(os.Stderr, perr)
			code = 1
		} else {
			fmt.Fprintf(os.Stderr, "wrote %s\n", out.png)
		}
	}
	return code
}

func names() []string {
	var ns []string
	for _, impl := range impls.All() {
		ns = append(ns, impl.Name())
	}
	return ns
}
