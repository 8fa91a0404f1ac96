package prometheus_test

import (
	"errors"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/kooperkit/kooper/kooper/controller"
	kooperprom "github.com/kooperkit/kooper/kooper/metrics/prometheus"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// newRecorder returns a Recorder on a fresh registry, with histograms of
// the given buckets, or the default ones without.
func newRecorder(t *testing.T, buckets ...float64) (*kooperprom.Recorder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	newRec := kooperprom.New
	if len(buckets) > 0 {
		newRec = func(reg prometheus.Registerer) (*kooperprom.Recorder, error) {
			return kooperprom.NewWithBuckets(reg, buckets)
		}
	}
	rec, err := newRec(reg)
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	return rec, reg
}

// recordEverything calls every Recorder method at least once for "pods",
// SetLeader for a leading "pods" and a waiting "standby", and SetShards for
// a replica of group "tenants" owning 8 of 32 slots.
func recordEverything(rec *kooperprom.Recorder) {
	rec.IncQueuedEvent("pods", "initial")
	rec.IncQueuedEvent("pods", "change")
	rec.IncQueuedEvent("pods", "change")
	rec.IncQueuedEvent("pods", "retry")
	rec.IncQueuedEvent("pods", "enqueue")
	rec.IncQueuedEvent("pods", "enqueue")
	rec.IncQueuedEvent("pods", "enqueue")
	rec.ObserveQueueWait("pods", 50*time.Millisecond)
	rec.ObserveHandling("pods", true, 200*time.Millisecond)
	rec.ObserveHandling("pods", false, 2*time.Second)
	rec.IncRetry("pods")
	rec.IncDropped("pods", "max_retries")
	rec.IncPanic("pods")
	rec.IncRetrieveError("pods", "decode")
	rec.IncRetrieveError("pods", "decode")
	rec.AddQueueLength("pods", 3)
	rec.AddQueueLength("pods", -1)
	rec.ObserveCacheWait("pods", true, 300*time.Millisecond)
	rec.ObserveCacheWait("pods", false, 10*time.Second)
	rec.SetLeader("pods", true)
	rec.SetLeader("standby", false)
	rec.SetShards("tenants", string(sharding.ModeServerSide), 8, 32)
}

// value returns the value of the one series of family name whose labels
// include want, or fails the test.
func value(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("got gather error %v, want none", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("got no series %s%v, want one", name, want)
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

func TestGatherAndCompare(t *testing.T) {
	rec, reg := newRecorder(t, 0.1, 1)
	recordEverything(rec)

	const want = `
# HELP kooper_controller_cache_wait_seconds Time an object key whose handler wrote through a TrackWrites client was held before it was handled again, until the controller's caches had seen those writes; caught_up is false when the wait reached its bound (10s) and the key was handled anyway. Keys that did not wait are not counted.
# TYPE kooper_controller_cache_wait_seconds histogram
kooper_controller_cache_wait_seconds_bucket{caught_up="false",controller="pods",le="0.1"} 0
kooper_controller_cache_wait_seconds_bucket{caught_up="false",controller="pods",le="1"} 0
kooper_controller_cache_wait_seconds_bucket{caught_up="false",controller="pods",le="+Inf"} 1
kooper_controller_cache_wait_seconds_sum{caught_up="false",controller="pods"} 10
kooper_controller_cache_wait_seconds_count{caught_up="false",controller="pods"} 1
kooper_controller_cache_wait_seconds_bucket{caught_up="true",controller="pods",le="0.1"} 0
kooper_controller_cache_wait_seconds_bucket{caught_up="true",controller="pods",le="1"} 1
kooper_controller_cache_wait_seconds_bucket{caught_up="true",controller="pods",le="+Inf"} 1
kooper_controller_cache_wait_seconds_sum{caught_up="true",controller="pods"} 0.3
kooper_controller_cache_wait_seconds_count{caught_up="true",controller="pods"} 1
# HELP kooper_controller_dropped_total Failed object keys a controller gave up on, by reason: max_retries or terminal.
# TYPE kooper_controller_dropped_total counter
kooper_controller_dropped_total{controller="pods",reason="max_retries"} 1
kooper_controller_dropped_total{controller="pods",reason="terminal"} 0
# HELP kooper_controller_handle_duration_seconds Time a controller's handler took per call; success is true when it returned no error.
# TYPE kooper_controller_handle_duration_seconds histogram
kooper_controller_handle_duration_seconds_bucket{controller="pods",success="false",le="0.1"} 0
kooper_controller_handle_duration_seconds_bucket{controller="pods",success="false",le="1"} 0
kooper_controller_handle_duration_seconds_bucket{controller="pods",success="false",le="+Inf"} 1
kooper_controller_handle_duration_seconds_sum{controller="pods",success="false"} 2
kooper_controller_handle_duration_seconds_count{controller="pods",success="false"} 1
kooper_controller_handle_duration_seconds_bucket{controller="pods",success="true",le="0.1"} 0
kooper_controller_handle_duration_seconds_bucket{controller="pods",success="true",le="1"} 1
kooper_controller_handle_duration_seconds_bucket{controller="pods",success="true",le="+Inf"} 1
kooper_controller_handle_duration_seconds_sum{controller="pods",success="true"} 0.2
kooper_controller_handle_duration_seconds_count{controller="pods",success="true"} 1
# HELP kooper_controller_handler_panics_total Handler panics a controller recovered from.
# TYPE kooper_controller_handler_panics_total counter
kooper_controller_handler_panics_total{controller="pods"} 1
# HELP kooper_controller_leader 1 while this process holds the controller's leader election lease, 0 otherwise.
# TYPE kooper_controller_leader gauge
kooper_controller_leader{controller="pods"} 1
kooper_controller_leader{controller="standby"} 0
# HELP kooper_controller_queue_length Object keys waiting in a controller's queue.
# TYPE kooper_controller_queue_length gauge
kooper_controller_queue_length{controller="pods"} 2
# HELP kooper_controller_queue_wait_seconds Time an object key waited in a controller's queue before a worker took it.
# TYPE kooper_controller_queue_wait_seconds histogram
kooper_controller_queue_wait_seconds_bucket{controller="pods",le="0.1"} 1
kooper_controller_queue_wait_seconds_bucket{controller="pods",le="1"} 1
kooper_controller_queue_wait_seconds_bucket{controller="pods",le="+Inf"} 1
kooper_controller_queue_wait_seconds_sum{controller="pods"} 0.05
kooper_controller_queue_wait_seconds_count{controller="pods"} 1
# HELP kooper_controller_queued_events_total Object keys added to a controller's queue, by source: initial (the cache's first list), change (a watched add, update or delete), resync, retry (a failed handling), requeue (a RequeueAfter request) or enqueue (Controller.Enqueue, as a source given to controller.New queues its owner's key).
# TYPE kooper_controller_queued_events_total counter
kooper_controller_queued_events_total{controller="pods",source="change"} 2
kooper_controller_queued_events_total{controller="pods",source="enqueue"} 3
kooper_controller_queued_events_total{controller="pods",source="initial"} 1
kooper_controller_queued_events_total{controller="pods",source="requeue"} 0
kooper_controller_queued_events_total{controller="pods",source="resync"} 0
kooper_controller_queued_events_total{controller="pods",source="retry"} 1
# HELP kooper_controller_retries_total Failed handlings that a controller will retry.
# TYPE kooper_controller_retries_total counter
kooper_controller_retries_total{controller="pods"} 1
# HELP kooper_controller_retrieve_errors_total Failed lists and watches of a controller's cache, by kind: decode (an answer the Go type cannot hold) or api.
# TYPE kooper_controller_retrieve_errors_total counter
kooper_controller_retrieve_errors_total{controller="pods",kind="api"} 0
kooper_controller_retrieve_errors_total{controller="pods",kind="decode"} 2
# HELP kooper_sharding_group_slots Slots of a sharded controller's group, shared among its replicas.
# TYPE kooper_sharding_group_slots gauge
kooper_sharding_group_slots{group="tenants"} 32
# HELP kooper_sharding_slots Slots of a sharded controller's group that this replica owns, by mode: server-side or client-side.
# TYPE kooper_sharding_slots gauge
kooper_sharding_slots{group="tenants",mode="server-side"} 8
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestGatherAndLintFindsNoProblems(t *testing.T) {
	rec, reg := newRecorder(t)
	recordEverything(rec)

	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	for _, p := range problems {
		t.Errorf("got lint problem %s: %s, want none", p.Metric, p.Text)
	}
}

func TestFirstUseCreatesSeriesAtZero(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.IncRetry("pods")

	zero := []struct {
		name   string
		labels map[string]string
	}{
		{"kooper_controller_queued_events_total", map[string]string{"controller": "pods", "source": "initial"}},
		{"kooper_controller_queued_events_total", map[string]string{"controller": "pods", "source": "change"}},
		{"kooper_controller_queued_events_total", map[string]string{"controller": "pods", "source": "resync"}},
		{"kooper_controller_queued_events_total", map[string]string{"controller": "pods", "source": "retry"}},
		{"kooper_controller_queued_events_total", map[string]string{"controller": "pods", "source": "requeue"}},
		{"kooper_controller_queued_events_total", map[string]string{"controller": "pods", "source": "enqueue"}},
		{"kooper_controller_queue_wait_seconds", map[string]string{"controller": "pods"}},
		{"kooper_controller_handle_duration_seconds", map[string]string{"controller": "pods", "success": "true"}},
		{"kooper_controller_handle_duration_seconds", map[string]string{"controller": "pods", "success": "false"}},
		{"kooper_controller_dropped_total", map[string]string{"controller": "pods", "reason": "max_retries"}},
		{"kooper_controller_dropped_total", map[string]string{"controller": "pods", "reason": "terminal"}},
		{"kooper_controller_handler_panics_total", map[string]string{"controller": "pods"}},
		{"kooper_controller_queue_length", map[string]string{"controller": "pods"}},
		{"kooper_controller_retrieve_errors_total", map[string]string{"controller": "pods", "kind": "decode"}},
		{"kooper_controller_retrieve_errors_total", map[string]string{"controller": "pods", "kind": "api"}},
		{"kooper_controller_cache_wait_seconds", map[string]string{"controller": "pods", "caught_up": "true"}},
		{"kooper_controller_cache_wait_seconds", map[string]string{"controller": "pods", "caught_up": "false"}},
	}
	for _, z := range zero {
		if got := value(t, reg, z.name, z.labels); got != 0 {
			t.Errorf("got %s%v = %v, want 0", z.name, z.labels, got)
		}
	}
	if got := value(t, reg, "kooper_controller_retries_total", map[string]string{"controller": "pods"}); got != 1 {
		t.Errorf("got retries %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "kooper_controller_leader"); err != nil || n != 0 {
		t.Errorf("got %d leader series (error %v), want 0 until SetLeader is called", n, err)
	}
	for _, name := range []string{"kooper_sharding_slots", "kooper_sharding_group_slots"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 0 {
			t.Errorf("got %d %s series (error %v), want 0 until SetShards is called", n, name, err)
		}
	}
}

func TestSetLeader(t *testing.T) {
	tests := []struct {
		name  string
		calls []bool
		want  float64
	}{
		{name: "leading sets 1", calls: []bool{true}, want: 1},
		{name: "waiting sets 0", calls: []bool{false}, want: 0},
		{name: "losing the lease goes back to 0", calls: []bool{false, true, false}, want: 0},
		{name: "the last call wins", calls: []bool{true, false, true}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, reg := newRecorder(t)
			for _, leading := range tt.calls {
				rec.SetLeader("pods", leading)
			}
			if got := value(t, reg, "kooper_controller_leader", map[string]string{"controller": "pods"}); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// shardsCall is one call of SetShards.
type shardsCall struct {
	group        string
	mode         sharding.Mode
	owned, total int
}

func TestSetShards(t *testing.T) {
	tests := []struct {
		name  string
		calls []shardsCall
		// The series of each family, one a line.
		wantGroupSlots, wantSlots string
	}{
		{
			name:           "a replica's slots are set with its mode, and the group's slots",
			calls:          []shardsCall{{"tenants", sharding.ModeServerSide, 8, 32}},
			wantGroupSlots: `kooper_sharding_group_slots{group="tenants"} 32`,
			wantSlots:      `kooper_sharding_slots{group="tenants",mode="server-side"} 8`,
		},
		{
			name: "the last call wins",
			calls: []shardsCall{
				{"tenants", sharding.ModeClientSide, 8, 32},
				{"tenants", sharding.ModeClientSide, 11, 32},
				{"tenants", sharding.ModeClientSide, 5, 32},
			},
			wantGroupSlots: `kooper_sharding_group_slots{group="tenants"} 32`,
			wantSlots:      `kooper_sharding_slots{group="tenants",mode="client-side"} 5`,
		},
		{
			name:           "a replica that gave up every slot reports 0",
			calls:          []shardsCall{{"tenants", sharding.ModeServerSide, 8, 32}, {"tenants", sharding.ModeServerSide, 0, 32}},
			wantGroupSlots: `kooper_sharding_group_slots{group="tenants"} 32`,
			wantSlots:      `kooper_sharding_slots{group="tenants",mode="server-side"} 0`,
		},
		{
			name:           "the detected mode replaces the series of the mode before detection",
			calls:          []shardsCall{{"tenants", sharding.ModeAuto, 0, 32}, {"tenants", sharding.ModeClientSide, 4, 32}},
			wantGroupSlots: `kooper_sharding_group_slots{group="tenants"} 32`,
			wantSlots:      `kooper_sharding_slots{group="tenants",mode="client-side"} 4`,
		},
		{
			name:           "another mode replaces the old mode's series",
			calls:          []shardsCall{{"tenants", sharding.ModeServerSide, 8, 32}, {"tenants", sharding.ModeClientSide, 6, 32}},
			wantGroupSlots: `kooper_sharding_group_slots{group="tenants"} 32`,
			wantSlots:      `kooper_sharding_slots{group="tenants",mode="client-side"} 6`,
		},
		{
			name: "groups are apart: a mode change in one leaves the other's series",
			calls: []shardsCall{
				{"tenants", sharding.ModeServerSide, 8, 32},
				{"pods", sharding.ModeServerSide, 3, 16},
				{"pods", sharding.ModeClientSide, 2, 16},
			},
			wantGroupSlots: `kooper_sharding_group_slots{group="pods"} 16
kooper_sharding_group_slots{group="tenants"} 32`,
			wantSlots: `kooper_sharding_slots{group="pods",mode="client-side"} 2
kooper_sharding_slots{group="tenants",mode="server-side"} 8`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, reg := newRecorder(t)
			for _, c := range tt.calls {
				rec.SetShards(c.group, string(c.mode), c.owned, c.total)
			}
			want := `
# HELP kooper_sharding_group_slots Slots of a sharded controller's group, shared among its replicas.
# TYPE kooper_sharding_group_slots gauge
` + tt.wantGroupSlots + `
# HELP kooper_sharding_slots Slots of a sharded controller's group that this replica owns, by mode: server-side or client-side.
# TYPE kooper_sharding_slots gauge
` + tt.wantSlots + "\n"
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kooper_sharding_slots", "kooper_sharding_group_slots"); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCacheWaitsAreObservedByOutcome(t *testing.T) {
	tests := []struct {
		name string
		// The caughtUp of each call.
		calls               []bool
		wantTrue, wantFalse float64
	}{
		{name: "a key released once the caches caught up", calls: []bool{true}, wantTrue: 1},
		{name: "a key handled anyway at the bound", calls: []bool{false}, wantFalse: 1},
		{name: "each outcome is counted apart", calls: []bool{true, false, true}, wantTrue: 2, wantFalse: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, reg := newRecorder(t)
			for _, caughtUp := range tt.calls {
				rec.ObserveCacheWait("pods", caughtUp, 20*time.Millisecond)
			}
			for caughtUp, want := range map[string]float64{"true": tt.wantTrue, "false": tt.wantFalse} {
				if got := value(t, reg, "kooper_controller_cache_wait_seconds", map[string]string{"controller": "pods", "caught_up": caughtUp}); got != want {
					t.Errorf("got %v waits with caught_up=%s, want %v", got, caughtUp, want)
				}
			}
		})
	}
}

func TestControllersShareOneRecorderByLabel(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.IncRetry("pods")
	rec.IncRetry("pods")
	rec.IncRetry("nodes")

	for name, want := range map[string]float64{"pods": 2, "nodes": 1} {
		if got := value(t, reg, "kooper_controller_retries_total", map[string]string{"controller": name}); got != want {
			t.Errorf("got %v retries for %s, want %v", got, name, want)
		}
	}
}

func TestUnknownDropReasonIsRecordedAsGiven(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.IncDropped("pods", "other")

	if got := value(t, reg, "kooper_controller_dropped_total", map[string]string{"controller": "pods", "reason": "other"}); got != 1 {
		t.Errorf("got %v, want 1", got)
	}
}

func TestQueuedEventsAreCountedBySource(t *testing.T) {
	tests := []struct {
		name   string
		source string
	}{
		{name: "a key of the initial list", source: "initial"},
		{name: "a change the watch saw", source: "change"},
		{name: "a resync", source: "resync"},
		{name: "a retry", source: "retry"},
		{name: "a RequeueAfter request", source: "requeue"},
		{name: "a key routed by Enqueue", source: "enqueue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, reg := newRecorder(t)
			rec.IncQueuedEvent("pods", tt.source)
			rec.IncQueuedEvent("pods", tt.source)

			if got := value(t, reg, "kooper_controller_queued_events_total", map[string]string{"controller": "pods", "source": tt.source}); got != 2 {
				t.Errorf("got %v, want 2", got)
			}
			total := 0.0
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "kooper_controller_queued_events_total" {
					for _, m := range mf.GetMetric() {
						total += m.GetCounter().GetValue()
					}
				}
			}
			if total != 2 {
				t.Errorf("got %v queued events over every source, want 2: another source was counted", total)
			}
		})
	}
}

func TestUnknownSourceIsRecordedAsGiven(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.IncQueuedEvent("pods", "other")

	const want = `
# HELP kooper_controller_queued_events_total Object keys added to a controller's queue, by source: initial (the cache's first list), change (a watched add, update or delete), resync, retry (a failed handling), requeue (a RequeueAfter request) or enqueue (Controller.Enqueue, as a source given to controller.New queues its owner's key).
# TYPE kooper_controller_queued_events_total counter
kooper_controller_queued_events_total{controller="pods",source="change"} 0
kooper_controller_queued_events_total{controller="pods",source="enqueue"} 0
kooper_controller_queued_events_total{controller="pods",source="initial"} 0
kooper_controller_queued_events_total{controller="pods",source="other"} 1
kooper_controller_queued_events_total{controller="pods",source="requeue"} 0
kooper_controller_queued_events_total{controller="pods",source="resync"} 0
kooper_controller_queued_events_total{controller="pods",source="retry"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kooper_controller_queued_events_total"); err != nil {
		t.Error(err)
	}
}

func TestNewTwiceOnOneRegistryFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := kooperprom.New(reg); err != nil {
		t.Fatalf("got error %v from the first New, want none", err)
	}

	_, err := kooperprom.New(reg)
	if err == nil {
		t.Fatal("got no error from the second New, want one")
	}
	if !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Errorf("got error %v, want it to wrap prometheus.AlreadyRegisteredError", err)
	}
	if !strings.Contains(err.Error(), "share one Recorder") {
		t.Errorf("got error %q, want it to say to share one Recorder", err)
	}
}

func TestNewOnWrappedRegistererTwiceFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{"app": "shop"}, reg)
	if _, err := kooperprom.New(wrapped); err != nil {
		t.Fatalf("got error %v from the first New, want none", err)
	}
	if _, err := kooperprom.New(wrapped); !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Errorf("got error %v, want it to wrap prometheus.AlreadyRegisteredError", err)
	}
}

