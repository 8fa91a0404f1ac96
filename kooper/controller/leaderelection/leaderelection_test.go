package leaderelection_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
)

// newClient returns a fake clientset whose Lease updates honour
// resourceVersion preconditions, as the API server does (client-go's fake
// does not): without them a leader's optimistic renewal silently
// overwrites another holder.
func newClient() *fake.Clientset {
	client := fake.NewClientset()
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	var mu sync.Mutex
	version := 0
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		lease := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		cur, err := client.Tracker().Get(gvr, lease.Namespace, lease.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.(*coordinationv1.Lease).ResourceVersion != lease.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), lease.Name, errors.New("the object has been modified"))
		}
		version++
		lease.ResourceVersion = strconv.Itoa(version)
		return true, lease, client.Tracker().Update(gvr, lease, lease.Namespace)
	})
	return client
}

// Short timings: a standby may take over 1s after the last renewal.
func testConfig(client *fake.Clientset, identity string) leaderelection.Config {
	return leaderelection.Config{
		Name: "lease", Namespace: "ops", Client: client.CoordinationV1(), Identity: identity,
		LeaseDuration: time.Second, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 100 * time.Millisecond,
	}
}

// journal records when each identity's runnable started and ended.
type journal struct {
	mu      sync.Mutex
	entries []entry
}

type entry struct {
	identity   string
	start, end time.Time
}

// runnable starts handling, and after its context is done takes drain to stop.
func (j *journal) runnable(identity string, drain time.Duration) leaderelection.Runnable {
	return runFunc(func(ctx context.Context) error {
		j.mu.Lock()
		i := len(j.entries)
		j.entries = append(j.entries, entry{identity: identity, start: time.Now()})
		j.mu.Unlock()
		<-ctx.Done()
		time.Sleep(drain)
		j.mu.Lock()
		j.entries[i].end = time.Now()
		j.mu.Unlock()
		return nil
	})
}

func (j *journal) started(identity string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.entries {
		if e.identity == identity {
			return true
		}
	}
	return false
}

func (j *journal) get() []entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]entry(nil), j.entries...)
}

type runFunc func(ctx context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }

// run starts r.Run in the background; wait returns its error.
func run(t *testing.T, r *leaderelection.Runner) (cancel func(), wait func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(cancel)
	return cancel, func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return within 10s")
			return nil
		}
	}
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

