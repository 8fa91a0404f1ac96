package sharding

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// rangeRE is one shardRange of a selector.
var rangeRE = regexp.MustCompile(`shardRange\(object\.metadata\.uid, '(0x[0-9a-f]+)', '(0x[0-9a-f]+)'\)`)

// requirements parses slotSelector's output into the API server's own
// requirement type.
func requirements(selector string) []apisharding.ShardRangeRequirement {
	var reqs []apisharding.ShardRangeRequirement
	for _, m := range rangeRE.FindAllStringSubmatch(selector, -1) {
		reqs = append(reqs, apisharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: m[1], End: m[2]})
	}
	return reqs
}

// An object's slot is the one whose selector the API server's matcher
// (k8s.io/apimachinery/pkg/sharding, the code the server runs) matches it
// with, and no other slot's selector matches it.
func TestSlotOfAgreesWithTheAPIServersSelector(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, count := range []int{1, 2, 4, 32, 256} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			for range 500 {
				uid := types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32N(1<<16), rng.Uint32N(1<<16), rng.Uint32N(1<<16), rng.Uint64N(1<<48)))
				obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}
				slot := SlotOf(uid, count)
				for _, s := range []int{slot, (slot + 1) % count} {
					got, err := apisharding.NewSelector(requirements(slotSelector([]int{s}, count))...).Matches(obj)
					if err != nil {
						t.Fatal(err)
					}
					if want := s == slot; got != want {
						t.Fatalf("uid %s (hash %s) in slot %d of %d: the selector of slot %d matches it: %v, want %v", uid, apisharding.HashField(string(uid)), slot, count, s, got, want)
					}
				}
				// A replica with no slot selects none of them.
				if got, _ := apisharding.NewSelector(requirements(slotSelector(nil, count))...).Matches(obj); got {
					t.Fatalf("uid %s: the selector of no slot matches it", uid)
				}
			}
		})
	}
}

func TestSlotSelector(t *testing.T) {
	tests := []struct {
		slots []int
		count int
		want  string
	}{
		{nil, 8, noSlot},
		{[]int{0}, 1, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{[]int{1}, 2, "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"},
		{[]int{5, 0, 1, 2}, 8, "shardRange(object.metadata.uid, '0x0000000000000000', '0x6000000000000000') || shardRange(object.metadata.uid, '0xa000000000000000', '0xc000000000000000')"},
		{[]int{0, 1, 2, 3}, 4, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
	}
	for _, tt := range tests {
		if got := slotSelector(tt.slots, tt.count); got != tt.want {
			t.Errorf("slotSelector(%v, %d) = %q, want %q", tt.slots, tt.count, got, tt.want)
		}
	}
	for _, n := range []int{0, 3, 512, -2} {
		if validSlotCount(n) {
			t.Errorf("validSlotCount(%d) = true", n)
		}
	}
	for _, n := range []int{1, 2, 32, 256} {
		if !validSlotCount(n) {
			t.Errorf("validSlotCount(%d) = false", n)
		}
	}
}

// interval is one handling, for the overlap checks.
type interval struct {
	replica    string
	key        string
	version    string
	start, end time.Time
}

// handlings records every handling of every replica.
type handlings struct {
	mu      sync.Mutex
	done    []interval
	running map[string]string // key → replica handling it now
	overlap []string
	delay   time.Duration
}

func newHandlings(delay time.Duration) *handlings {
	return &handlings{running: map[string]string{}, delay: delay}
}

func (r *handlings) handler(replica string) controller.Handler {
	return controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
		m := obj.(metav1.Object)
		key := m.GetNamespace() + "/" + m.GetName()
		r.mu.Lock()
		if other, busy := r.running[key]; busy {
			r.overlap = append(r.overlap, fmt.Sprintf("%s on %s while %s handles it", key, replica, other))
		}
		r.running[key] = replica
		r.mu.Unlock()
		start := time.Now()
		select {
		case <-time.After(r.delay):
		case <-ctx.Done():
		}
		r.mu.Lock()
		delete(r.running, key)
		r.done = append(r.done, interval{replica: replica, key: key, version: m.GetResourceVersion(), start: start, end: time.Now()})
		r.mu.Unlock()
		return nil
	})
}

// last returns, per key, the last version handled and by which replica.
func (r *handlings) last() map[string]interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]interval{}
	for _, iv := range r.done {
		if prev, ok := out[iv.key]; !ok || iv.end.After(prev.end) {
			out[iv.key] = iv
		}
	}
	return out
}