func TestNewRegistersAllOrNothing(t *testing.T) {
	// Another collector already owns one of the names with other labels:
	// New must fail and leave the registry as it was.
	reg := prometheus.NewRegistry()
	squatter := prometheus.NewCounter(prometheus.CounterOpts{Name: "kooper_controller_retries_total", Help: "Not ours."})
	reg.MustRegister(squatter)

	_, err := kooperprom.New(reg)
	if err == nil {
		t.Fatal("got no error, want one")
	}
	if errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Errorf("got AlreadyRegisteredError %v, want a conflict error", err)
	}

	// Every other name must still be free.
	rec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kooper_controller_leader", Help: "Free?"}, []string{"x"})
	if err := reg.Register(rec); err != nil {
		t.Errorf("got error %v registering a leftover name, want none: New registered part of its metrics", err)
	}
}

func TestNewRefusesANilRegisterer(t *testing.T) {
	rec, err := kooperprom.New(nil)
	if err == nil || !strings.Contains(err.Error(), "Registerer is required") {
		t.Fatalf("got error %v, want one saying a Registerer is required", err)
	}
	if rec != nil {
		t.Errorf("got a Recorder with the error, want nil")
	}
}

func TestTheHistogramsHave16BucketsFrom1msTo33s(t *testing.T) {
	rec, reg := newRecorder(t)
	rec.ObserveQueueWait("pods", 500*time.Millisecond)
	rec.ObserveHandling("pods", true, 500*time.Millisecond)
	rec.ObserveCacheWait("pods", true, 500*time.Millisecond)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"kooper_controller_queue_wait_seconds": true, "kooper_controller_handle_duration_seconds": true, "kooper_controller_cache_wait_seconds": true}
	for _, mf := range mfs {
		if !want[mf.GetName()] {
			continue
		}
		delete(want, mf.GetName())
		var got []float64
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		if len(got) != 16 || got[0] != 0.001 || got[1] != 0.002 || got[15] != 32.768 {
			t.Errorf("got %s buckets %v, want 16 from 0.001 doubling to 32.768", mf.GetName(), got)
		}
	}
	if len(want) != 0 {
		t.Errorf("got no histogram %v, want one each", want)
	}
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var rec *kooperprom.Recorder
	var mr controller.MetricsRecorder = rec // as a Config would hold it
	mr.IncQueuedEvent("pods", "retry")
	mr.ObserveQueueWait("pods", time.Second)
	mr.ObserveHandling("pods", true, time.Second)
	mr.IncRetry("pods")
	mr.IncDropped("pods", "terminal")
	mr.IncPanic("pods")
	mr.AddQueueLength("pods", 1)
	mr.IncRetrieveError("pods", "api")
	mr.ObserveCacheWait("pods", true, time.Second)
	rec.SetLeader("pods", true)
	rec.SetShards("tenants", string(sharding.ModeServerSide), 8, 32)
}

