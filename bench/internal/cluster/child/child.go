// Package child is the benchmark's child process: one implementation and
// one scenario in a fresh process, measured from inside, reporting JSON
// lines on stdout. The parent (package runner) starts it by running its own
// binary again with Args.CommandLine; the binary's main (or TestMain) hands
// such a command line to Main.
//
// The conversation, one JSON Message per line on stdout:
//
//  1. Synced, once every controller handled every seeded pod. With
//     Updates > 0 it also means "ready": the parent then churns.
//  2. Churned, once the controller handled every churned pod carrying the
//     run's token (only with Updates > 0).
//  3. Stopped, once the parent closed stdin (or sent SIGTERM) and the
//     implementation's Run returned, within StopTimeout.
//
// A failure is an Error message and exit status 1.
package child

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/proc"
	"github.com/kooperkit/kooper/bench/internal/cluster/track"
	memimpls "github.com/kooperkit/kooper/bench/internal/impls"
)

// Flag is the first argument of a child's command line.
const Flag = "-child"

// Scenarios a child runs.
const (
	// Single is one controller: the initial sync, then churn if Updates > 0.
	Single = "single"
	// Pair is two controllers in one process: the initial sync.
	Pair = "pair"
	// Failover is one replica of a controller under leader election, in
	// Role: see failover.go.
	Failover = "failover"
	// Fresh is one controller handling slowly while the parent creates new
	// pods during its initial backlog and during a resync: see fresh.go.
	Fresh = "fresh"
	// Sharding is one replica of a sharded Kooper controller, or the
	// unsharded baseline: see sharding.go.
	Sharding = "sharding"
)

// Roles of a Failover child.
const (
	// RoleLeader starts alone, leads and handles every pod.
	RoleLeader = "leader"
	// RoleStandby starts while the leader leads and takes over when the
	// parent stops or kills it.
	RoleStandby = "standby"
)

// ClientQPS and ClientBurst rate-limit every implementation's client, as
// controller-runtime's GetConfig sets them when a kubeconfig leaves them
// unset. Filling a cache is one request, so they only pace discovery.
const (
	ClientQPS   = 20
	ClientBurst = 30
)

// Args are one child run's parameters.
type Args struct {
	// Impl names the implementation (impls.Get).
	Impl string
	// Scenario is Single or Pair.
	Scenario string
	// Kubeconfig is the admin kubeconfig of the cluster.
	Kubeconfig string
	// Pods is how many pods were seeded; every one must be handled.
	Pods int
	// Updates is how many pods the parent churns after Synced (Single only).
	Updates int
	// Token is the run's churn token.
	Token string
	// HandlerDelay is slept in every handling after recording it: a
	// handler that waits on I/O (0: the no-op handler).
	HandlerDelay time.Duration
	// Timeout bounds the wait for Synced and then for Churned.
	Timeout time.Duration
	// StopTimeout bounds the wait for Run to return once asked to stop.
	StopTimeout time.Duration

	// Role is RoleLeader or RoleStandby (Failover only).
	Role string
	// Election is the Lease the replicas compete for (Failover only).
	Election impls.Election
	// StandbySettle is how long a standby waits after it started before it
	// reports its memory (Failover only): long enough to fill a warm cache.
	StandbySettle time.Duration

	// Resync is the controller's resync period (Fresh only).
	Resync time.Duration
	// FreshPods is how many pods the parent creates in each of
	// FreshNamespaces (Fresh only).
	FreshPods int
	// FreshNamespaces hold the pods created during the initial backlog
	// and during the resync, in that order (Fresh only).
	FreshNamespaces [2]string

	// Replica names this replica of the sharded group Election.Name
	// (Sharding only; empty: the unsharded baseline). Election.Namespace
	// holds the pods it watches and the group's Leases.
	Replica string
	// Handlings is the file every handling is recorded in (Sharding only,
	// package ledger).
	Handlings string
}

