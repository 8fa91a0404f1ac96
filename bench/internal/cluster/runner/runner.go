// Package runner is the benchmark's parent process. It starts a local
// control plane (hack/envtest: etcd and kube-apiserver), seeds the
// pods once, then runs every scenario of every implementation in a fresh
// child process (package child) per round, alternating the order (odd
// rounds reversed), and churns the pods when a child says it is ready.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
	"github.com/kooperkit/kooper/bench/internal/cluster/proc"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// controllerShutdownTimeout is the library's default Config.ShutdownTimeout,
// which the sharded implementation keeps.
const controllerShutdownTimeout = 2 * time.Second

// Namespace holds the seeded pods.
const Namespace = "bench"

// SingleImpls run scenarios 1 and 2 (one controller), in report order.
var SingleImpls = []string{
	impls.NameKooper, impls.NameKooperMetadata, impls.NameKooperV2, impls.NameControllerRuntime, impls.NameFloor,
}

// PairImpls run scenario 3 (two controllers on pods), in report order.
var PairImpls = []string{
	impls.NameKooper, impls.NameKooperV2, impls.NameControllerRuntime, impls.NameFloor,
}

// FailoverImpls run scenario 4 (failover), in report order. "kooper" is
// Kooper's default there: a warm standby.
var FailoverImpls = []string{
	impls.NameKooperCold, impls.NameKooper, impls.NameKooperV2, impls.NameControllerRuntime, impls.NameControllerRuntimeWarmup,
}

// FreshImpls run scenario 5 (fresh changes first), in report order.
var FreshImpls = []string{
	impls.NameKooper, impls.NameControllerRuntimePQ, impls.NameControllerRuntime, impls.NameKooperV2,
}

// ShardingImpls run scenario 6 (sharding): Kooper only, no peer shards.
var ShardingImpls = []string{impls.NameKooper}

// Scenarios selects what runs.
type Scenarios struct {
	// Sync is scenario 1, the initial sync of the seeded pods.
	Sync bool `json:"sync"`
	// Churn is scenario 2, updates handled after the sync (same child).
	Churn bool `json:"churn"`
	// Pair is scenario 3, two controllers on pods in one process.
	Pair bool `json:"pair"`
	// Failover is scenario 4: two replicas under leader election, the
	// leader stopped cleanly and, in another run, killed.
	Failover bool `json:"failover"`
	// Fresh is scenario 5: pods created while a slow handler works through
	// the initial backlog and through a resync.
	Fresh bool `json:"fresh"`
	// Sharding is scenario 6: one Kooper controller sharded over active
	// replicas, with the API server's sharding and without, and as
	// replicas come and go. Not in the zero value's set: it runs when
	// asked.
	Sharding bool `json:"sharding,omitempty"`
}

// ParseScenarios parses a comma-separated list of sync, churn, pair,
// failover, fresh and sharding (or 1 to 6).
func ParseScenarios(list string) (Scenarios, error) {
	var s Scenarios
	for name := range strings.SplitSeq(list, ",") {
		switch strings.TrimSpace(name) {
		case "sync", "1":
			s.Sync = true
		case "churn", "2":
			s.Churn = true
		case "pair", "3":
			s.Pair = true
		case "failover", "4":
			s.Failover = true
		case "fresh", "5":
			s.Fresh = true
		case "sharding", "6":
			s.Sharding = true
		default:
			return Scenarios{}, fmt.Errorf("unknown scenario %q, want sync, churn, pair, failover, fresh or sharding (1 to 6)", name)
		}
	}
	return s, nil
}

