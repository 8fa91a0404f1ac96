package sharding_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// versioned returns a fake clientset that gives Leases a UID and a new
// resourceVersion on every write, as the API server does (the fake's
// tracker leaves them empty): replicas see each other renew.
func versioned(objs ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objs...)
	var rv atomic.Int64
	rv.Store(1000)
	client.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a, ok := a.(k8stesting.CreateAction); ok { // an UpdateAction too: same methods
			m := a.GetObject().(metav1.Object)
			if a.GetVerb() == "create" {
				m.SetUID(types.UID(fmt.Sprint("uid-", rv.Add(1))))
			}
			m.SetResourceVersion(fmt.Sprint(rv.Add(1)))
		}
		return false, nil, nil
	})
	return client
}

// crafted is a Lease of group "pods" that no replica wrote.
func crafted(name, count, slots string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels:      map[string]string{sharding.LabelGroup: "pods"},
			Annotations: map[string]string{sharding.AnnotationSlotCount: count, sharding.AnnotationSlots: slots}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("attacker"), LeaseDurationSeconds: ptr.To[int32](3600)},
	}
}

// warnings records the warnings a Runner logs.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) Debug(string, ...any) {}
func (w *warnings) Info(string, ...any)  {}
func (w *warnings) Warn(msg string, kv ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, msg+" "+fmt.Sprint(kv...))
}
func (w *warnings) Error(msg string, kv ...any) { w.Warn(msg, kv...) }
func (w *warnings) With(...any) log.Logger      { return w }

