package controller

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/internal/handling"
)

// testQueue returns a controller queue on clock, shut down at the end.
func testQueue(t testing.TB, clock *testingclock.FakeClock) *workQueue {
	t.Helper()
	cfg := Config{clock: clock, MetricsRecorder: noopRecorder{}}
	cfg.defaults()
	q := (&Controller{cfg: cfg}).newQueue()
	t.Cleanup(q.ShutDown)
	return q
}

// drain takes every waiting key, marking each done, and returns them in
// order.
func drain(q *workQueue) []string {
	var got []string
	for q.Len() > 0 {
		key, _ := q.Get()
		got = append(got, key)
		q.Done(key)
	}
	return got
}

func TestTheQueueServesChangesBeforeListedKeys(t *testing.T) {
	type add struct {
		key string
		p   priority
	}
	low := func(keys ...string) []add {
		var adds []add
		for _, k := range keys {
			adds = append(adds, add{k, priorityLow})
		}
		return adds
	}
	tests := []struct {
		name string
		adds []add
		want []string
	}{
		{"one line is first in, first out", low("a", "b", "c"), []string{"a", "b", "c"}},
		{"a change goes before listed keys", append(low("a", "b"), add{"c", priorityHigh}), []string{"c", "a", "b"}},
		{"changes keep their order", append(low("a"), add{"c", priorityHigh}, add{"d", priorityHigh}), []string{"c", "d", "a"}},
		{"a listed key that changes moves to the end of the fast line", append(low("a", "b"), add{"x", priorityHigh}, add{"b", priorityHigh}), []string{"x", "b", "a"}},
		{"a changed key is never moved down", []add{{"a", priorityLow}, {"b", priorityHigh}, {"b", priorityLow}}, []string{"b", "a"}},
		{"a key added twice waits once", append(low("a", "a"), add{"a", priorityHigh}, add{"a", priorityHigh}), []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := testQueue(t, testingclock.NewFakeClock(time.Now()))
			for _, a := range tt.adds {
				q.add(a.key, a.p, reasonChanged)
			}
			if got := drain(q); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAKeyOnAWorkerIsNotHandedOutAgainUntilDone(t *testing.T) {
	defer goleak.VerifyNone(t)
	q := testQueue(t, testingclock.NewFakeClock(time.Now()))
	q.add("a", priorityLow, reasonChanged)
	key, _ := q.Get()
	q.add("a", priorityHigh, reasonChanged) // changed while being handled
	q.add("b", priorityLow, reasonChanged)
	second := make(chan string)
	go func() {
		k, _ := q.Get()
		second <- k
	}()
	if got := <-second; got != "b" {
		t.Fatalf("got %q while a is on a worker, want b", got)
	}
	q.Done("b")
	third := make(chan string)
	go func() {
		k, _ := q.Get()
		third <- k
	}()
	select {
	case k := <-third:
		t.Fatalf("got %q while a is still on a worker, want nothing", k)
	case <-time.After(100 * time.Millisecond):
	}
	q.Done(key)
	if got := <-third; got != "a" {
		t.Errorf("got %q once a was done, want a again (it changed meanwhile)", got)
	}
	q.Done("a")
	q.ShutDown()
}

func TestRetriesAndRequeuesWaitTheirDelayThenGoFirst(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Now())
	q := testQueue(t, clock)
	q.add("failing", priorityLow, reasonChanged)
	key, _ := q.Get()
	q.AddRateLimited(key) // a retry, after RetryBaseDelay (with jitter)
	q.Done(key)
	q.AddAfter("periodic", time.Second) // a RequeueAfter
	q.add("listed", priorityLow, reasonChanged)
	if got := q.NumRequeues("failing"); got != 1 {
		t.Errorf("got %d requeues, want 1", got)
	}
	if got := drain(q); !slices.Equal(got, []string{"listed"}) {
		t.Fatalf("got %q before the delays passed, want only the listed key", got)
	}
	q.add("listed-2", priorityLow, reasonChanged)
	// One due key per step: keys that fall due at one step come back in
	// any order, as client-go's delaying queue may read one of them from
	// its channel after the step (it is then due at once) and the other
	// from its heap. The retry is due within 240ms, the requeue at 1s.
	stepUntilLen(t, q, clock, 2, 500*time.Millisecond, 100*time.Millisecond, 900*time.Millisecond)
	stepUntilLen(t, q, clock, 3, time.Second, 100*time.Millisecond, 0)
	// The delayed keys come back in the order they became due.
	if got, want := drain(q), []string{"failing", "periodic", "listed-2"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want the retry and the requeue before the listed key: %q", got, want)
	}
	q.Forget("failing")
	if got := q.NumRequeues("failing"); got != 0 {
		t.Errorf("got %d requeues after Forget, want 0", got)
	}
}

// stepUntilLen steps clock by first, then by more while q holds fewer than
// n keys, at most up to a total of limit (0: no limit), and fails if q
// never holds n. The extra steps are for a timer the delaying queue armed
// from a reading of the clock taken just before a step: it falls due only
// after a later one.
func stepUntilLen(t *testing.T, q *workQueue, clock *testingclock.FakeClock, n int, first, more, limit time.Duration) {
	t.Helper()
	clock.Step(first)
	stepped := first
	deadline := time.Now().Add(5 * time.Second)
	for q.Len() < n {
		if time.Now().After(deadline) {
			t.Fatalf("got %d keys waiting after stepping the clock %s, want %d", q.Len(), stepped, n)
		}
		time.Sleep(10 * time.Millisecond)
		if q.Len() < n && (limit == 0 || stepped+more <= limit) {
			clock.Step(more)
			stepped += more
		}
	}
	if got := q.Len(); got != n {
		t.Fatalf("got %d keys waiting after stepping the clock %s, want %d", got, stepped, n)
	}
}

// FuzzQueueOrder runs random adds, takes and dones on a queue and on a
// model of what it promises: one key waits once, a key on a worker is not
// handed out again until done (a change meanwhile queues it once done),
// the fast line comes first, each line is first in first out, and a slow
// key that changes moves to the end of the fast line. Every step must agree
// with the model, and every key added comes out.
func FuzzQueueOrder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{2, 10, 18, 1, 9, 64, 72, 65, 128, 129, 130})
	f.Fuzz(func(t *testing.T, ops []byte) {
		q := testQueue(t, testingclock.NewFakeClock(time.Now()))
		m := newModel()
		for _, op := range ops {
			key := fmt.Sprintf("k%d", op&7)
			switch op >> 6 {
			case 0, 1: // add, slow or fast
				p := priority(op >> 6)
				if op&8 != 0 {
					p = priorityHigh
				}
				q.add(key, p, reasonChanged)
				m.add(key, p)
			case 2: // take the next key
				if q.Len() != m.len() {
					t.Fatalf("got %d keys waiting, want %d", q.Len(), m.len())
				}
				if m.len() == 0 {
					continue
				}
				got, _ := q.Get()
				if want := m.pop(); got != want {
					t.Fatalf("got %q, want %q (model %+v)", got, want, m)
				}
			case 3: // done with a key on a worker
				if k, ok := m.anyProcessing(op); ok {
					q.Done(k)
					m.done(k)
				}
			}
		}
		for _, k := range slices.Sorted(mapKeys(m.processing)) {
			q.Done(k)
			m.done(k)
		}
		for m.len() > 0 {
			got, _ := q.Get()
			if want := m.pop(); got != want {
				t.Fatalf("draining: got %q, want %q", got, want)
			}
			q.Done(got)
			m.done(got)
		}
		if q.Len() != 0 {
			t.Fatalf("got %d keys left, want 0", q.Len())
		}
	})
}

