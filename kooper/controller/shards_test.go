package controller_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// rangeRE is one shardRange of a selector.
var rangeRE = regexp.MustCompile(`shardRange\(object\.metadata\.uid, '(0x[0-9a-f]+)', '(0x[0-9a-f]+)'\)`)

// requirements parses SlotSelector's output into the API server's own
// requirement type.
func requirements(t *testing.T, selector string) []sharding.ShardRangeRequirement {
	t.Helper()
	var reqs []sharding.ShardRangeRequirement
	for _, m := range rangeRE.FindAllStringSubmatch(selector, -1) {
		reqs = append(reqs, sharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: m[1], End: m[2]})
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
				slot := controller.SlotOf(uid, count)
				for _, s := range []int{slot, (slot + 1) % count} {
					got, err := sharding.NewSelector(requirements(t, controller.SlotSelector([]int{s}, count))...).Matches(obj)
					if err != nil {
						t.Fatal(err)
					}
					if want := s == slot; got != want {
						t.Fatalf("uid %s (hash %s) in slot %d of %d: the selector of slot %d matches it: %v, want %v", uid, sharding.HashField(string(uid)), slot, count, s, got, want)
					}
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
		{nil, 8, ""},
		{[]int{0}, 1, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{[]int{1}, 2, "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"},
		{[]int{5, 0, 1, 2}, 8, "shardRange(object.metadata.uid, '0x0000000000000000', '0x6000000000000000') || shardRange(object.metadata.uid, '0xa000000000000000', '0xc000000000000000')"},
		{[]int{0, 1, 2, 3}, 4, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
	}
	for _, tt := range tests {
		if got := controller.SlotSelector(tt.slots, tt.count); got != tt.want {
			t.Errorf("SlotSelector(%v, %d) = %q, want %q", tt.slots, tt.count, got, tt.want)
		}
	}
	for _, n := range []int{0, 3, 512, -2} {
		if controller.ValidSlotCount(n) {
			t.Errorf("ValidSlotCount(%d) = true", n)
		}
		if _, err := controller.NewShards(n, false); !errors.Is(err, controller.ErrInvalidConfig) {
			t.Errorf("NewShards(%d) = %v, want ErrInvalidConfig", n, err)
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

// shardedPod is pod i, with a UID shaped like the API server's (random
// hex): FNV-1a's high bits of short similar strings such as "uid-001"
// would put every pod in a few slots.
func shardedPod(i int) *corev1.Pod {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	uid := fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%03d", i), UID: types.UID(uid)}}
}

// runSharded runs a new controller with shards until the test ends.
func runSharded(t *testing.T, cfg controller.Config, shards *controller.Shards) {
	t.Helper()
	c, err := controller.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.RunSharded(ctx, shards) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunSharded: %v", err)
		}
	})
}

// Two replicas (client-side) over one set of pods handle disjoint shares;
// slots moved back and forth, released first, while the pods keep changing
// and handlings of the slots run, never put one key on both, and every pod's last version is
// handled by the replica that owns it at the end.
func TestShardedReplicasNeverHandleOneKeyAtOnce(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			const pods, count = 120, 8
			r := fakeapi.NewRetriever(&corev1.Pod{}, mode.opts)
			for i := range pods {
				if _, err := r.Add(shardedPod(i)); err != nil {
					t.Fatal(err)
				}
			}
			rec := newHandlings(5 * time.Millisecond)
			a, _ := controller.NewShards(count, false)
			b, _ := controller.NewShards(count, false)
			// a starts with every slot and b with none, so that b is idle
			// and takes a moved slot's keys at once: a release that did not
			// wait for a's running handlings would show as an overlap.
			for s := range count {
				_ = a.Acquire(s)
			}
			runSharded(t, controller.Config{Name: "a", Retriever: r, Handler: rec.handler("a"), ConcurrentWorkers: 4}, a)
			runSharded(t, controller.Config{Name: "b", Retriever: r, Handler: rec.handler("b"), ConcurrentWorkers: 4}, b)

			// Writers change every pod while slots move.
			ctx, stopWriters := context.WithCancel(context.Background())
			var writers sync.WaitGroup
			for w := range 3 {
				writers.Go(func() {
					for round := 0; ctx.Err() == nil; round++ {
						p := shardedPod((round*7 + w*41) % pods)
						p.Labels = map[string]string{"round": fmt.Sprint(round)}
						if _, err := r.Update(p); err != nil {
							t.Error(err)
							return
						}
						time.Sleep(time.Millisecond)
					}
				})
			}
			time.Sleep(100 * time.Millisecond)
			move := func(from, to *controller.Shards, slot int) {
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := from.Release(rctx, slot); err != nil {
					t.Fatal(err)
				}
				if err := to.Acquire(slot); err != nil {
					t.Fatal(err)
				}
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
				if a.Owns(uid) {
					return "a"
				}
				return "b"
			}
			// Every pod's last version, handled by its owner.
			deadline := time.Now().Add(10 * time.Second)
			for {
				last, stored := rec.last(), versions(t, r)
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
			t.Logf("%d handlings (%v), none overlapping; a owns %v, b %v", len(rec.done), byReplica, a.Acquired(), b.Acquired())
		})
	}
}