func newRunner(t *testing.T, cfg leaderelection.Config, rs ...leaderelection.Runnable) *leaderelection.Runner {
	t.Helper()
	r, err := leaderelection.New(cfg, rs...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestAStandbyTakesOverAfterACleanShutdownWithoutOverlap(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	cancelA, waitA := run(t, newRunner(t, testConfig(client, "a"), j.runnable("a", 200*time.Millisecond)))
	eventually(t, "a leads", func() bool { return j.started("a") })
	cancelB, waitB := run(t, newRunner(t, testConfig(client, "b"), j.runnable("b", 0)))
	time.Sleep(300 * time.Millisecond)
	if j.started("b") {
		t.Fatal("b handles while a holds the lease")
	}

	cancelA()
	if err := waitA(); err != nil {
		t.Fatalf("got a's Run error %v, want nil", err)
	}
	eventually(t, "b takes over", func() bool { return j.started("b") })
	cancelB()
	if err := waitB(); err != nil {
		t.Errorf("got b's Run error %v, want nil", err)
	}

	e := j.get()
	a, b := e[0], e[1]
	if !b.start.After(a.end) {
		t.Errorf("b started at %s, before a stopped at %s: two leaders handled at once", b.start.Format(time.StampMicro), a.end.Format(time.StampMicro))
	}
	// Released, not expired: the takeover is well within LeaseDuration.
	if gap := b.start.Sub(a.end); gap > 500*time.Millisecond {
		t.Errorf("got a takeover %s after a stopped, want under 500ms (the lease must be released)", gap)
	}
}

func TestLosingTheLeaseStopsHandlingAndRunFails(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	_, wait := run(t, newRunner(t, testConfig(client, "a"), j.runnable("a", 0)))
	eventually(t, "a leads", func() bool { return j.started("a") })

	// Another holder writes the Lease: a can no longer renew it.
	lease, err := client.CoordinationV1().Leases("ops").Get(context.Background(), "lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptr.To("intruder")
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](60)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := client.CoordinationV1().Leases("ops").Update(context.Background(), lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()

	if err := wait(); !errors.Is(err, leaderelection.ErrLeaseLost) {
		t.Fatalf("got Run error %v, want %v", err, leaderelection.ErrLeaseLost)
	}
	e := j.get()[0]
	if e.end.IsZero() {
		t.Fatal("the runnable was still handling when Run returned")
	}
	// RetryPeriod + RenewDeadline after the last renewal, plus slack.
	if d := e.end.Sub(taken); d > time.Second {
		t.Errorf("got handling stopped %s after the lease was taken, want under 1s", d)
	}
}

func TestAStandbyReturnsWhenCancelled(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	cancelA, waitA := run(t, newRunner(t, testConfig(client, "a"), j.runnable("a", 0)))
	eventually(t, "a leads", func() bool { return j.started("a") })
	cancelB, waitB := run(t, newRunner(t, testConfig(client, "b"), j.runnable("b", 0)))
	time.Sleep(200 * time.Millisecond)
	cancelB()
	if err := waitB(); err != nil {
		t.Errorf("got the standby's Run error %v, want nil", err)
	}
	if j.started("b") {
		t.Error("the standby handled")
	}
	cancelA()
	_ = waitA()
}

func TestARunnableErrorStopsTheOthersAndIsReturned(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	boom := errors.New("boom")
	failing := runFunc(func(context.Context) error { return boom })
	_, wait := run(t, newRunner(t, testConfig(client, "a"), j.runnable("a", 0), failing))
	// The failing runnable ends the leadership, so the elector returns.
	err := wait()
	if !errors.Is(err, boom) {
		t.Errorf("got Run error %v, want it to wrap %v", err, boom)
	}
	if e := j.get(); len(e) != 1 || e[0].end.IsZero() {
		t.Errorf("got journal %+v, want the other runnable started and stopped", e)
	}
}

type slowStop struct{ runFunc }

func (slowStop) ShutdownTimeout() time.Duration { return 5 * time.Second }

func TestNewRejectsAnInvalidConfig(t *testing.T) {
	client := newClient()
	ok := runFunc(func(context.Context) error { return nil })
	tests := []struct {
		name   string
		change func(*leaderelection.Config)
		run    []leaderelection.Runnable
		want   string
	}{
		{"no name", func(c *leaderelection.Config) { c.Name = "" }, []leaderelection.Runnable{ok}, "name is required"},
		{"no namespace", func(c *leaderelection.Config) { c.Namespace = "" }, []leaderelection.Runnable{ok}, "namespace is required"},
		{"no client", func(c *leaderelection.Config) { c.Client = nil }, []leaderelection.Runnable{ok}, "client is required"},
		{"nothing to run", func(*leaderelection.Config) {}, nil, "nothing to run"},
		{"renew deadline above lease", func(c *leaderelection.Config) { c.RenewDeadline = 2 * time.Second }, []leaderelection.Runnable{ok}, "below lease duration"},
		{"retry period too long", func(c *leaderelection.Config) { c.RetryPeriod = 550 * time.Millisecond }, []leaderelection.Runnable{ok}, "retry period"},
		{"shutdown timeout too long", func(*leaderelection.Config) {}, []leaderelection.Runnable{slowStop{ok}}, "shutdown timeout 5s must be below"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(client, "a")
			tt.change(&cfg)
			_, err := leaderelection.New(cfg, tt.run...)
			if !errors.Is(err, leaderelection.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one wrapping ErrInvalidConfig and saying %q", err, tt.want)
			}
		})
	}
}

func TestTheDefaultsFitTheControllersDefaultShutdownTimeout(t *testing.T) {
	budget := leaderelection.DefaultLeaseDuration - leaderelection.DefaultRenewDeadline - leaderelection.DefaultRetryPeriod
	if got := budget; got <= 2*time.Second {
		t.Errorf("got a shutdown budget of %s with the defaults, want above the controller's default 2s", got)
	}
}
