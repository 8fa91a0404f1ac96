package bench_test

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/kooperkit/kooper/bench/internal/harness"
	"github.com/kooperkit/kooper/bench/internal/impls"
)

var (
	benchObjects = flag.Int("bench.objects", 10000, "objects seeded per benchmark iteration")
	benchUpdates = flag.Int("bench.updates", 100000, "updates made per benchmark iteration")
)

func TestMain(m *testing.M) {
	flag.Parse()
	impls.SilenceLogs()
	os.Exit(m.Run())
}

// TestEveryImplementationHandlesEveryFinalVersion runs a tiny workload on
// every implementation, with the source streaming the initial list
// (watch-list) and refusing it (LIST+WATCH): a missed final version or a hang
// fails within the timeout, and so does a goroutine left running.
func TestEveryImplementationHandlesEveryFinalVersion(t *testing.T) {
	const objects, updates = 50, 500
	for _, mode := range []struct {
		name             string
		disableWatchList bool
	}{
		{"watch-list", false},
		{"list+watch", true},
	} {
		for _, impl := range impls.All() {
			t.Run(mode.name+"/"+impl.Name(), func(t *testing.T) {
				res, err := harness.Run(context.Background(), impl, harness.Config{
					Objects:          objects,
					Updates:          updates,
					DisableWatchList: mode.disableWatchList,
					Timeout:          30 * time.Second,
					StopTimeout:      10 * time.Second,
				})
				if err != nil {
					t.Fatal(err)
				}
				if res.SourceWatchLeaks > 0 {
					// A source bug, not the implementation's: see
					// harness/goroutines.go and README.md.
					t.Logf("the source left %d refused watch goroutines parked", res.SourceWatchLeaks)
				}
				if res.HandlerCalls < objects {
					t.Errorf("got %d handler calls, want at least %d", res.HandlerCalls, objects)
				}
			})
		}
	}
}

func BenchmarkKooper(b *testing.B)            { benchmark(b, impls.Kooper{}) }
func BenchmarkKooperV2(b *testing.B)          { benchmark(b, impls.KooperV2{}) }
func BenchmarkControllerRuntime(b *testing.B) { benchmark(b, impls.ControllerRuntime{}) }
func BenchmarkFloor(b *testing.B)             { benchmark(b, impls.Floor{}) }

// benchmark runs one full workload per iteration. ns/op includes seeding and
// stopping; events/s and allocs/event cover only the measured part.
func benchmark(b *testing.B, impl impls.Impl) {
	var results []harness.Result
	for b.Loop() {
		res, err := harness.Run(context.Background(), impl, harness.Config{Objects: *benchObjects, Updates: *benchUpdates})
		if err != nil {
			b.Fatal(err)
		}
		results = append(results, res)
	}
	s := harness.Summarize(results)
	b.ReportMetric(s.EventsPerSec, "events/s")
	b.ReportMetric(s.AllocsPerEvent, "allocs/event")
	b.ReportMetric(s.Elapsed.Seconds(), "s-to-all-handled")
	b.ReportMetric(s.HandlerCalls, "handler-calls")
}
