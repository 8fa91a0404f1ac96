// Package track records what a controller's no-op handler has seen: when it
// first saw every seeded pod, and the latency of each churned pod's update.
// Handle never allocates, so the handler costs every implementation the
// same.
package track

import (
	"math"
	"slices"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
)

// Tracker is one controller's record. Build it with New before the
// measured part starts: it allocates everything it needs up front.
type Tracker struct {
	token string
	calls atomic.Int64

	seen      []atomic.Bool // pod i was handled at least once
	seenCount atomic.Int64
	allSeen   chan struct{}
	allSeenAt atomic.Int64 // Unix nanoseconds
	firstAt   atomic.Int64 // Unix nanoseconds of the first seeded pod's handling
	firstSeen chan struct{}

	churned      []atomic.Bool // pod i was handled carrying token
	latency      []int64       // of pod i's churn update, in nanoseconds
	churnedCount atomic.Int64
	allChurned   chan struct{}
}

// New returns a Tracker for n seeded pods of which the first u are churned
// with token. With n = 0 it tracks only the first handling with token of
// pods 0 to u-1 (pods.Name): pods created during a run.
func New(n, u int, token string) *Tracker {
	t := &Tracker{
		token:      token,
		seen:       make([]atomic.Bool, n),
		allSeen:    make(chan struct{}),
		firstSeen:  make(chan struct{}),
		churned:    make([]atomic.Bool, u),
		latency:    make([]int64, u),
		allChurned: make(chan struct{}),
	}
	if n == 0 {
		close(t.allSeen)
		close(t.firstSeen)
	}
	if u == 0 {
		close(t.allChurned)
	}
	return t
}

// Handle is the handler's whole work: note that the pod was seen and, the
// first time it carries the run's token, how long after its send time.
// Objects that are not benchmark pods are ignored.
func (t *Tracker) Handle(obj metav1.Object) {
	t.calls.Add(1)
	i, ok := pods.Index(obj.GetName())
	if !ok {
		return
	}
	if i < len(t.seen) && t.seen[i].CompareAndSwap(false, true) {
		if t.firstAt.Load() == 0 && t.firstAt.CompareAndSwap(0, time.Now().UnixNano()) {
			close(t.firstSeen)
		}
		if t.seenCount.Add(1) == int64(len(t.seen)) {
			t.allSeenAt.Store(time.Now().UnixNano())
			close(t.allSeen)
		}
	}
	if i >= len(t.churned) {
		return
	}
	annotations := obj.GetAnnotations()
	if annotations[pods.TokenAnnotation] != t.token {
		return
	}
	sent, ok := pods.ParseSent(annotations[pods.SentAnnotation])
	if !ok || !t.churned[i].CompareAndSwap(false, true) {
		return
	}
	t.latency[i] = time.Now().UnixNano() - sent
	if t.churnedCount.Add(1) == int64(len(t.churned)) {
		close(t.allChurned)
	}
}

// AllSeen is closed once every seeded pod was handled.
func (t *Tracker) AllSeen() <-chan struct{} { return t.allSeen }

// FirstSeen is closed once the first seeded pod was handled.
func (t *Tracker) FirstSeen() <-chan struct{} { return t.firstSeen }

// AllSeenAt is when the last seeded pod was first handled (zero before).
func (t *Tracker) AllSeenAt() time.Time {
	if ns := t.allSeenAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// FirstSeenAt is when the first seeded pod was first handled (zero before).
func (t *Tracker) FirstSeenAt() time.Time {
	if ns := t.firstAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Seen is how many seeded pods were handled so far.
func (t *Tracker) Seen() int { return int(t.seenCount.Load()) }

// AllChurned is closed once every churned pod was handled with the token.
func (t *Tracker) AllChurned() <-chan struct{} { return t.allChurned }

// Churned is how many churned pods were handled with the token so far.
func (t *Tracker) Churned() int { return int(t.churnedCount.Load()) }

// Calls is how many times Handle was called.
func (t *Tracker) Calls() int64 { return t.calls.Load() }

// Latencies returns the churn latencies, sorted; call it after AllChurned.
func (t *Tracker) Latencies() []time.Duration {
	ls := make([]time.Duration, len(t.latency))
	for i, ns := range t.latency {
		ls[i] = time.Duration(ns)
	}
	slices.Sort(ls)
	return ls
}

// Percentile returns the p-th percentile (0 < p <= 1, nearest rank) of
// sorted latencies, or 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted))*p)) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}
