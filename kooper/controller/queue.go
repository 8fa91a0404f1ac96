package controller

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/kooperkit/kooper/kooper/internal/handling"
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
//
// order also keeps why each key was queued (reason.go): the reasons of the
// adds since the key last came out, which the worker that took it hands
// to the handler.
type order struct {
	// mu guards everything below: wanted and delayed are written by the
	// controller before it adds a key to the workqueue, popped is read by
	// the worker that took a key, the rest is the workqueue's.
	mu sync.Mutex
	// wanted is, for each key, the line asked for it by the adds since it
	// last came out (the highest wins) and their reasons. A key with no
	// entry (added by the workqueue itself, after a delay or a backoff)
	// goes in the fast line.
	wanted map[string]wanted
	// delayed are the reasons of a key's last delayed add (a retry, a
	// requeue, a wait for the right to handle), until it comes due.
	delayed map[string]handling.Reasons
	// adding counts, per key, the controller's adds in progress (between
	// want and added): a push or touch of a key with none is the
	// workqueue's own, a delayed add coming due.
	adding map[string]int
	// popped holds the reasons of the keys that came out, until the worker
	// that took each reads them (take).
	popped map[string]handling.Reasons
	lines  [2][]entry // by priority; may hold stale entries of moved keys
	in     map[string]entry
	seq    uint64
}

// wanted is what the adds of a waiting key asked: its line and why.
type wanted struct {
	p       priority
	reasons handling.Reasons
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
	return &order{
		wanted: map[string]wanted{}, delayed: map[string]handling.Reasons{},
		popped: map[string]handling.Reasons{}, adding: map[string]int{}, in: map[string]entry{},
	}
}

// want records that key is being added with priority p, for reason r.
func (o *order) want(key string, p priority, r handling.Reason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.wanted[key]
	if !ok || p > w.p {
		w.p = p
	}
	w.reasons.Add(r)
	o.wanted[key] = w
	o.adding[key]++
}

// added says that the workqueue's Add of key that want announced has
// returned.
func (o *order) added(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.adding[key]--; o.adding[key] <= 0 {
		delete(o.adding, key)
	}
}

// later records the reasons of a delayed add of key, which the workqueue
// makes itself once the delay is over.
func (o *order) later(key string, rs handling.Reasons) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.delayed[key] = rs
}

// take returns the reasons of key, which came out of the queue for the
// worker calling it.
func (o *order) take(key string) handling.Reasons {
	o.mu.Lock()
	defer o.mu.Unlock()
	rs := o.popped[key]
	delete(o.popped, key)
	return rs
}

// priorityOf returns the line asked for key, with o.mu held.
func (o *order) priorityOf(key string) priority {
	if w, ok := o.wanted[key]; ok {
		return w.p
	}
	return priorityHigh
}

// Push adds a key that is not waiting.
func (o *order) Push(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.due(key)
	o.line(key, o.priorityOf(key))
}

// Touch is called when a waiting key is added again: it moves to the end of
// the fast line if it waits in the slow one and is now wanted fast.
func (o *order) Touch(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.due(key)
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
			o.pop(e.key)
			return e.key
		}
	}
	return ""
}

// due is called, with o.mu held, when the workqueue pushes or touches
// key. Outside an add of the controller's (want ... added), the workqueue
// added key itself: a delayed add came due, and its reasons join the
// key's. (A key added again while a worker held it is pushed when the
// worker is done: a delayed add still pending then gives its reasons
// early, and none when it comes due.)
func (o *order) due(key string) {
	rs, ok := o.delayed[key]
	if !ok || o.adding[key] > 0 {
		return
	}
	delete(o.delayed, key)
	w, ok := o.wanted[key]
	if !ok {
		w.p = priorityHigh // the line of the workqueue's own adds
	}
	for _, r := range rs.All() {
		w.reasons.Add(r)
	}
	o.wanted[key] = w
}

// pop moves the reasons of key, which is coming out, where take finds
// them, with o.mu held.
func (o *order) pop(key string) {
	w := o.wanted[key]
	delete(o.wanted, key)
	if w.reasons.Len() > 0 {
		o.popped[key] = w.reasons
	}
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