// versions returns the stored resourceVersion of every object, by key.
func versions(t *testing.T, r controller.Retriever) map[string]string {
	t.Helper()
	list, err := r.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, item := range items {
		m := item.(metav1.Object)
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out
}

// Two replicas over one set of pods handle disjoint shares; slots moved
// back and forth, released first, while the pods keep changing and
// handlings of the slots run, never put one key on both, and every pod's
// last version is handled by the replica that owns it at the end.
// Client-side, and server-side (the caches list again at each move).
func TestShardedReplicasNeverHandleOneKeyAtOnce(t *testing.T) {
	for _, sharding := range []Mode{ModeClientSide, ModeServerSide} {
		for _, mode := range modes {
			t.Run(string(sharding)+"/"+mode.name, func(t *testing.T) {
				const pods, count = 120, 8
				store := fakeapi.NewRetriever(&corev1.Pod{}, mode.opts)
				for i := range pods {
					if _, err := store.Add(shardedPod(i)); err != nil {
						t.Fatal(err)
					}
				}
				var source controller.Retriever = store
				if sharding == ModeServerSide {
					source = shardFilter{store}
				}
				rec := newHandlings(5 * time.Millisecond)
				a, b := newRunner(t, count), newRunner(t, count)
				// a starts with every slot and b with none, so that b is
				// idle and takes a moved slot's keys at once: a release
				// that did not wait for a's running handlings would show
				// as an overlap.
				a.acquire([]int{0, 1, 2, 3, 4, 5, 6, 7})
				start(t, a, sharding, controller.Config{Name: "a", Retriever: source, Handler: rec.handler("a"), ConcurrentWorkers: 4})
				start(t, b, sharding, controller.Config{Name: "b", Retriever: source, Handler: rec.handler("b"), ConcurrentWorkers: 4})

				// Writers change every pod while slots move.
				ctx, stopWriters := context.WithCancel(context.Background())
				var writers sync.WaitGroup
				for w := range 3 {
					writers.Go(func() {
						for round := 0; ctx.Err() == nil; round++ {
							p := shardedPod((round*7 + w*41) % pods)
							p.Labels = map[string]string{"round": fmt.Sprint(round)}
							if _, err := store.Update(p); err != nil {
								t.Error(err)
								return
							}
							time.Sleep(time.Millisecond)
						}
					})
				}
				time.Sleep(100 * time.Millisecond)
				move := func(from, to *Runner, slot int) {
					rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					if err := from.releaseSlot(rctx, slot); err != nil {
						t.Fatal(err)
					}
					to.acquire([]int{slot})
				}
				// Back and forth, each time while handlings of the slots run.
				for range 10 {
					move(a, b, 0)
					move(a, b, 1)
					time.Sleep(15 * time.Millisecond)
					move(b, a, 0)
					time.Sleep(15 * time.Millisecond)
				}
				move(a, b, 7)
				time.Sleep(50 * time.Millisecond)
				stopWriters()
				writers.Wait()

				owner := func(uid types.UID) string {
					if a.gate.holds(SlotOf(uid, count)) {
						return "a"
					}
					return "b"
				}
				// Every pod's last version, handled by its owner (server-side
				// once the caches have listed again, after client-go's
				// backoff).
				deadline := time.Now().Add(30 * time.Second)
				for {
					last, stored := rec.last(), versions(t, store)
					var missing []string
					for i := range pods {
						p := shardedPod(i)
						iv, ok := last["ns/"+p.Name]
						want := stored["ns/"+p.Name]
						if !ok || iv.version != want || iv.replica != owner(p.UID) {
							missing = append(missing, fmt.Sprintf("%s (last handled %+v, want version %s on %s)", p.Name, iv, want, owner(p.UID)))
						}
					}
					if len(missing) == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%d pods not handled at their last version by their owner, e.g. %s", len(missing), missing[0])
					}
					time.Sleep(20 * time.Millisecond)
				}
				rec.mu.Lock()
				defer rec.mu.Unlock()
				if len(rec.overlap) > 0 {
					t.Fatalf("%d overlapping handlings, e.g. %s", len(rec.overlap), rec.overlap[0])
				}
				if len(rec.done) < pods {
					t.Fatalf("only %d handlings", len(rec.done))
				}
				byReplica := map[string]int{}
				for _, iv := range rec.done {
					byReplica[iv.replica]++
				}
				t.Logf("%d handlings (%v), none overlapping; a owns %v, b %v", len(rec.done), byReplica, a.gate.acquired(), b.gate.acquired())
			})
		}
	}
}

