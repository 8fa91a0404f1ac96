package sharding

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/watchlist"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// The tests of this file's package drive a Runner's slots by hand, as its
// loop does (acquire, releaseSlot, suspendSlots, gate.right), without
// Leases: what the slot gate and the Retriever do with them.

// modes are the two ways a cache fills: a streamed initial list
// (watch-list) and LIST then WATCH (fakes and older servers).
var modes = []struct {
	name string
	opts fakeapi.Options
}{
	{"watch-list", fakeapi.Options{}},
	{"list+watch", fakeapi.Options{DisableWatchList: true}},
}

// newRunner returns a Runner of count slots whose loop never runs: the
// test acquires and releases its slots.
func newRunner(t *testing.T, count int) *Runner {
	t.Helper()
	r, err := New(Config{Name: "test", Namespace: "ns", Client: fake.NewClientset().CoordinationV1(), Slots: count})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.gate.right.Stop)
	return r
}

// start builds a controller for cfg with r's Handler and Retriever, binds
// it to r in mode (as Run does once it has detected the mode) and runs it
// until the test ends.
func start(t *testing.T, r *Runner, mode Mode, cfg controller.Config, sources ...controller.Source) *controller.Controller {
	t.Helper()
	return startCounting(t, r, mode, cfg, nil, sources...)
}

// startCounting is start with the calls the controller's cache makes to
// r's Retriever counted in calls (nil: not counted).
func startCounting(t *testing.T, r *Runner, mode Mode, cfg controller.Config, calls *atomic.Int64, sources ...controller.Source) *controller.Controller {
	t.Helper()
	cfg.Handler = r.Handler(cfg.Handler)
	cfg.Retriever = r.Retriever(cfg.Retriever)
	if calls != nil {
		cfg.Retriever = counting{cfg.Retriever, calls}
	}
	c, err := controller.New(cfg, sources...)
	if err != nil {
		t.Fatal(err)
	}
	r.mode.Store(mode)
	r.sharded = append(r.sharded, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return c
}

// counting counts the List and Watch calls to a Retriever.
type counting struct {
	controller.Retriever
	calls *atomic.Int64
}

func (c counting) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	c.calls.Add(1)
	return c.Retriever.List(ctx, opts)
}

func (c counting) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	c.calls.Add(1)
	return c.Retriever.Watch(ctx, opts)
}

func (c counting) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Retriever)
}

// shardedPod is pod i, with a UID shaped like the API server's (random
// hex): FNV-1a's high bits of short similar strings such as "uid-001"
// would put every pod in a few slots.
func shardedPod(i int) *corev1.Pod {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	uid := fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%03d", i), UID: types.UID(uid)}}
}

// uidInSlot returns a UID whose slot of count is slot.
func uidInSlot(t *testing.T, prefix string, slot, count int) types.UID {
	t.Helper()
	for i := range 1000 {
		uid := types.UID(fmt.Sprintf("%d-%s", i, prefix)) // FNV's top bits vary with the first bytes
		if SlotOf(uid, count) == slot {
			return uid
		}
	}
	t.Fatal("no UID in the slot")
	return ""
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle gives the controller time to do something it must not do.
func settle() { time.Sleep(300 * time.Millisecond) }