// CommandLine returns the arguments that make a binary calling Main run a.
func (a Args) CommandLine() []string {
	return []string{Flag, a.Impl, "-scenario", a.Scenario, "-kubeconfig", a.Kubeconfig,
		"-pods", fmt.Sprint(a.Pods), "-updates", fmt.Sprint(a.Updates), "-token", a.Token,
		"-handler-delay", a.HandlerDelay.String(), "-timeout", a.Timeout.String(), "-stop-timeout", a.StopTimeout.String(),
		"-role", a.Role, "-lease-namespace", a.Election.Namespace, "-lease", a.Election.Name,
		"-lease-duration", a.Election.LeaseDuration.String(), "-renew-deadline", a.Election.RenewDeadline.String(),
		"-retry-period", a.Election.RetryPeriod.String(), "-standby-settle", a.StandbySettle.String(),
		"-resync", a.Resync.String(), "-fresh-pods", fmt.Sprint(a.FreshPods),
		"-fresh-namespaces", a.FreshNamespaces[0] + "," + a.FreshNamespaces[1],
		"-replica", a.Replica, "-handlings", a.Handlings}
}

// IsChild reports whether args (os.Args[1:]) are a child's command line.
func IsChild(args []string) bool { return len(args) > 0 && args[0] == Flag }

func parse(args []string) (Args, error) {
	var a Args
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.Impl, "child", "", "implementation")
	fs.StringVar(&a.Scenario, "scenario", Single, "single or pair")
	fs.StringVar(&a.Kubeconfig, "kubeconfig", "", "admin kubeconfig")
	fs.IntVar(&a.Pods, "pods", 0, "seeded pods")
	fs.IntVar(&a.Updates, "updates", 0, "churned pods")
	fs.StringVar(&a.Token, "token", "", "churn token")
	fs.DurationVar(&a.HandlerDelay, "handler-delay", 0, "sleep in every handling")
	fs.DurationVar(&a.Timeout, "timeout", 5*time.Minute, "bound on sync and on churn")
	fs.DurationVar(&a.StopTimeout, "stop-timeout", 20*time.Second, "bound on Run returning")
	fs.StringVar(&a.Role, "role", "", "leader or standby (failover)")
	fs.StringVar(&a.Election.Namespace, "lease-namespace", "", "the Lease's namespace (failover)")
	fs.StringVar(&a.Election.Name, "lease", "", "the Lease's name (failover)")
	fs.DurationVar(&a.Election.LeaseDuration, "lease-duration", 15*time.Second, "Lease duration (failover)")
	fs.DurationVar(&a.Election.RenewDeadline, "renew-deadline", 10*time.Second, "renew deadline (failover)")
	fs.DurationVar(&a.Election.RetryPeriod, "retry-period", 2*time.Second, "retry period (failover)")
	fs.DurationVar(&a.StandbySettle, "standby-settle", 10*time.Second, "standby's wait before it reports (failover)")
	fs.DurationVar(&a.Resync, "resync", 0, "resync period (fresh)")
	fs.IntVar(&a.FreshPods, "fresh-pods", 0, "pods created per phase (fresh)")
	freshNamespaces := fs.String("fresh-namespaces", ",", "namespaces of the created pods, comma-separated (fresh)")
	fs.StringVar(&a.Replica, "replica", "", "this replica's name, empty for the unsharded baseline (sharding)")
	fs.StringVar(&a.Handlings, "handlings", "", "file recording every handling (sharding)")
	if err := fs.Parse(args); err != nil {
		return Args{}, fmt.Errorf("could not parse the child's arguments: %w", err)
	}
	a.FreshNamespaces[0], a.FreshNamespaces[1], _ = strings.Cut(*freshNamespaces, ",")
	switch a.Scenario {
	case Single, Pair:
	case Failover:
		if a.Role != RoleLeader && a.Role != RoleStandby {
			return Args{}, fmt.Errorf("unknown role %q, want %s or %s", a.Role, RoleLeader, RoleStandby)
		}
		if a.Election.Namespace == "" || a.Election.Name == "" {
			return Args{}, errors.New("a failover child needs -lease-namespace and -lease")
		}
	case Fresh:
		if a.FreshPods <= 0 || a.Resync <= 0 || a.FreshNamespaces[0] == "" || a.FreshNamespaces[1] == "" {
			return Args{}, errors.New("a fresh child needs -fresh-pods, -resync and two -fresh-namespaces")
		}
	case Sharding:
		if a.Election.Namespace == "" || a.Handlings == "" || (a.Replica != "" && a.Election.Name == "") {
			return Args{}, errors.New("a sharding child needs -lease-namespace, -handlings and, for a replica, -lease")
		}
	default:
		return Args{}, fmt.Errorf("unknown scenario %q, want %s, %s, %s, %s or %s", a.Scenario, Single, Pair, Failover, Fresh, Sharding)
	}
	if a.Pods <= 0 {
		return Args{}, errors.New("-pods must be positive")
	}
	return a, nil
}