// Releasing a slot returns only once its running handling has returned,
// and no key of the slot starts after it was called; suspending cancels
// the running handlings' contexts. The handler is never called for an
// object of a released slot.
func TestReleaseWaitsForTheSlotsHandlings(t *testing.T) {
	store := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	p := shardedPod(1)
	if _, err := store.Add(p); err != nil {
		t.Fatal(err)
	}
	started, unblock := make(chan struct{}), make(chan struct{})
	cancelled := make(chan error, 1)
	h := controller.HandlerFunc(func(ctx context.Context, _ runtime.Object) error {
		close(started)
		select {
		case <-unblock:
		case <-ctx.Done():
			cancelled <- ctx.Err()
		}
		return nil
	})
	r := newRunner(t, 4)
	slot := SlotOf(p.UID, 4)
	r.acquire([]int{slot})
	c := start(t, r, ModeClientSide, controller.Config{Name: "c", Retriever: store, Handler: h})
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := r.releaseSlot(ctx, slot); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("releasing while the handling runs = %v, want it to wait until its context's deadline", err)
	}
	if r.gate.holds(slot) {
		t.Fatal("the slot is still held after its release")
	}
	released := make(chan error, 1)
	go func() { released <- r.releaseSlot(context.Background(), slot) }()
	select {
	case err := <-released:
		t.Fatalf("release returned %v while the handling runs", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(unblock)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	// Enqueued while released: dropped before the handler.
	c.Enqueue("ns/" + p.Name)
	settle()

	// Acquired again: the pod is handled again, and suspending cancels it.
	started = make(chan struct{})
	unblock = make(chan struct{})
	r.acquire([]int{slot})
	<-started
	r.suspendSlots()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	default:
		t.Fatal("suspending returned before the handling's context was cancelled")
	}
	if got := r.gate.acquired(); len(got) != 0 {
		t.Fatalf("acquired %v after suspending, want none", got)
	}
}

// A replica whose right to handle ended (its Lease was not renewed in
// time, or the process was paused) takes no key, whichever slot; each is
// queued again a second later, so once renewed it handles them, with no
// change needed.
func TestAnExpiredShareTakesNoKey(t *testing.T) {
	store := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	handled := make(chan string, 10)
	h := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		handled <- obj.(metav1.Object).GetResourceVersion()
		return nil
	})
	r := newRunner(t, 1)
	r.gate.right.Set(time.Now().Add(-time.Second))
	r.acquire([]int{0})
	if _, err := store.Add(shardedPod(1)); err != nil {
		t.Fatal(err)
	}
	start(t, r, ModeClientSide, controller.Config{Name: "c", Retriever: store, Handler: h})
	select {
	case rv := <-handled:
		t.Fatalf("handled version %s while the right had ended", rv)
	case <-time.After(1500 * time.Millisecond): // the key is refused more than once
	}
	r.gate.right.Set(time.Now().Add(time.Minute))
	select {
	case <-handled:
	case <-time.After(5 * time.Second):
		t.Fatal("not handled after the right was renewed")
	}
}

// The handlings running when the right ends have their contexts
// cancelled, as under leader election (controller.SetValidUntil), and
// their keys are handled again once it is renewed.
func TestTheRunningHandlingsAreCancelledWhenTheRightEnds(t *testing.T) {
	store := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	if _, err := store.Add(shardedPod(1)); err != nil {
		t.Fatal(err)
	}
	var calls, cancelled atomic.Int32
	h := controller.HandlerFunc(func(ctx context.Context, _ runtime.Object) error {
		if calls.Add(1) == 1 {
			<-ctx.Done() // the first handling runs until it is cancelled
			cancelled.Add(1)
			return ctx.Err()
		}
		return nil
	})
	r := newRunner(t, 2)
	r.gate.right.Set(time.Now().Add(300 * time.Millisecond))
	r.acquire([]int{0, 1})
	start(t, r, ModeClientSide, controller.Config{Name: "c", Retriever: store, Handler: h})
	eventually(t, "the running handling is cancelled when the right ends", func() bool { return cancelled.Load() == 1 })
	settle()
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d handlings while the right had ended, want the cancelled one only", n)
	}
	r.gate.right.Set(time.Now().Add(time.Minute))
	eventually(t, "the cancelled key is handled again once the right is back", func() bool { return calls.Load() == 2 })
}

// A handler that panics behind the gate: the panic reaches the
// controller, which recovers it and retries, and the handling is no
// longer registered: releasing the slot returns at once.
func TestAPanicLeavesNoHandlingRegistered(t *testing.T) {
	store := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	if _, err := store.Add(shardedPod(1)); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	h := controller.HandlerFunc(func(context.Context, runtime.Object) error {
		if calls.Add(1) == 1 {
			panic("test: a bad object")
		}
		return nil
	})
	r := newRunner(t, 1)
	r.gate.right.Set(time.Now().Add(time.Minute))
	r.acquire([]int{0})
	start(t, r, ModeClientSide, controller.Config{Name: "c", Retriever: store, Handler: h})
	eventually(t, "the key is handled again after the panic", func() bool { return calls.Load() >= 2 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.releaseSlot(ctx, 0); err != nil {
		t.Fatalf("releasing the slot after the handlings returned: %v", err)
	}
}
