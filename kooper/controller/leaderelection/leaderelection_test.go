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
	takeLease(t, client)
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

// takeLease writes another holder into the Lease for a minute, as a replica
// that took it over would: its holder can no longer renew it.
func takeLease(t *testing.T, client *fake.Clientset) {
	t.Helper()
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
}

// recorder records the leader status it is given.
type recorder struct {
	mu    sync.Mutex
	calls []bool
}

func (r *recorder) SetLeader(_ string, leading bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, leading)
}

// last returns the last status recorded, and how many were.
func (r *recorder) last() (leading bool, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return false, 0
	}
	return r.calls[len(r.calls)-1], len(r.calls)
}

// role is what Leading and Standby report, as "leading", "standby" or
// "neither".
func role(r *leaderelection.Runner) string {
	switch l, s := r.Leading(), r.Standby(); {
	case l && s:
		return "both leading and standby"
	case l:
		return "leading"
	case s:
		return "standby"
	}
	return "neither"
}

func TestLeadingAndStandbyFollowTheLease(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := newClient()
	j := &journal{}
	recA, recB := &recorder{}, &recorder{}
	cfgA, cfgB := testConfig(client, "a"), testConfig(client, "b")
	cfgA.Recorder, cfgB.Recorder = recA, recB
	a := newRunner(t, cfgA, j.runnable("a", 0))
	b := newRunner(t, cfgB, j.runnable("b", 0))
	if got := role(a); got != "standby" {
		t.Errorf("got a new runner %s, want standby", got)
	}

	cancelA, waitA := run(t, a)
	eventually(t, "a leads", func() bool { return a.Leading() })
	if got := role(a); got != "leading" {
		t.Errorf("got the holder %s, want leading", got)
	}
	if got, _ := recA.last(); !got {
		t.Error("got a's recorder told not leading, want leading")
	}
	_, waitB := run(t, b)
	time.Sleep(300 * time.Millisecond)
	if got := role(b); got != "standby" {
		t.Errorf("got the other replica %s, want standby", got)
	}

	// A clean shutdown: a stops leading, b takes over.
	cancelA()
	if err := waitA(); err != nil {
		t.Fatalf("got a's Run error %v, want nil", err)
	}
	if got, _ := recA.last(); a.Leading() || got {
		t.Errorf("got a leading %v and its recorder told %v after Run returned, want both false", a.Leading(), got)
	}
	eventually(t, "b leads", func() bool { return b.Leading() })

	// A lost Lease: b stops leading.
	takeLease(t, client)
	if err := waitB(); !errors.Is(err, leaderelection.ErrLeaseLost) {
		t.Fatalf("got b's Run error %v, want %v", err, leaderelection.ErrLeaseLost)
	}
	if got, _ := recB.last(); b.Leading() || got {
		t.Errorf("got b leading %v and its recorder told %v after losing the Lease, want both false", b.Leading(), got)
	}
}

func TestDisabledRunsAtOnceHoldingNoLease(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		// second runs beside a runnable that works until its context is
		// done.
		second  leaderelection.Runnable
		cancel  bool // cancel Run's context once both started
		wantErr error
	}{
		{"runs until its context is done", runFunc(func(ctx context.Context) error { <-ctx.Done(); return nil }), true, nil},
		{"a runnable that returns stops the others", runFunc(func(context.Context) error { return nil }), false, nil},
		{"a runnable's error stops the others and is returned", runFunc(func(context.Context) error { return boom }), false, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			j := &journal{}
			rec := &recorder{}
			// No Name, Namespace or Client: nothing is held.
			r := newRunner(t, leaderelection.Config{Disabled: true, Recorder: rec}, j.runnable("only", 0), tt.second)
			if got := role(r); got != "neither" {
				t.Errorf("got a new runner %s, want neither", got)
			}
			cancel, wait := run(t, r)
			eventually(t, "the runnable starts", func() bool { return j.started("only") })
			if got := role(r); got != "neither" {
				t.Errorf("got a running runner %s, want neither", got)
			}
			if tt.cancel {
				cancel()
			}
			if err := wait(); !errors.Is(err, tt.wantErr) {
				t.Errorf("got Run error %v, want %v", err, tt.wantErr)
			}
			if e := j.get(); e[0].end.IsZero() {
				t.Error("the runnable was still running when Run returned")
			}
			if got := role(r); got != "neither" {
				t.Errorf("got a stopped runner %s, want neither", got)
			}
			if _, n := rec.last(); n != 0 {
				t.Errorf("got %d calls to the recorder, want none", n)
			}
		})
	}
}

func TestDisabledChecksNothingAboutTheLease(t *testing.T) {
	ok := runFunc(func(context.Context) error { return nil })
	tests := []struct {
		name string
		cfg  leaderelection.Config
		run  leaderelection.Runnable
	}{
		{"no name, namespace or client", leaderelection.Config{Disabled: true}, ok},
		{"renew deadline above lease", leaderelection.Config{Disabled: true, LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}, ok},
		{"shutdown timeout longer than the lease allows", leaderelection.Config{Disabled: true}, slowStop{ok}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := leaderelection.New(tt.cfg, tt.run); err != nil {
				t.Errorf("got error %v, want none", err)
			}
		})
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
		{"nothing to run without leader election", func(c *leaderelection.Config) { c.Disabled = true }, nil, "nothing to run"},
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