// Message is one line of a child's output; exactly one field is set.
type Message struct {
	Synced  *Sync  `json:"synced,omitempty"`
	Churned *Churn `json:"churned,omitempty"`
	// StandingBy and TookOver are a Failover standby's.
	StandingBy *Standby  `json:"standingBy,omitempty"`
	TookOver   *Takeover `json:"tookOver,omitempty"`
	// Backlog, FreshHandled and Resyncing are a Fresh child's.
	Backlog      *Backlog    `json:"backlog,omitempty"`
	FreshHandled *FreshPhase `json:"freshHandled,omitempty"`
	Resyncing    *Backlog    `json:"resyncing,omitempty"`
	// ShardReady, ShardState and ShardMeasured are a Sharding child's.
	ShardReady    *ShardReady    `json:"shardReady,omitempty"`
	ShardState    *ShardState    `json:"shardState,omitempty"`
	ShardMeasured *ShardMeasured `json:"shardMeasured,omitempty"`
	Stopped       *Stop          `json:"stopped,omitempty"`
	Error         string         `json:"error,omitempty"`
}

// Sync measures the initial sync, from just before the implementation's
// client and controllers are built (t0) until every controller handled
// every seeded pod.
type Sync struct {
	Controllers int `json:"controllers"`
	Pods        int `json:"pods"`
	// Elapsed is time-to-all-handled: t0 until the last pod's first handling.
	Elapsed time.Duration `json:"elapsed"`
	// FirstHandled is t0 until the first pod's first handling: for a
	// controller that waits for a full cache, when its cache was complete.
	FirstHandled time.Duration `json:"firstHandled"`
	// CPU is the process's user+system CPU from t0 to then.
	CPU time.Duration `json:"cpu"`
	// GCs and GCCPU are the collector's automatic cycles and its CPU
	// estimate from t0 to then (proc.ReadGC).
	GCs   uint64        `json:"gcs"`
	GCCPU time.Duration `json:"gcCPU"`
	// HeapPerPod is the settled heap (two GCs) then, minus the settled heap
	// just before t0, divided by Pods.
	HeapPerPod float64 `json:"heapPerPod"`
	// RSS and PeakRSS are VmRSS and VmHWM in bytes, read after those GCs.
	RSS     uint64 `json:"rss"`
	PeakRSS uint64 `json:"peakRSS"`
	// HandlerCalls counts handlings, over every controller.
	HandlerCalls int64 `json:"handlerCalls"`
	// Requests are the HTTP requests made so far, "count× what -> served".
	Requests []string `json:"requests"`
}

// Churn measures the handling of the parent's updates, from the Synced
// message (ready) until every churned pod was handled with the token.
type Churn struct {
	Updates int `json:"updates"`
	// Elapsed is ready until the last churned pod was handled.
	Elapsed time.Duration `json:"elapsed"`
	// CPU is the process's user+system CPU over Elapsed.
	CPU time.Duration `json:"cpu"`
	// GCs and GCCPU are the collector's automatic cycles and its CPU
	// estimate over Elapsed (proc.ReadGC). Every child starts churning
	// right after two forced collections, so a smaller cache reaches its
	// next automatic collection after less garbage.
	GCs   uint64        `json:"gcs"`
	GCCPU time.Duration `json:"gcCPU"`
	// P50, P99 and Max are of the latencies: handling time minus the
	// parent's send time (in the pod's annotation).
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
	// HandlerCalls counts handlings since ready.
	HandlerCalls int64 `json:"handlerCalls"`
}

// Stop measures the shutdown.
type Stop struct {
	// Elapsed is from the stop request until Run returned.
	Elapsed time.Duration `json:"elapsed"`
}