// model is the queue's promise, written plainly.
type model struct {
	lines      [2][]string
	waiting    map[string]priority // waiting keys and their line
	processing map[string]bool
	again      map[string]priority // added while on a worker
}

func newModel() *model {
	return &model{waiting: map[string]priority{}, processing: map[string]bool{}, again: map[string]priority{}}
}

func (m *model) add(key string, p priority) {
	if m.processing[key] {
		if cur, ok := m.again[key]; !ok || p > cur {
			m.again[key] = p
		}
		return
	}
	cur, ok := m.waiting[key]
	switch {
	case !ok:
		m.waiting[key] = p
		m.lines[p] = append(m.lines[p], key)
	case cur == priorityLow && p == priorityHigh:
		m.waiting[key] = priorityHigh
		m.lines[priorityLow] = slices.DeleteFunc(m.lines[priorityLow], func(k string) bool { return k == key })
		m.lines[priorityHigh] = append(m.lines[priorityHigh], key)
	}
}

func (m *model) len() int { return len(m.waiting) }

func (m *model) pop() string {
	p := priorityHigh
	if len(m.lines[p]) == 0 {
		p = priorityLow
	}
	key := m.lines[p][0]
	m.lines[p] = m.lines[p][1:]
	delete(m.waiting, key)
	m.processing[key] = true
	return key
}

