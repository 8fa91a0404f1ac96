package controller

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Fresh changes first.
//
// A controller's queue is client-go's rate-limiting workqueue, which keeps
// the guarantees the loop relies on (a key is in the queue once, never on
// two workers at once, per-key backoff, AddAfter, time-in-queue metrics),
// with one thing replaced: the order in which waiting keys come out.
// client-go lets a queue's order be plugged in (workqueue.Queue: Push, Pop,
// Touch, Len), and order below is that plug: two first-in first-out lines,
// and a key from the fast line always comes out first. order takes a lock
// of its own in every method: client-go calls them under the workqueue's
// lock today, but workqueue.Queue does not promise it, and an uncontended
// lock costs nanoseconds next to the workqueue's.
//
// Keys from the initial list and from resyncs go in the slow line; every
// other key (a change the watch saw, a retry, a RequeueAfter, Enqueue) goes
// in the fast line. So an object that changes while thousands of listed
// objects wait is handled next, not after them. A key already waiting in
// the slow line moves to the end of the fast line when it changes; a key is
// never moved down. The price: while changes keep the fast line busy, the
// slow line waits.

// priority is a key's line.
type priority int8

const (
	// priorityLow is the line of the initial list and resyncs.
	priorityLow priority = iota
	// priorityHigh is the line of everything else.
	priorityHigh
)

// sourcePriority returns the line of a key queued from source.
func sourcePriority(source string) priority {
	if source == sourceInitial || source == sourceResync {
		return priorityLow
	}
	return priorityHigh
}

// order is a workqueue.Queue[string] with a fast and a slow line. It is
// safe for concurrent use on its own.
type order struct {
	// mu guards everything below: wanted is written by the controller
	// before it adds a key to the workqueue, the rest by the workqueue.
	mu sync.Mutex
	// wanted is the line asked for a key by the adds since it last came
	// out: the highest wins. A key with no entry (added by the workqueue
	// itself, after a delay or a backoff) goes in the fast line.
	wanted map[string]priority
	lines  [2][]entry // by priority; may hold stale entries of moved keys
	in     map[string]entry
	seq    uint64
}

// entry is a key's place in a line. An entry in a line is stale unless in
// holds the same entry for its key.
type entry struct {
	key string
	p   priority
	seq uint64
}

var _ workqueue.Queue[string] = (*order)(nil)

func newOrder() *order {
	return &order{wanted: map[string]priority{}, in: map[string]entry{}}
}

// want records that key is being added with priority p.
func (o *order) want(key string, p priority) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.wanted[key]; !ok || p > cur {
		o.wanted[key] = p
	}
}

// priorityOf returns the line asked for key, with o.mu held.
func (o *order) priorityOf(key string) priority {
	if p, ok := o.wanted[key]; ok {
		return p
	}
	return priorityHigh
}

// Push adds a key that is not waiting.
func (o *order) Push(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.line(key, o.priorityOf(key))
}

// Touch is called when a waiting key is added again: it moves to the end of
// the fast line if it waits in the slow one and is now wanted fast.
func (o *order) Touch(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.in[key]; ok && e.p == priorityLow && o.priorityOf(key) == priorityHigh {
		o.line(key, priorityHigh)
	}
}

// line puts key at the end of line p, with o.mu held.
func (o *order) line(key string, p priority) {
	o.seq++
	e := entry{key: key, p: p, seq: o.seq}
	o.in[key] = e
	o.lines[p] = append(o.lines[p], e)
}

// Len returns the number of waiting keys.
func (o *order) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.in)
}

// Pop returns the first waiting key of the fast line, or else of the slow
// one; "" if none waits (the workqueue asks only after Len said one does,
// as its default queue, which panics when empty, needs).
func (o *order) Pop() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range []priority{priorityHigh, priorityLow} {
		for len(o.lines[p]) > 0 {
			e := o.lines[p][0]
			o.lines[p][0] = entry{}
			o.lines[p] = o.lines[p][1:]
			if o.in[e.key] != e {
				continue // stale: moved to the fast line since
			}
			delete(o.in, e.key)
			delete(o.wanted, e.key)
			return e.key
		}
	}
	return ""
}

// backoff is a per-key exponential rate limiter with jitter for the
// workqueue. Forget, called on every success, resets a key: a later failure
// starts again from the base delay and the full retry budget.
type backoff struct {
	base, max time.Duration
	mu        sync.Mutex
	failures  map[string]int
}

func newBackoff(base, max time.Duration) *backoff {
	return &backoff{base: base, max: max, failures: map[string]int{}}
}

// When returns the delay before retrying key and counts one more failure.
func (b *backoff) When(key string) time.Duration {
	b.mu.Lock()
	n := b.failures[key]
	b.failures[key] = n + 1
	b.mu.Unlock()
	d := b.base
	for i := 0; i < n && d < b.max; i++ {
		d *= 2
	}
	// Up to +20% jitter, so retries of objects that failed together spread.
	d += time.Duration(rand.Int64N(int64(d)/5 + 1))
	return min(d, b.max)
}

// Forget resets key's failure count.
func (b *backoff) Forget(key string) {
	b.mu.Lock()
	delete(b.failures, key)
	b.mu.Unlock()
}

// NumRequeues returns how many failures of key were counted since it was
// last forgotten.
func (b *backoff) NumRequeues(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[key]
}