// versions returns the stored resourceVersion of every pod, by key.
func versions(t *testing.T, r *fakeapi.Retriever) map[string]string {
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

// Release returns only once the slot's running handling has returned, and
// no key of the slot starts after it was called; Suspend cancels the
// running handlings' contexts.
func TestReleaseWaitsForTheSlotsHandlings(t *testing.T) {
	r := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	p := shardedPod(1)
	if _, err := r.Add(p); err != nil {
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
	shards, _ := controller.NewShards(4, false)
	slot := controller.SlotOf(p.UID, 4)
	_ = shards.Acquire(slot)
	runSharded(t, controller.Config{Name: "c", Retriever: r, Handler: h}, shards)
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := shards.Release(ctx, slot); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Release while the handling runs = %v, want it to wait until its context's deadline", err)
	}
	if shards.Owns(p.UID) {
		t.Fatal("the slot is still owned after Release")
	}
	released := make(chan error, 1)
	go func() { released <- shards.Release(context.Background(), slot) }()
	select {
	case err := <-released:
		t.Fatalf("Release returned %v while the handling runs", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(unblock)
	if err := <-released; err != nil {
		t.Fatal(err)
	}

	// Acquired again: the pod is handled again, and Suspend cancels it.
	started = make(chan struct{})
	unblock = make(chan struct{})
	_ = shards.Acquire(slot)
	<-started
	if err := shards.Suspend(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	default:
		t.Fatal("Suspend returned before the handling's context was cancelled")
	}
	if got := shards.Acquired(); len(got) != 0 {
		t.Fatalf("acquired %v after Suspend, want none", got)
	}
}

// A replica whose share expired (SetValidUntil in the past: its Lease was
// not renewed in time, or the process was paused) takes no key, whichever
// slot; once renewed it handles again.
func TestAnExpiredShareTakesNoKey(t *testing.T) {
	r := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	handled := make(chan string, 10)
	h := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		handled <- obj.(metav1.Object).GetResourceVersion()
		return nil
	})
	shards, _ := controller.NewShards(1, false)
	shards.SetValidUntil(time.Now().Add(-time.Second))
	_ = shards.Acquire(0)
	if _, err := r.Add(shardedPod(1)); err != nil {
		t.Fatal(err)
	}
	runSharded(t, controller.Config{Name: "c", Retriever: r, Handler: h}, shards)
	select {
	case rv := <-handled:
		t.Fatalf("handled version %s while the share had expired", rv)
	case <-time.After(300 * time.Millisecond):
	}
	shards.SetValidUntil(time.Now().Add(time.Minute))
	p := shardedPod(1)
	p.Labels = map[string]string{"changed": "yes"}
	if _, err := r.Update(p); err != nil {
		t.Fatal(err)
	}
	select {
	case <-handled:
	case <-time.After(5 * time.Second):
		t.Fatal("not handled after the share was renewed")
	}
}