// Options configures a benchmark.
type Options struct {
	// Pods seeded before the rounds. Default 10,000.
	Pods int
	// Updates made in each churn run, to that many distinct pods. Default
	// 5,000; at most Pods.
	Updates int
	// Rounds; each runs every selected implementation once per scenario.
	// Default 4.
	Rounds int
	// Impls names the implementations to run; empty means all that exist.
	Impls []string
	// Scenarios selects what runs. The zero value runs the first five.
	Scenarios Scenarios
	// Warmup is how many uncounted sync-only runs of the first
	// implementation precede round 1, so that no implementation meets an API
	// server still busy with the seeding. Default 1; negative for none.
	Warmup int
	// Settle is the pause before each run, so that the API server is done
	// with the previous run's writes and watch. Default 1s; negative for
	// none.
	Settle time.Duration
	// Timeout bounds each child's sync and then its churn. Default 5 minutes.
	Timeout time.Duration
	// StopTimeout bounds how long a child's Run may take to return once
	// asked to stop. Default 20 seconds.
	StopTimeout time.Duration
	// ChurnWriters is how many updates the parent keeps in flight while
	// churning. Default pods.DefaultChurnWriters.
	ChurnWriters int
	// HandlerDelay is slept in every handling of every implementation: a
	// handler waiting on I/O. Default 0, the no-op handler.
	HandlerDelay time.Duration
	// Lease has the Lease timings of the failover and sharding scenarios
	// (the namespace and name are set per run). Default 15s, 10s, 2s, the
	// defaults of client-go's leader election and of package sharding.
	Lease impls.Election
	// StandbySettle is how long a standby stands by before the leader is
	// stopped: long enough to fill a warm cache. Default 10s.
	StandbySettle time.Duration
	// FreshPods is how many pods the fresh scenario creates during the
	// initial backlog, and again during a resync. Default 100.
	FreshPods int
	// FreshEvery is the interval between those creations. Default 10ms.
	FreshEvery time.Duration
	// FreshHandle is slept in every handling in the fresh scenario.
	// Default 1ms.
	FreshHandle time.Duration
	// FreshResync is the resync period in the fresh scenario: it must
	// come after the initial backlog was handled. Default 30s.
	FreshResync time.Duration
	// ShardingOffPods is how many pods the sharding scenario seeds on its
	// second control plane, started with the ShardedListAndWatch feature
	// gate off. Default 2,000.
	ShardingOffPods int
	// ShardingUpdates is how many distinct pods the sharding scenario
	// updates once each, once the sharded replicas are balanced, to
	// measure each one's share of the keys. Default 1,000.
	ShardingUpdates int
	// ShardingHandle is slept in every handling of the membership run, so
	// that two handlings of one key at once would show. Default 1ms.
	ShardingHandle time.Duration
	// ShardingHold is how long the membership run keeps each set of
	// replicas once their slots are balanced. Default 5s.
	ShardingHold time.Duration
	// ShardingWriteEvery is the interval between the membership run's
	// updates of random pods. Default 20ms.
	ShardingWriteEvery time.Duration
	// Exe is the binary children run, with a child command line (its main
	// must hand that to child.Main). Default: this process's executable.
	Exe string
	// Progress receives progress lines (seeding, one per run). Default
	// io.Discard.
	Progress io.Writer
}

func (o *Options) defaults() error {
	if o.Pods <= 0 {
		o.Pods = 10000
	}
	if o.Updates < 0 {
		o.Updates = 0
	}
	if o.Scenarios == (Scenarios{}) {
		o.Scenarios = Scenarios{Sync: true, Churn: true, Pair: true, Failover: true, Fresh: true}
	}
	if o.Updates == 0 && o.Scenarios.Churn {
		o.Updates = 5000
	}
	if o.Rounds <= 0 {
		o.Rounds = 4
	}
	if !o.Scenarios.Churn {
		o.Updates = 0
	}
	if o.Updates > o.Pods {
		return fmt.Errorf("%d updates to distinct pods need at least as many pods, not %d", o.Updates, o.Pods)
	}
	if o.Lease.LeaseDuration <= 0 {
		o.Lease.LeaseDuration = 15 * time.Second
	}
	if o.Lease.RenewDeadline <= 0 {
		o.Lease.RenewDeadline = 10 * time.Second
	}
	if o.Lease.RetryPeriod <= 0 {
		o.Lease.RetryPeriod = 2 * time.Second
	}
	if o.StandbySettle <= 0 {
		o.StandbySettle = 10 * time.Second
	}
	if o.FreshPods <= 0 {
		o.FreshPods = 100
	}
	if o.FreshEvery <= 0 {
		o.FreshEvery = 10 * time.Millisecond
	}
	if o.FreshHandle <= 0 {
		o.FreshHandle = time.Millisecond
	}
	if o.FreshResync <= 0 {
		o.FreshResync = 30 * time.Second
	}
	if budget := o.Lease.LeaseDuration - o.Lease.RenewDeadline; o.Scenarios.Sharding && budget <= controllerShutdownTimeout {
		return fmt.Errorf("sharding needs a lease duration over the renew deadline by more than the controller's shutdown timeout %s, not %s", controllerShutdownTimeout, budget)
	}
	if o.ShardingOffPods <= 0 {
		o.ShardingOffPods = 2000
	}
	if o.ShardingUpdates <= 0 {
		o.ShardingUpdates = 1000
	}
	if o.ShardingHandle <= 0 {
		o.ShardingHandle = time.Millisecond
	}
	if o.ShardingHold <= 0 {
		o.ShardingHold = 5 * time.Second
	}
	if o.ShardingWriteEvery <= 0 {
		o.ShardingWriteEvery = 20 * time.Millisecond
	}
	if !o.Scenarios.Churn {
		o.Updates = 0
	}
	if o.Warmup == 0 {
		o.Warmup = 1
	}
	if o.Settle == 0 {
		o.Settle = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 20 * time.Second
	}
	if o.ChurnWriters <= 0 {
		o.ChurnWriters = pods.DefaultChurnWriters
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("could not find this program's executable: %w", err)
		}
		o.Exe = exe
	}
	for _, name := range o.Impls {
		if _, err := impls.Get(name); err != nil {
			return err
		}
	}
	return nil
}

