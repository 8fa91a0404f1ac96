package main

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/kooperkit/kooper/bench/internal/cluster/report"
	"github.com/kooperkit/kooper/bench/internal/cluster/runner"
	"github.com/kooperkit/kooper/kooper/devcluster"
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
	})
	if errors.Is(err, devcluster.ErrBinariesMissing) && os.Getenv("CI") != "true" {
		t.Skip(devcluster.SkipHint)
	}
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

	var out bytes.Buffer
	report.Print(&out, res)
	for _, section := range []string{"## Scenario 1", "## Scenario 2", "## Scenario 3", "Targets", "sendInitialEvents=true"} {
		if !strings.Contains(out.String(), section) {
			t.Errorf("the report lacks %q:\n%s", section, out.String())
		}
	}
	path := filepath.Join(t.TempDir(), "chart.png")
	if err := report.WritePNG(path, res); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the chart is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() < 500 || b.Dy() > 800 {
		t.Errorf("got a %dx%d chart, want 1200 wide and about 700 high", b.Dx(), b.Dy())
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