func TestConcurrentUse(t *testing.T) {
	rec, reg := newRecorder(t)
	controllers := []string{"pods", "nodes", "services"}
	// Every source, and one the Recorder has no cached series for.
	sources := []string{
		"initial", "change", "resync",
		"retry", "requeue", "enqueue", "other",
	}
	modes := []sharding.Mode{sharding.ModeServerSide, sharding.ModeClientSide}
	const goroutines, calls = 8, 200

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				name := controllers[(g+i)%len(controllers)]
				rec.IncQueuedEvent(name, sources[i%len(sources)])
				rec.AddQueueLength(name, 1)
				rec.ObserveQueueWait(name, time.Millisecond)
				rec.ObserveHandling(name, i%3 != 0, time.Millisecond)
				rec.IncRetry(name)
				rec.IncDropped(name, "terminal")
				rec.IncPanic(name)
				rec.ObserveCacheWait(name, i%2 == 0, time.Millisecond)
				rec.AddQueueLength(name, -1)
				rec.SetLeader(name, i%2 == 0)
				rec.SetShards(name, string(modes[(g+i)%len(modes)]), i%4, 4)
			}
		})
	}
	// Scrape while recording, as Prometheus would.
	wg.Go(func() {
		for range 20 {
			if _, err := reg.Gather(); err != nil {
				t.Errorf("got gather error %v, want none", err)
				return
			}
		}
	})
	wg.Wait()

	var retries, queued float64
	for _, name := range controllers {
		retries += value(t, reg, "kooper_controller_retries_total", map[string]string{"controller": name})
		for _, source := range sources {
			queued += value(t, reg, "kooper_controller_queued_events_total", map[string]string{"controller": name, "source": source})
		}
		if got := value(t, reg, "kooper_controller_queue_length", map[string]string{"controller": name}); got != 0 {
			t.Errorf("got queue length %v for %s, want 0", got, name)
		}
	}
	if want := float64(goroutines * calls); retries != want || queued != want {
		t.Errorf("got %v retries and %v queued events, want %v of each", retries, queued, want)
	}
	// Modes changed all the time: each group keeps the last one's series only.
	if n, err := testutil.GatherAndCount(reg, "kooper_sharding_slots"); err != nil || n != len(controllers) {
		t.Errorf("got %d kooper_sharding_slots series (error %v), want %d: one per group", n, err, len(controllers))
	}
}