// about returns the warnings that contain s.
func (w *warnings) about(s string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, l := range w.lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// start runs a Runner for cfg until the test ends or stop is called.
func start(t *testing.T, cfg sharding.Config) (r *sharding.Runner, stop func()) {
	t.Helper()
	r, err := sharding.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newController(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, c) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return r, stop
}

// A Lease that no replica wrote, created beside a replica that holds every
// slot, takes none of them: for three renew deadlines the replica keeps
// its 4 slots and stays ready, and it logs one warning naming the Lease.
func TestACraftedLeaseTakesNoSlotFromARunningReplica(t *testing.T) {
	tests := []struct {
		name  string
		lease *coordinationv1.Lease
	}{
		{"another slot count claiming every slot", crafted("pods-crafted", "8", "0-7")},
		{"more slots than a replica may have, claiming every one", crafted("pods-crafted", "1024", "0-1023")},
		{"this slot count claiming every slot, named to sort first", crafted("pods-0", "4", "0-3")},
		{"garbage annotations", crafted("pods-crafted", "four", "0-3,,x")},
		{"claims out of range", crafted("pods-crafted", "4", "0-9")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := versioned()
			logs := &warnings{}
			cfg := quick(client)
			cfg.Logger = logs
			r, _ := start(t, cfg)
			eventually(t, "every slot is taken", func() bool { return len(r.Slots()) == 4 })
			if _, err := client.CoordinationV1().Leases("ns").Create(context.Background(), tt.lease, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for began := time.Now(); time.Since(began) < 3*cfg.RenewDeadline; time.Sleep(20 * time.Millisecond) {
				if got := r.Slots(); len(got) != 4 {
					t.Fatalf("%s after the crafted Lease: got slots %v, want [0 1 2 3]", time.Since(began).Round(time.Millisecond), got)
				}
				if _, err := r.Ready(); err != nil {
					t.Fatalf("not ready while holding every slot: %v", err)
				}
			}
			if got := logs.about(tt.lease.Name); len(got) != 1 {
				t.Errorf("got %d warnings naming %s, want 1: %q", len(got), tt.lease.Name, got)
			}
		})
	}
}

// A Lease that looks like a replica that just joined (this slot count, no
// claims) gets its share, but one that does not claim it within the
// renew deadline is no longer counted: the replica takes the share back,
// and says why.
func TestALeaseThatTakesNoShareCostsItForTheRenewDeadlineOnly(t *testing.T) {
	client := versioned()
	logs := &warnings{}
	cfg := quick(client)
	cfg.Logger = logs
	r, _ := start(t, cfg)
	eventually(t, "every slot is taken", func() bool { return len(r.Slots()) == 4 })
	if _, err := client.CoordinationV1().Leases("ns").Create(context.Background(), crafted("pods-silent", "4", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	eventually(t, "the silent Lease's share is given up", func() bool { return len(r.Slots()) == 2 })
	eventually(t, "the share is taken back", func() bool { return len(r.Slots()) == 4 })
	if took := time.Since(created); took > cfg.RenewDeadline+time.Second {
		t.Errorf("took the share back %s after the Lease appeared, want within the renew deadline (%s) and a few steps", took, cfg.RenewDeadline)
	}
	if got := logs.about("pods-silent"); len(got) != 1 || !strings.Contains(got[0], "unclaimed") {
		t.Errorf("got warnings %q, want one saying the Lease leaves its share unclaimed", got)
	}
}

// A replica that starts beside a crafted Lease claiming every slot holds
// none: it is not ready after the renew deadline, and says which Lease
// holds its slots. Once the Lease is gone, it takes every slot.
func TestAReplicaStarvedByACraftedLeaseIsNotReady(t *testing.T) {
	tests := []struct {
		name  string
		lease *coordinationv1.Lease
		says  string
	}{
		{"another slot count", crafted("pods-crafted", "8", "0-7"), "Lease pods-crafted (slot count 8, not 4)"},
		{"this slot count", crafted("pods-crafted", "4", "0-3"), "Lease pods-crafted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := versioned(tt.lease)
			logs := &warnings{}
			cfg := quick(client)
			cfg.Logger = logs
			r, _ := start(t, cfg)
			eventually(t, "Ready fails for want of slots", func() bool { _, err := r.Ready(); return err != nil && strings.Contains(err.Error(), "slots") })
			_, err := r.Ready()
			if !strings.Contains(err.Error(), "0 of 4 slots") || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Ready() = %v, want 0 of 4 slots and %q", err, tt.says)
			}
			if got := r.Slots(); len(got) != 0 {
				t.Errorf("got slots %v beside a Lease claiming every one", got)
			}
			if got := logs.about("not ready"); len(got) != 1 {
				t.Errorf("got %d warnings saying the replica is not ready, want 1: %q", len(got), got)
			}
			if err := client.CoordinationV1().Leases("ns").Delete(context.Background(), tt.lease.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "every slot is taken once the Lease is gone", func() bool { return len(r.Slots()) == 4 })
			if status, err := r.Ready(); err != nil {
				t.Errorf("Ready() = %q, %v after the Lease is gone", status, err)
			}
		})
	}
}

// A rolling update that changes Slots: the replica of the old version
// keeps its slots (the new one's slot count changes nothing), the new one
// takes none of the slots the old one claims and is not ready, and once the
// old one stops, the new one takes every slot. At no time do the two hold
// overlapping slots.
func TestARollingUpdateThatChangesSlotsNeverHoldsASlotTwice(t *testing.T) {
	tests := []struct{ from, to int }{{4, 8}, {4, 2}, {8, 4}, {4, 1}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d to %d slots", tt.from, tt.to), func(t *testing.T) {
			t.Parallel()
			client := versioned()
			oldCfg, newCfg := quick(client), quick(client)
			oldCfg.Slots, newCfg.Slots = tt.from, tt.to
			oldCfg.Identity, newCfg.Identity = "old", "new"
			old, stopOld := start(t, oldCfg)
			eventually(t, "the old replica takes every slot", func() bool { return len(old.Slots()) == tt.from })

			var overlaps atomic.Int64
			var first atomic.Value
			done := make(chan struct{})
			var checker sync.WaitGroup
			fresh, _ := start(t, newCfg)
			checker.Go(func() {
				for {
					select {
					case <-done:
						return
					case <-time.After(time.Millisecond):
					}
					a, b := old.Slots(), fresh.Slots()
					if overlap(a, tt.from, b, tt.to) {
						overlaps.Add(1)
						first.CompareAndSwap(nil, fmt.Sprintf("old holds %v of %d, new holds %v of %d", a, tt.from, b, tt.to))
					}
				}
			})
			defer func() { close(done); checker.Wait() }()

			eventually(t, "the new replica is not ready for want of slots", func() bool {
				_, err := fresh.Ready()
				return err != nil && strings.Contains(err.Error(), "slots")
			})
			_, err := fresh.Ready()
			if want := fmt.Sprintf("(slot count %d, not %d)", tt.from, tt.to); !strings.Contains(err.Error(), want) {
				t.Errorf("new replica: Ready() = %v, want it to name the old replica's Lease %s", err, want)
			}
			if got := old.Slots(); len(got) != tt.from {
				t.Errorf("the old replica holds %v beside the new one, want every slot", got)
			}
			if _, err := old.Ready(); err != nil {
				t.Errorf("old replica: Ready() = %v", err)
			}

			stopOld()
			eventually(t, "the new replica takes every slot", func() bool { return len(fresh.Slots()) == tt.to })
			if status, err := fresh.Ready(); err != nil {
				t.Errorf("new replica: Ready() = %q, %v after the old one stopped", status, err)
			}
			if n := overlaps.Load(); n > 0 {
				t.Errorf("%d checks saw overlapping slots, e.g. %s", n, first.Load())
			}
		})
	}
}

// overlap reports whether slots a of count ca and b of count cb share part
// of the hash space.
func overlap(a []int, ca int, b []int, cb int) bool {
	fine := max(ca, cb)
	spread := func(slots []int, count int) []int {
		var out []int
		for _, s := range slots {
			k := fine / count
			for i := range k {
				out = append(out, s*k+i)
			}
		}
		return out
	}
	sa := spread(a, ca)
	return slices.ContainsFunc(spread(b, cb), func(s int) bool { return slices.Contains(sa, s) })
}