// Results are everything a benchmark measured.
type Results struct {
	Pods    int `json:"pods"`
	Updates int `json:"updates"`
	// ChurnWriters is how many updates were in flight while churning.
	ChurnWriters int `json:"churnWriters"`
	// HandlerDelay is what every handling slept (Options.HandlerDelay).
	HandlerDelay time.Duration `json:"handlerDelay"`
	Rounds       int           `json:"rounds"`
	Scenarios    Scenarios     `json:"scenarios"`
	// SingleImpls, PairImpls, FailoverImpls and FreshImpls ran scenarios
	// 1-2, 3, 4 and 5, in report order.
	SingleImpls   []string `json:"singleImpls"`
	PairImpls     []string `json:"pairImpls"`
	FailoverImpls []string `json:"failoverImpls,omitempty"`
	FreshImpls    []string `json:"freshImpls,omitempty"`
	// ShardingImpls ran scenario 6 (Kooper only).
	ShardingImpls []string `json:"shardingImpls,omitempty"`
	// Lease and StandbySettle are scenario 4's settings (Options).
	Lease         impls.Election `json:"lease"`
	StandbySettle time.Duration  `json:"standbySettle"`
	// FreshPods, FreshEvery, FreshHandle and FreshResync are scenario 5's
	// settings (Options).
	FreshPods   int           `json:"freshPods"`
	FreshEvery  time.Duration `json:"freshEvery"`
	FreshHandle time.Duration `json:"freshHandle"`
	FreshResync time.Duration `json:"freshResync"`
	// Sharding has scenario 6's settings (its Lease timings are Lease).
	Sharding *ShardingSettings `json:"sharding,omitempty"`
	// PodSize is a seeded pod's average size on the wire.
	PodSize pods.Sizes `json:"podSize"`
	// PodsAtEnd counts the namespace's pods after the last run: nothing
	// deleted them.
	PodsAtEnd  int    `json:"podsAtEnd"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"goVersion"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5, 15 minute averages.
	LoadStart string        `json:"loadStart"`
	LoadEnd   string        `json:"loadEnd"`
	Seeding   time.Duration `json:"seeding"`
	Runs      []Record      `json:"runs"`
}

// Failed returns the runs that failed.
func (r Results) Failed() []Record {
	var failed []Record
	for _, run := range r.Runs {
		if run.Err != "" {
			failed = append(failed, run)
		}
	}
	return failed
}

// Record is one child process: one implementation, one scenario, one round.
type Record struct {
	Impl string `json:"impl"`
	// Scenario is child.Single, child.Pair, FailoverStop, FailoverKill,
	// child.Fresh, ShardingGateOn, ShardingGateOff or ShardingMoves.
	Scenario string `json:"scenario"`
	Round    int    `json:"round"` // from 1; 0 for a warm-up
	// Sync, Churn and Stop are what the child reported (in a failover, the
	// standby's Stop).
	Sync  *child.Sync  `json:"sync,omitempty"`
	Churn *child.Churn `json:"churn,omitempty"`
	Stop  *child.Stop  `json:"stop,omitempty"`
	// Failover is a failover run's measurements.
	Failover *Failover `json:"failover,omitempty"`
	// Fresh are a fresh run's two phases: created during the initial
	// backlog, then during a resync.
	Fresh []child.FreshPhase `json:"fresh,omitempty"`
	// Split is a ShardingGateOn or ShardingGateOff run's measurements;
	// Moves a ShardingMoves run's.
	Split *ShardSplit `json:"split,omitempty"`
	Moves *ShardMoves `json:"moves,omitempty"`
	// ChurnSend is how long the parent took to send the updates.
	ChurnSend time.Duration `json:"churnSend,omitempty"`
	// TotalCPU is the child's user+system CPU over its whole life (in a
	// failover, the standby's; in a sharding run, every child's).
	TotalCPU time.Duration `json:"totalCPU"`
	// Err says why the run failed; empty for a run that completed.
	Err string `json:"err,omitempty"`
}

// Run starts a control plane, seeds it, runs the rounds and stops it. An
// error means the benchmark could not run at all; failed runs are in
// Results.Failed.
func Run(ctx context.Context, o Options) (Results, error) {
	if err := o.defaults(); err != nil {
		return Results{}, err
	}
	res := Results{
		Pods: o.Pods, Updates: o.Updates, ChurnWriters: o.ChurnWriters, HandlerDelay: o.HandlerDelay, Rounds: o.Rounds, Scenarios: o.Scenarios,
		GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		Lease: o.Lease, StandbySettle: o.StandbySettle,
		FreshPods: o.FreshPods, FreshEvery: o.FreshEvery, FreshHandle: o.FreshHandle, FreshResync: o.FreshResync,
	}
	if o.Scenarios.Sync || o.Scenarios.Churn {
		res.SingleImpls = selectImpls(SingleImpls, o.Impls)
	}
	if o.Scenarios.Pair {
		res.PairImpls = selectImpls(PairImpls, o.Impls)
	}
	if o.Scenarios.Failover {
		res.FailoverImpls = selectImpls(FailoverImpls, o.Impls)
	}
	if o.Scenarios.Fresh {
		res.FreshImpls = selectImpls(FreshImpls, o.Impls)
	}
	if o.Scenarios.Sharding {
		res.ShardingImpls = selectImpls(ShardingImpls, o.Impls)
		res.Sharding = &ShardingSettings{Slots: sharding.DefaultSlots, OffPods: o.ShardingOffPods, Updates: min(o.ShardingUpdates, o.Pods),
			Handle: o.ShardingHandle, Hold: o.ShardingHold, WriteEvery: o.ShardingWriteEvery}
	}
	all := slices.Concat(res.SingleImpls, res.PairImpls, res.FailoverImpls, res.FreshImpls, res.ShardingImpls)
	if len(all) == 0 {
		return Results{}, errors.New("no implementation runs the selected scenarios")
	}

	cluster, err := envtest.Start(ctx, envtest.Options{Progress: o.Progress})
	if err != nil {
		return Results{}, fmt.Errorf("could not start the control plane: %w", err)
	}
	defer func() { _ = cluster.Stop() }()
	client, err := pods.WriteClient(cluster.Config())
	if err != nil {
		return Results{}, err
	}

	began := time.Now()
	if err := pods.Seed(ctx, client, Namespace, o.Pods, o.Progress); err != nil {
		return Results{}, err
	}
	res.Seeding = time.Since(began)
	if n, err := pods.Count(ctx, client, Namespace); err != nil {
		return Results{}, err
	} else if n != o.Pods {
		return Results{}, fmt.Errorf("seeded %d pods but the namespace holds %d", o.Pods, n)
	}
	if res.PodSize, err = pods.MeasureSizes(ctx, client, Namespace, min(o.Pods, 100)); err != nil {
		return Results{}, err
	}
	fmt.Fprintf(o.Progress, "seeded %d pods in %s: %.0f bytes as JSON, %.0f as protobuf on average\n",
		o.Pods, res.Seeding.Round(time.Millisecond), res.PodSize.JSON, res.PodSize.Protobuf)

	if len(res.FreshImpls) > 0 {
		for _, ns := range FreshNamespaces {
			if err := pods.EnsureNamespace(ctx, client, ns); err != nil {
				return Results{}, err
			}
		}
	}

	r := &runner{o: o, client: client, kubeconfig: cluster.KubeconfigPath(),
		main: &plane{cluster: cluster, client: client, kubeconfig: cluster.KubeconfigPath(), pods: o.Pods}}
	defer func() {
		if r.off != nil {
			_ = r.off.cluster.Stop()
		}
	}()
	first := all[0]
	for range max(o.Warmup, 0) {
		run := r.run(ctx, first, child.Single, 0, 0)
		fmt.Fprintln(o.Progress, describe(run, o.Rounds))
		if run.Err != "" {
			res.Runs = append(res.Runs, run) // failed: listed, never counted
		}
	}
	res.LoadStart = proc.LoadAverage()
	for round := range o.Rounds {
		for _, s := range []struct {
			scenario string
			impls    []string
		}{
			{child.Single, res.SingleImpls}, {child.Pair, res.PairImpls},
			{FailoverStop, res.FailoverImpls}, {FailoverKill, res.FailoverImpls}, {child.Fresh, res.FreshImpls},
			{ShardingGateOn, res.ShardingImpls}, {ShardingGateOff, res.ShardingImpls}, {ShardingMoves, res.ShardingImpls},
		} {
			order := slices.Clone(s.impls)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, impl := range order {
				if ctx.Err() != nil {
					return res, fmt.Errorf("interrupted: %w", context.Cause(ctx))
				}
				var run Record
				switch s.scenario {
				case FailoverStop, FailoverKill:
					run = r.failover(ctx, impl, s.scenario, round+1)
				case child.Fresh:
					run = r.fresh(ctx, impl, round+1)
				case ShardingGateOn, ShardingGateOff, ShardingMoves:
					run = r.sharding(ctx, s.scenario, round+1)
				default:
					run = r.run(ctx, impl, s.scenario, round+1, o.Updates)
				}
				fmt.Fprintln(o.Progress, describe(run, o.Rounds))
				res.Runs = append(res.Runs, run)
			}
		}
	}
	res.LoadEnd = proc.LoadAverage()
	if res.PodsAtEnd, err = pods.Count(ctx, client, Namespace); err != nil {
		return res, err
	}
	return res, nil
}

// selectImpls returns the names of set that exist and were asked for
// (every existing one when only is empty), in set's order.
func selectImpls(set, only []string) []string {
	var names []string
	for _, name := range set {
		if _, err := impls.Get(name); err != nil {
			continue // not built yet
		}
		if len(only) == 0 || slices.Contains(only, name) {
			names = append(names, name)
		}
	}
	return names
}

type runner struct {
	o          Options
	client     kubernetes.Interface
	kubeconfig string
	runs       int
	// main is the control plane (gate on); off the one with the
	// ShardedListAndWatch gate off, once the sharding scenario started it.
	main, off *plane
}

// describe is a run's progress line.
func describe(run Record, rounds int) string {
	var b strings.Builder
	if run.Round == 0 {
		fmt.Fprintf(&b, "warm-up   %-13s %-25s", run.Scenario, run.Impl)
	} else {
		fmt.Fprintf(&b, "round %d/%d %-13s %-25s", run.Round, rounds, run.Scenario, run.Impl)
	}
	if s := run.Sync; s != nil {
		fmt.Fprintf(&b, " sync %7.3fs cpu %6.2fs heap %6.0f B/pod rss %4.0f MB peak %4.0f MB",
			s.Elapsed.Seconds(), s.CPU.Seconds(), s.HeapPerPod, mb(s.RSS), mb(s.PeakRSS))
	}
	if c := run.Churn; c != nil {
		fmt.Fprintf(&b, " | churn p50 %5.1fms p99 %6.1fms cpu %5.2fs (sent in %.2fs)",
			ms(c.P50), ms(c.P99), c.CPU.Seconds(), run.ChurnSend.Seconds())
	}
	if f := run.Failover; f != nil {
		if f.Standby != nil {
			fmt.Fprintf(&b, " standby heap %4.0f MB rss %4.0f MB", float64(f.Standby.Heap)/(1<<20), mb(f.Standby.RSS))
		}
		if f.Takeover != nil {
			fmt.Fprintf(&b, " | first handled %6.2fs all %6.2fs after the %s", f.FirstHandled.Seconds(), f.AllHandled.Seconds(), f.Mode)
		}
	}
	for _, p := range run.Fresh {
		fmt.Fprintf(&b, " | %s: p50 %7.1fms p99 %7.1fms (%d behind)", p.Phase, ms(p.P50), ms(p.P99), p.Behind)
	}
	if s := run.Split; s != nil && len(s.Replicas) > 0 {
		fmt.Fprintf(&b, " %s: unsharded all handled %.2fs heap %.0f MB; %d replicas all handled %.2fs heap",
			s.Mode, s.BaselineAllHandled.Seconds(), float64(s.Baseline.Heap)/(1<<20), len(s.Replicas), s.AllHandled.Seconds())
		for _, rep := range s.Replicas {
			fmt.Fprintf(&b, " %.0f", float64(rep.Heap)/(1<<20))
		}
		fmt.Fprintf(&b, " MB, %d overlaps", s.Overlaps)
	}
	if m := run.Moves; m != nil && len(m.Changes) > 0 {
		fmt.Fprintf(&b, " %d changes, balanced after", len(m.Changes))
		for _, c := range m.Changes {
			fmt.Fprintf(&b, " %.2fs", c.Balanced.Seconds())
		}
		fmt.Fprintf(&b, "; %d overlaps, %d lost", m.Overlaps, m.Lost)
	}
	if s := run.Stop; s != nil {
		fmt.Fprintf(&b, " | stop %.2fs", s.Elapsed.Seconds())
	}
	if run.Err != "" {
		fmt.Fprintf(&b, " FAILED: %s", run.Err)
	}
	return b.String()
}

func mb(b uint64) float64        { return float64(b) / (1 << 20) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