// docRow matches a row of the metric table in doc.go.
var docRow = regexp.MustCompile(`^//\t\| (kooper_[a-z_]+) +\| ([a-z]+) +\| ([a-z_, ]+?) +\|`)

func TestDocTableListsEveryMetric(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{} // name to "type: labels"
	for _, line := range strings.Split(string(src), "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := documented[m[1]]; dup {
			t.Errorf("got %s twice in the doc table, want it once", m[1])
		}
		labels := strings.Split(m[3], ", ")
		sort.Strings(labels)
		documented[m[1]] = m[2] + ": " + strings.Join(labels, ", ")
	}

	rec, reg := newRecorder(t)
	recordEverything(rec)
	if err := kooperprom.RegisterRESTClientMetrics(reg); err != nil {
		t.Fatal(err)
	}
	restRequest(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := map[string]string{}
	for _, mf := range mfs {
		var labels []string
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, lp.GetName())
		}
		sort.Strings(labels)
		gathered[mf.GetName()] = strings.ToLower(mf.GetType().String()) + ": " + strings.Join(labels, ", ")
	}

	for name, want := range gathered {
		if got, ok := documented[name]; !ok {
			t.Errorf("got %s (%s) gathered but not in the doc table, want it documented", name, want)
		} else if got != want {
			t.Errorf("got %s documented as %q, want %q", name, got, want)
		}
	}
	for name := range documented {
		if _, ok := gathered[name]; !ok {
			t.Errorf("got %s in the doc table but not gathered, want it removed", name)
		}
	}
}
