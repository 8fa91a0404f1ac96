package sharding_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// quick are timings for tests.
func quick(client *fake.Clientset) sharding.Config {
	return sharding.Config{
		Name: "pods", Namespace: "ns", Client: fakeLeases{client.CoordinationV1()}, Slots: 4,
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
	}
}

// fakeLeases is a fake clientset's Leases client that says, as the
// clientset does, that it cannot stream lists: the Runner's watch of the
// group then lists and watches, as the fake can.
type fakeLeases struct {
	coordinationv1client.LeasesGetter
}

func (fakeLeases) IsWatchListSemanticsUnSupported() bool { return true }

// newController returns a controller of pods wired to r: its handler
// behind r's slot gate, its Retriever decorated by r.
func newController(t *testing.T, r *sharding.Runner) *controller.Controller {
	t.Helper()
	c, err := controller.New(controller.Config{
		Name: "pods", ShutdownTimeout: 200 * time.Millisecond,
		Retriever: r.Retriever(controllertest.NewRetriever(&corev1.Pod{})),
		Handler:   r.Handler(controller.HandlerFunc(func(context.Context, runtime.Object) error { return nil })),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A replica alone takes every slot, says so in its Lease, and deletes the
// Lease when it stops. The in-memory retriever cannot shard: client-side.
func TestAReplicaAloneTakesEverySlotAndLeavesNoLease(t *testing.T) {
	client := fake.NewClientset()
	r, err := sharding.New(quick(client))
	if err != nil {
		t.Fatal(err)
	}
	c := newController(t, r)
	// Checked before Run starts: once it runs, a fake client lets it take
	// every slot before this goroutine looks.
	if _, err := r.Ready(); err == nil {
		t.Error("ready before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, c) }()
	eventually(t, "every slot is taken", func() bool { return len(r.Slots()) == 4 })
	if status, err := r.Ready(); err != nil || status != "sharded client-side: 4 of 4 slots" {
		t.Errorf("Ready() = %q, %v", status, err)
	}
	if r.Mode() != sharding.ModeClientSide {
		t.Errorf("got mode %q, want client-side", r.Mode())
	}
	leases, err := client.CoordinationV1().Leases("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(leases.Items) != 1 {
		t.Fatalf("got leases %v, %v; want one", leases, err)
	}
	l := leases.Items[0]
	if l.Labels[sharding.LabelGroup] != "pods" || l.Annotations[sharding.AnnotationSlots] != "0-3" || l.Annotations[sharding.AnnotationSlotCount] != "4" {
		t.Errorf("got lease labels %v, annotations %v", l.Labels, l.Annotations)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases("ns").Get(context.Background(), l.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease is still there after Run returned: %v", err)
	}
}

func TestNewRefusesABadConfig(t *testing.T) {
	client := fake.NewClientset()
	for name, mutate := range map[string]func(*sharding.Config){
		"no name":             func(c *sharding.Config) { c.Name = "" },
		"a name too long":     func(c *sharding.Config) { c.Name = "a23456789012345678901234567890123456789012345678901234" },
		"3 slots":             func(c *sharding.Config) { c.Slots = 3 },
		"512 slots":           func(c *sharding.Config) { c.Slots = 512 },
		"-2 slots":            func(c *sharding.Config) { c.Slots = -2 },
		"an unknown mode":     func(c *sharding.Config) { c.Mode = "both" },
		"deadline over lease": func(c *sharding.Config) { c.RenewDeadline = 3 * time.Second },
		"no namespace":        func(c *sharding.Config) { c.Namespace = "" },
		"no client":           func(c *sharding.Config) { c.Client = nil },
	} {
		cfg := quick(client)
		mutate(&cfg)
		if _, err := sharding.New(cfg); !errors.Is(err, sharding.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", name, err)
		}
	}
}

// Run refuses controllers it cannot shard safely, before it writes
// anything: none, one whose handler does not go through the slot gate or
// whose Retriever is not decorated (it would handle every object), and one
// that could still be handling when another replica takes its slots.
func TestRunRefusesControllersItCannotShard(t *testing.T) {
	pods := func() controller.Retriever {
		return controllertest.NewRetriever(&corev1.Pod{})
	}
	nop := controller.HandlerFunc(func(context.Context, runtime.Object) error { return nil })
	build := func(cfg controller.Config) *controller.Controller {
		c, err := controller.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name  string
		wire  func(r *sharding.Runner) []*controller.Controller
		wants string
	}{
		{"no controller", func(*sharding.Runner) []*controller.Controller { return nil }, "no controller"},
		{"a plain handler", func(r *sharding.Runner) []*controller.Controller {
			return []*controller.Controller{build(controller.Config{Name: "c", Handler: nop, Retriever: r.Retriever(pods())})}
		}, "Runner.Handler"},
		{"a plain retriever", func(r *sharding.Runner) []*controller.Controller {
			return []*controller.Controller{build(controller.Config{Name: "c", Handler: r.Handler(nop), Retriever: pods()})}
		}, "Runner.Retriever"},
		{"one wired controller of two", func(r *sharding.Runner) []*controller.Controller {
			return []*controller.Controller{
				build(controller.Config{Name: "a", Handler: r.Handler(nop), Retriever: r.Retriever(pods())}),
				build(controller.Config{Name: "b", Handler: nop, Retriever: pods()}),
			}
		}, "2 controllers"},
		{"a shutdown timeout over the lease's margin", func(r *sharding.Runner) []*controller.Controller {
			return []*controller.Controller{build(controller.Config{Name: "c", Handler: r.Handler(nop), Retriever: r.Retriever(pods()),
				ShutdownTimeout: time.Second})}
		}, "shutdown timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			r, err := sharding.New(quick(client))
			if err != nil {
				t.Fatal(err)
			}
			err = r.Run(context.Background(), tt.wire(r)...)
			if !errors.Is(err, sharding.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wants) {
				t.Fatalf("got %v, want ErrInvalidConfig saying %q", err, tt.wants)
			}
			if leases, _ := client.CoordinationV1().Leases("ns").List(context.Background(), metav1.ListOptions{}); len(leases.Items) > 0 {
				t.Errorf("a Lease was created: %v", leases.Items)
			}
		})
	}
}

// A replica that cannot renew its Lease stops handling at its renew
// deadline, read on Config.Clock: still every slot after one failed
// renewal just before the deadline, none at the deadline. The deadline is
// 40s and the retry period 15s, beyond eventually's patience: on the fake
// clock the test takes milliseconds, so it fails if a wait is on the real
// clock.
func TestAReplicaThatCannotRenewStopsAtTheDeadlineOnItsClock(t *testing.T) {
	const deadline = 40 * time.Second
	clk := clocktesting.NewFakeClock(time.Now())
	client := versioned()
	var refuse atomic.Bool
	var refused atomic.Int64
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			refused.Add(1)
			return true, nil, apierrors.NewServiceUnavailable("test: no renewal")
		}
		return false, nil, nil
	})
	logs := &warnings{}
	r, err := sharding.New(sharding.Config{
		Name: "pods", Namespace: "ns", Client: fakeLeases{client.CoordinationV1()}, Slots: 4,
		LeaseDuration: time.Minute, RenewDeadline: deadline, RetryPeriod: 15 * time.Second, Clock: clk, Logger: logs,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := controller.New(controller.Config{
		Name: "pods", ShutdownTimeout: 200 * time.Millisecond,
		Retriever: r.Retriever(controllertest.NewRetriever(&corev1.Pod{})),
		Handler:   r.Handler(controller.HandlerFunc(func(context.Context, runtime.Object) error { return nil })),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, ctrl) }()
	defer func() {
		refuse.Store(false)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	// The first step is due at once: it claims and acquires every slot.
	eventually(t, "every slot is taken", func() bool { clk.Step(0); return len(r.Slots()) == 4 })
	renewed := clk.Now() // the last successful write began no later
	refuse.Store(true)

	// The next step (at most 1.2 × RetryPeriod away) fails to renew: the
	// slots are kept, the deadline not being reached.
	clk.Step(deadline - time.Millisecond)
	eventually(t, "a renewal is refused", func() bool { return len(logs.about("could not renew")) > 0 })
	if got := r.Slots(); len(got) != 4 {
		t.Fatalf("got slots %v %s after the last renewal, want all 4 until the renew deadline (%s)", got, clk.Since(renewed), deadline)
	}
	if _, err := r.Ready(); err != nil {
		t.Errorf("not ready before the deadline: %v", err)
	}
	clk.Step(time.Millisecond)
	eventually(t, "every slot is given up at the deadline", func() bool { return len(r.Slots()) == 0 })
	if refused.Load() == 0 {
		t.Error("no renewal was refused")
	}
}
