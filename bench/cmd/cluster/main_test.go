package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/report"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
)

// TestMain lets the test binary be the benchmark's child too: the runner
// starts children by running its own executable again.
func TestMain(m *testing.M) {
	if child.IsChild(os.Args[1:]) {
		os.Exit(child.Main(os.Args[1:], os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// TestEveryScenarioOfEveryImplementationCompletes runs the whole benchmark
// on a tiny workload against a local control plane: every implementation
// must handle every pod and every update, stop cleanly, and report sane
// numbers; the report and the chart must come out.
func TestEveryScenarioOfEveryImplementationCompletes(t *testing.T) {
	const pods, updates = 100, 50
	goroutines := runtime.NumGoroutine()
	var progress bytes.Buffer
	res, err := runner.Run(context.Background(), runner.Options{
		Pods:        pods,
		Updates:     updates,
		Rounds:      1,
		Settle:      50 * time.Millisecond,
		Timeout:     30 * time.Second,
		StopTimeout: 10 * time.Second,
		Progress:    &progress,
		// Short Lease timings (Kooper's runner needs lease - renew - retry
		// above its controllers' 2s shutdown timeout) and resyncs.
		Lease:         impls.Election{LeaseDuration: 5 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond},
		StandbySettle: 2 * time.Second,
		FreshPods:     10,
		FreshResync:   4 * time.Second,
	})
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}

	if res.PodsAtEnd != pods {
		t.Errorf("got %d pods at the end, want %d (nothing deletes them)", res.PodsAtEnd, pods)
	}
	if res.PodSize.Protobuf <= 0 || res.PodSize.JSON <= res.PodSize.Protobuf {
		t.Errorf("got pod sizes %+v, want JSON > protobuf > 0", res.PodSize)
	}
	want := map[string][]string{child.Single: res.SingleImpls, child.Pair: res.PairImpls}
	for scenario, names := range want {
		if len(names) < 4 {
			t.Errorf("got %s implementations %v, want at least kooper, kooper-v2, controller-runtime and floor", scenario, names)
		}
		for _, impl := range names {
			i := slices.IndexFunc(res.Runs, func(r runner.Record) bool { return r.Impl == impl && r.Scenario == scenario })
			if i < 0 {
				t.Errorf("%s %s: no run", scenario, impl)
				continue
			}
			checkRun(t, res.Runs[i], pods, updates)
		}
	}

	for _, scenario := range []string{runner.FailoverStop, runner.FailoverKill} {
		if len(res.FailoverImpls) != 5 {
			t.Errorf("got failover implementations %v, want kooper cold and warm, kooper-v2, controller-runtime with and without warm-up", res.FailoverImpls)
		}
		for _, impl := range res.FailoverImpls {
			checkFailover(t, res.Runs, impl, scenario)
		}
	}
	if len(res.FreshImpls) != 4 {
		t.Errorf("got fresh implementations %v, want kooper, controller-runtime with and without its priority queue, kooper-v2", res.FreshImpls)
	}
	for _, impl := range res.FreshImpls {
		checkFresh(t, res.Runs, impl, 10)
	}

	var out bytes.Buffer
	report.Print(&out, res)
	for _, section := range []string{"## Scenario 1", "## Scenario 2", "## Scenario 3", "## Scenario 4", "## Scenario 5", "Targets", "sendInitialEvents=true"} {
		if !strings.Contains(out.String(), section) {
			t.Errorf("the report lacks %q:\n%s", section, out.String())
		}
	}
	for _, chart := range []struct {
		name  string
		write func(string, runner.Results) error
	}{{"chart.png", report.WritePNG}, {"failover.png", report.WriteFailoverPNG}} {
		path := filepath.Join(t.TempDir(), chart.name)
		if err := chart.write(path, res); err != nil {
			t.Fatal(err)
		}
		checkPNG(t, path)
	}

	// The JSON written by default reads back into the same report.
	path := filepath.Join(t.TempDir(), "results.json")
	b, err := json.Marshal(res)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if code := run(context.Background(), runner.Options{}, outputs{from: path}, &again); code != 0 || again.String() != out.String() {
		t.Errorf("reporting from the JSON: exit %d, same report %t", code, again.String() == out.String())
	}

	// Everything the runner started (child readers, clients) is gone.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("got %d goroutines after the run, want at most %d as before it:\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() < 400 || b.Dy() > 800 {
		t.Errorf("got a %dx%d chart, want 1200 wide and 400 to 800 high", b.Dx(), b.Dy())
	}
}

// checkFailover checks impl's failover run: the standby handled nothing
// while it stood by (the child fails otherwise), then every pod after the
// leader went; a warm Kooper standby took over without asking for pods.
func checkFailover(t *testing.T, runs []runner.Record, impl, scenario string) {
	t.Helper()
	i := slices.IndexFunc(runs, func(r runner.Record) bool { return r.Impl == impl && r.Scenario == scenario })
	if i < 0 {
		t.Errorf("%s %s: no run", scenario, impl)
		return
	}
	r := runs[i]
	f := r.Failover
	switch {
	case r.Err != "":
		t.Errorf("%s %s failed: %s", scenario, impl, r.Err)
	case f == nil || f.Leader == nil || f.Standby == nil || f.Takeover == nil:
		t.Errorf("%s %s: got %+v, want the leader's sync, the standby's report and its takeover", scenario, impl, f)
	case f.FirstHandled <= 0 || f.AllHandled < f.FirstHandled:
		t.Errorf("%s %s: first handled %s and all %s after the leader went, want 0 < first <= all", scenario, impl, f.FirstHandled, f.AllHandled)
	case scenario == runner.FailoverStop && f.LeaderStop == nil:
		t.Errorf("%s %s: the leader did not report its clean stop", scenario, impl)
	case r.Stop == nil:
		t.Errorf("%s %s: the standby did not stop cleanly", scenario, impl)
	case impl == "kooper" && slices.ContainsFunc(f.Takeover.Requests, func(req string) bool { return strings.Contains(req, "/pods") }):
		t.Errorf("%s kooper: the warm standby asked for pods at its takeover: %v", scenario, f.Takeover.Requests)
	case impl == "kooper-cold" && !slices.ContainsFunc(f.Takeover.Requests, func(req string) bool { return strings.Contains(req, "WATCH /api/v1/pods?sendInitialEvents=true") }):
		t.Errorf("%s kooper-cold: the cold standby did not fill its cache at its takeover: %v", scenario, f.Takeover.Requests)
	}
}

// checkFresh checks impl's fresh run: both phases' created pods handled.
func checkFresh(t *testing.T, runs []runner.Record, impl string, pods int) {
	t.Helper()
	i := slices.IndexFunc(runs, func(r runner.Record) bool { return r.Impl == impl && r.Scenario == child.Fresh })
	if i < 0 {
		t.Errorf("fresh %s: no run", impl)
		return
	}
	r := runs[i]
	if r.Err != "" || len(r.Fresh) != 2 || r.Stop == nil {
		t.Errorf("fresh %s: got error %q, phases %+v, stop %v; want two phases and a clean stop", impl, r.Err, r.Fresh, r.Stop)
		return
	}
	for j, p := range r.Fresh {
		if p.Phase != child.FreshPhases[j] || p.Pods != pods || p.P50 <= 0 || p.P99 < p.P50 || p.Max < p.P99 {
			t.Errorf("fresh %s: got phase %+v, want %s with %d pods and 0 < p50 <= p99 <= max", impl, p, child.FreshPhases[j], pods)
		}
	}
}

func checkRun(t *testing.T, r runner.Record, pods, updates int) {
	t.Helper()
	name := fmt.Sprintf("%s %s", r.Scenario, r.Impl)
	if r.Err != "" {
		t.Errorf("%s failed: %s", name, r.Err)
		return
	}
	s := r.Sync
	controllers := 1
	if r.Scenario == child.Pair {
		controllers = 2
	}
	switch {
	case s == nil:
		t.Errorf("%s: no sync measured", name)
		return
	case s.Controllers != controllers || s.Pods != pods:
		t.Errorf("%s: got %d controllers on %d pods, want %d on %d", name, s.Controllers, s.Pods, controllers, pods)
	case s.Elapsed <= 0 || s.CPU <= 0 || s.HeapPerPod <= 0 || s.RSS == 0 || s.PeakRSS < s.RSS:
		t.Errorf("%s: got sync %+v, want positive time, CPU, heap and RSS, and peak >= RSS", name, *s)
	case s.FirstHandled <= 0 || s.FirstHandled > s.Elapsed || s.GCCPU < 0:
		t.Errorf("%s: got first handling after %s and the last after %s (GC CPU %s), want 0 < first <= last and GC CPU >= 0", name, s.FirstHandled, s.Elapsed, s.GCCPU)
	case s.HandlerCalls < int64(pods*controllers):
		t.Errorf("%s: got %d handler calls, want at least %d (every pod, every controller)", name, s.HandlerCalls, pods*controllers)
	case len(s.Requests) == 0:
		t.Errorf("%s: no requests recorded", name)
	}
	if r.Scenario == child.Single {
		c := r.Churn
		switch {
		case c == nil:
			t.Errorf("%s: no churn measured", name)
		case c.Updates != updates || c.P50 <= 0 || c.P99 < c.P50 || c.Max < c.P99 || c.CPU <= 0:
			t.Errorf("%s: got churn %+v, want %d updates, 0 < p50 <= p99 <= max and CPU > 0", name, *c, updates)
		case c.HandlerCalls < int64(updates):
			t.Errorf("%s: got %d handler calls during churn, want at least %d", name, c.HandlerCalls, updates)
		}
	}
	if r.Stop == nil || r.TotalCPU <= 0 {
		t.Errorf("%s: got stop %v and total CPU %s, want a clean stop and CPU > 0", name, r.Stop, r.TotalCPU)
	}
}

// TestShardingProvesAndMeasures runs scenario 6 on a tiny workload with
// short Lease timings: every run must complete with no key handled twice
// at once and no final version lost, the replicas must find the mode each
// control plane allows, every membership change must end balanced, and
// the report, the chart and the JSON must come out.
func TestShardingProvesAndMeasures(t *testing.T) {
	const pods, offPods = 100, 60
	goroutines := runtime.NumGoroutine()
	var progress bytes.Buffer
	res, err := runner.Run(context.Background(), runner.Options{
		Pods:            pods,
		Rounds:          1,
		Scenarios:       runner.Scenarios{Sharding: true},
		Warmup:          -1,
		Settle:          50 * time.Millisecond,
		Timeout:         30 * time.Second,
		StopTimeout:     15 * time.Second,
		Progress:        &progress,
		Lease:           impls.Election{LeaseDuration: 5 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond},
		ShardingOffPods: offPods,
		ShardingUpdates: 30,
		ShardingHold:    time.Second,
	})
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ShardingImpls; !slices.Equal(got, []string{impls.NameKooper}) {
		t.Errorf("got sharding implementations %v, want kooper only", got)
	}
	for _, r := range res.Runs {
		if r.Err != "" {
			t.Errorf("%s failed: %s", r.Scenario, r.Err)
		}
	}
	for _, c := range []struct {
		scenario, mode string
		pods           int
	}{{runner.ShardingGateOn, "server-side", pods}, {runner.ShardingGateOff, "client-side", offPods}} {
		i := slices.IndexFunc(res.Runs, func(r runner.Record) bool { return r.Scenario == c.scenario })
		if i < 0 || res.Runs[i].Split == nil {
			t.Errorf("%s: no run", c.scenario)
			continue
		}
		s := res.Runs[i].Split
		cached := 0
		for _, rep := range s.Replicas {
			cached += rep.Cached
			if rep.Heap <= 0 || rep.Delivered < int64(rep.Cached) || rep.UpdateShare <= 0 {
				t.Errorf("%s %s: got %+v, want a heap, at least its cache delivered and a share of the updates", c.scenario, rep.Name, rep)
			}
		}
		wantCached := c.pods // server-side: the caches split the pods
		if c.mode == "client-side" {
			wantCached = c.pods * runner.ShardReplicas
		}
		switch {
		case s.Mode != c.mode || len(s.Replicas) != runner.ShardReplicas:
			t.Errorf("%s: got %d replicas %s, want %d %s", c.scenario, len(s.Replicas), s.Mode, runner.ShardReplicas, c.mode)
		case s.Baseline.Cached != c.pods || s.Baseline.Heap <= 0:
			t.Errorf("%s: got the unsharded replica %+v, want all %d pods cached and a heap", c.scenario, s.Baseline, c.pods)
		case cached != wantCached:
			t.Errorf("%s: got %d pods cached by the sharded replicas together, want %d", c.scenario, cached, wantCached)
		case s.Overlaps != 0 || s.Handlings < 2*c.pods:
			t.Errorf("%s: got %d overlaps in %d handlings, want none in at least %d", c.scenario, s.Overlaps, s.Handlings, 2*c.pods)
		}
	}
	i := slices.IndexFunc(res.Runs, func(r runner.Record) bool { return r.Scenario == runner.ShardingMoves })
	if i < 0 || res.Runs[i].Moves == nil {
		t.Fatal("no membership run")
	}
	m := res.Runs[i].Moves
	if len(m.Changes) != 7 {
		t.Errorf("got %d membership changes, want 7: start, two scale-ups, two clean stops, a SIGKILL, an API server restart", len(m.Changes))
	}
	for _, c := range m.Changes {
		if c.Balanced < 0 {
			t.Errorf("%s: the slots were not balanced again", c.What)
		}
	}
	switch {
	case m.Kill == nil || m.Kill.Handled <= 0 || m.Kill.Handled > 3*res.Lease.LeaseDuration:
		t.Errorf("got the SIGKILL's takeover %+v, want its slots handled elsewhere within 3 lease durations", m.Kill)
	case m.Overlaps != 0 || m.Lost != 0:
		t.Errorf("got %d overlaps and %d lost final versions, want none", m.Overlaps, m.Lost)
	case m.Writes == 0 || len(m.Rates.Counts) != 5:
		t.Errorf("got %d writes and the rates of %d replicas, want writes and 5 replicas", m.Writes, len(m.Rates.Counts))
	}

	var out bytes.Buffer
	report.Print(&out, res)
	for _, section := range []string{"## Scenario 6", "### Gate on", "### Gate off", "### Membership changes", "SIGKILL of a"} {
		if !strings.Contains(out.String(), section) {
			t.Errorf("the report lacks %q:\n%s", section, out.String())
		}
	}
	path := filepath.Join(t.TempDir(), "sharding.png")
	if err := report.WriteShardingPNG(path, res); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path)
	jsonPath := filepath.Join(t.TempDir(), "results.json")
	b, err := json.Marshal(res)
	if err == nil {
		err = os.WriteFile(jsonPath, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if code := run(context.Background(), runner.Options{}, outputs{from: jsonPath}, &again); code != 0 || again.String() != out.String() {
		t.Errorf("reporting from the JSON: exit %d, same report %t", code, again.String() == out.String())
	}

	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("got %d goroutines after the run, want at most %d as before it:\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
	}
}