func (m *model) done(key string) {
	delete(m.processing, key)
	if p, ok := m.again[key]; ok {
		delete(m.again, key)
		m.add(key, p)
	}
}

// anyProcessing picks a key on a worker, chosen by op.
func (m *model) anyProcessing(op byte) (string, bool) {
	keys := slices.Sorted(mapKeys(m.processing))
	if len(keys) == 0 {
		return "", false
	}
	return keys[int(op)%len(keys)], true
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The order is safe on its own, whoever calls it: workqueue.Queue does not
// promise that client-go calls Push, Touch, Len and Pop under the
// workqueue's lock, though it does today. With -race, an order that relied
// on that lock fails here.
func TestTheQueueOrderIsSafeWithoutTheWorkqueuesLock(t *testing.T) {
	o := newOrder()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				key := fmt.Sprintf("k%d", (w+i)%7)
				o.want(key, priority(i%2), reasonChanged)
				o.added(key)
				if i%3 == 0 {
					o.Touch(key)
				} else {
					o.Push(key)
				}
				if o.Len() > 0 {
					_ = o.Pop()
				}
			}
		})
	}
	wg.Wait()
	for o.Len() > 0 {
		if o.Pop() == "" {
			t.Fatal("got no key from Pop while Len is above zero")
		}
	}
	if got := o.Pop(); got != "" {
		t.Errorf("got %q from an empty order, want \"\"", got)
	}
}

// The order hands each key's reasons to the handling that takes it: the
// controller's adds', and a delayed add's once it comes due, whether the
// key waits then or not. None is left behind.
func TestTheOrderKeepsEachKeysReasons(t *testing.T) {
	retry := reasons(handling.Reason{Why: "retry", Detail: "boom"})
	// add is the controller's add of key: want, the workqueue's push or
	// touch, added.
	add := func(o *order, key string, waiting bool) {
		o.want(key, priorityHigh, reasonChanged)
		if waiting {
			o.Touch(key)
		} else {
			o.Push(key)
		}
		o.added(key)
	}
	next := func(o *order) []string {
		key := o.Pop()
		return o.take(key).Strings()
	}
	tests := []struct {
		name  string
		steps func(o *order) [][]string // the reasons of each handling
	}{
		{"an add", func(o *order) [][]string {
			add(o, "k", false)
			return [][]string{next(o)}
		}},
		{"a delayed add coming due", func(o *order) [][]string {
			o.later("k", retry)
			o.Push("k") // the workqueue's own add, once the delay is over
			return [][]string{next(o)}
		}},
		{"a delayed add coming due while the key waits", func(o *order) [][]string {
			add(o, "k", false)
			o.later("k", retry)
			o.Touch("k")
			return [][]string{next(o)}
		}},
		{"an add while a delayed add is pending", func(o *order) [][]string {
			o.later("k", retry)
			add(o, "k", false)
			first := next(o)
			o.Push("k") // the delay is over
			return [][]string{first, next(o)}
		}},
	}
	want := map[string][][]string{
		"an add":                   {{"changed"}},
		"a delayed add coming due": {{"retry (boom)"}},
		"a delayed add coming due while the key waits": {{"changed", "retry (boom)"}},
		"an add while a delayed add is pending":        {{"changed"}, {"retry (boom)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrder()
			got := tt.steps(o)
			if !reflect.DeepEqual(got, want[tt.name]) {
				t.Errorf("got reasons %q, want %q", got, want[tt.name])
			}
			if len(o.wanted)+len(o.delayed)+len(o.popped)+len(o.adding) != 0 {
				t.Errorf("left behind: wanted %v, delayed %v, popped %v, adding %v", o.wanted, o.delayed, o.popped, o.adding)
			}
		})
	}
}