// Main runs a child for args (os.Args[1:], starting with Flag): it writes
// Messages to stdout and returns the exit status. Closing stdin asks it to
// stop, as SIGTERM does.
func Main(args []string, stdin io.Reader, stdout io.Writer) int {
	out := json.NewEncoder(stdout)
	a, err := parse(args)
	if err == nil {
		err = run(a, stdin, out)
	}
	if err != nil {
		_ = out.Encode(Message{Error: err.Error()})
		return 1
	}
	return 0
}

// env is what every scenario's child starts from.
type env struct {
	a    Args
	impl impls.Impl
	cfg  *rest.Config
	reqs *requests
	out  *json.Encoder
	// stopCtx is done once the parent asks the child to stop.
	stopCtx context.Context
	// commands are the lines the parent writes to stdin (Sharding only).
	commands <-chan string
}

func run(a Args, stdin io.Reader, out *json.Encoder) error {
	impl, err := impls.Get(a.Impl)
	if err != nil {
		return err
	}
	memimpls.SilenceLogs()
	cfg, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		return fmt.Errorf("could not load kubeconfig %s: %w", a.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = ClientQPS, ClientBurst
	reqs := newRequests()
	cfg.Wrap(reqs.wrap)

	// A stop request is stdin's end or a signal. Lines before it are
	// commands; a command nobody reads within 16 more is dropped.
	stopCtx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	stopCtx, cancelStop := context.WithCancel(stopCtx)
	defer cancelStop()
	commands := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(stdin)
		for s.Scan() {
			select {
			case commands <- s.Text():
			default:
			}
		}
		cancelStop()
	}()

	e := &env{a: a, impl: impl, cfg: cfg, reqs: reqs, out: out, stopCtx: stopCtx, commands: commands}
	switch a.Scenario {
	case Failover:
		return e.failover()
	case Fresh:
		return e.fresh()
	case Sharding:
		return e.sharding()
	}
	return e.throughput()
}

// started is an implementation's Run in progress.
type started struct {
	e      *env
	cancel context.CancelFunc
	done   chan error
}

// start runs the implementation with handlers and opts in the background.
func (e *env) start(handlers []impls.Handler, opts impls.Options) *started {
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{e: e, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- e.impl.Run(ctx, rest.CopyConfig(e.cfg), handlers, opts) }()
	return s
}

// wait waits for done: see the package function wait.
func (s *started) wait(timeout time.Duration, done <-chan struct{}, progress func() string) error {
	return wait(s.e.stopCtx, s.done, timeout, done, progress)
}

// stop waits for the parent's stop request, stops the implementation and
// reports Stopped; Run returning before the request is a failure.
func (s *started) stop() error {
	a := s.e.a
	defer s.cancel()
	select {
	case <-s.e.stopCtx.Done():
	case err := <-s.done:
		return fmt.Errorf("%s returned before it was asked to stop: %w", a.Impl, errOrNil(err))
	}
	stopping := time.Now()
	s.cancel()
	select {
	case err := <-s.done:
		if err != nil {
			return fmt.Errorf("%s failed while stopping: %w", a.Impl, err)
		}
	case <-time.After(a.StopTimeout):
		return fmt.Errorf("%s did not return within %s of being asked to stop", a.Impl, a.StopTimeout)
	}
	if err := s.e.out.Encode(Message{Stopped: &Stop{Elapsed: time.Since(stopping)}}); err != nil {
		return fmt.Errorf("could not report the stop: %w", err)
	}
	return nil
}

// throughput is the Single and Pair scenarios.
func (e *env) throughput() error {
	a, out, reqs := e.a, e.out, e.reqs
	controllers, updates := 1, a.Updates
	if a.Scenario == Pair {
		controllers, updates = 2, 0
	}
	trackers := make([]*track.Tracker, controllers)
	handlers := make([]impls.Handler, controllers)
	for i := range trackers {
		trackers[i] = track.New(a.Pods, updates, a.Token)
		handlers[i] = trackers[i].Handle
		if d := a.HandlerDelay; d > 0 {
			tr := trackers[i]
			handlers[i] = func(obj metav1.Object) {
				tr.Handle(obj)
				time.Sleep(d)
			}
		}
	}
	// The measured part starts here.
	heap0 := proc.SettledHeap()
	cpu0, err := proc.CPU()
	if err != nil {
		return err
	}
	prof, err := startProfile(a, "sync")
	if err != nil {
		return err
	}
	gc0 := proc.ReadGC()
	t0 := time.Now()
	running := e.start(handlers, impls.Options{})
	defer running.cancel()
	waitFor := func(done <-chan struct{}, progress func() string) error {
		return running.wait(a.Timeout, done, progress)
	}
	for _, tr := range trackers {
		if err := waitFor(tr.AllSeen(), func() string { return fmt.Sprintf("%d/%d pods handled", tr.Seen(), a.Pods) }); err != nil {
			return err
		}
	}
	cpu1, err := proc.CPU()
	if err != nil {
		return err
	}
	gc1 := proc.ReadGC().Sub(gc0)
	if err := prof.stop(); err != nil {
		return err
	}
	var first, last time.Time
	var calls int64
	for _, tr := range trackers {
		if at := tr.AllSeenAt(); at.After(last) {
			last = at
		}
		if at := tr.FirstSeenAt(); first.IsZero() || at.Before(first) {
			first = at
		}
		calls += tr.Calls()
	}
	heap1 := proc.SettledHeap()
	mem, err := proc.ReadMemory()
	if err != nil {
		return err
	}
	synced := Sync{
		Controllers:  controllers,
		Pods:         a.Pods,
		Elapsed:      last.Sub(t0),
		FirstHandled: first.Sub(t0),
		CPU:          cpu1 - cpu0,
		GCs:          gc1.Cycles,
		GCCPU:        gc1.CPU,
		HeapPerPod:   (float64(heap1) - float64(heap0)) / float64(a.Pods),
		RSS:          mem.RSS,
		PeakRSS:      mem.Peak,
		HandlerCalls: calls,
		Requests:     reqs.snapshot(),
	}

	if updates > 0 {
		tr := trackers[0]
		cpuReady, err := proc.CPU()
		if err != nil {
			return err
		}
		if prof, err = startProfile(a, "churn"); err != nil {
			return err
		}
		gcReady := proc.ReadGC()
		callsReady, ready := tr.Calls(), time.Now()
		if err := out.Encode(Message{Synced: &synced}); err != nil {
			return fmt.Errorf("could not report the sync: %w", err)
		}
		if err := waitFor(tr.AllChurned(), func() string { return fmt.Sprintf("%d/%d updates handled", tr.Churned(), updates) }); err != nil {
			return err
		}
		elapsed := time.Since(ready)
		cpuDone, err := proc.CPU()
		if err != nil {
			return err
		}
		gcChurn := proc.ReadGC().Sub(gcReady)
		if err := prof.stop(); err != nil {
			return err
		}
		ls := tr.Latencies()
		if err := out.Encode(Message{Churned: &Churn{
			Updates:      updates,
			Elapsed:      elapsed,
			CPU:          cpuDone - cpuReady,
			GCs:          gcChurn.Cycles,
			GCCPU:        gcChurn.CPU,
			P50:          track.Percentile(ls, 0.50),
			P99:          track.Percentile(ls, 0.99),
			Max:          slices.Max(ls),
			HandlerCalls: tr.Calls() - callsReady,
		}}); err != nil {
			return fmt.Errorf("could not report the churn: %w", err)
		}
	} else if err := out.Encode(Message{Synced: &synced}); err != nil {
		return fmt.Errorf("could not report the sync: %w", err)
	}

	return running.stop()
}

// errReturnedNil stands for a nil error from a Run that should not have
// returned yet.
var errReturnedNil = errors.New("returned nil")

func errOrNil(err error) error {
	if err == nil {
		return errReturnedNil
	}
	return err
}

// wait waits for done, failing on a stop request, on the implementation's
// Run returning, or after timeout; progress describes how far it got.
func wait(stop context.Context, runDone <-chan error, timeout time.Duration, done <-chan struct{}, progress func() string) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case err := <-runDone:
		return fmt.Errorf("the implementation's Run returned with %s: %w", progress(), errOrNil(err))
	case <-timer.C:
		return fmt.Errorf("timed out after %s with %s", timeout, progress())
	case <-stop.Done():
		return fmt.Errorf("asked to stop with %s", progress())
	}
}
