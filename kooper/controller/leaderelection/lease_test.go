package leaderelection

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/log"
)

// The protocol's edge cases, on a fake clock: nothing here sleeps to let
// time pass.

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// apiServer is a fake clientset whose Leases get a new resourceVersion at
// every write and whose updates must carry the current one, as the API
// server's do; failing makes every update fail.
type apiServer struct {
	*fake.Clientset
	failing atomic.Bool
	updates atomic.Int32 // update requests, failed ones included
}

func newAPIServer(leases ...*coordinationv1.Lease) *apiServer {
	s := &apiServer{Clientset: fake.NewClientset()}
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	var mu sync.Mutex
	version := 0
	write := func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		l := a.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease).DeepCopy()
		l.Namespace = a.GetNamespace()
		if a.GetVerb() == "update" {
			s.updates.Add(1)
			if s.failing.Load() {
				return true, nil, errors.New("the API server is unreachable")
			}
			cur, err := s.Tracker().Get(gvr, l.Namespace, l.Name)
			if err != nil {
				return true, nil, err
			}
			if cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), l.Name, errors.New("the object has been modified"))
			}
		}
		version++
		l.ResourceVersion = strconv.Itoa(version)
		if a.GetVerb() == "create" {
			return true, l, s.Tracker().Create(gvr, l, l.Namespace)
		}
		return true, l, s.Tracker().Update(gvr, l, l.Namespace)
	}
	s.PrependReactor("create", "leases", write)
	s.PrependReactor("update", "leases", write)
	for _, l := range leases {
		if _, err := s.CoordinationV1().Leases("ns").Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
			panic(err)
		}
	}
	return s
}

func (s *apiServer) get(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l, err := s.CoordinationV1().Leases("ns").Get(context.Background(), "lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// set changes the Lease as another replica would.
func (s *apiServer) set(t *testing.T, change func(*coordinationv1.LeaseSpec)) {
	t.Helper()
	l := s.get(t)
	change(&l.Spec)
	if _, err := s.CoordinationV1().Leases("ns").Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// heldBy is a Lease held by holder, which claims it for 10s, with a
// renewTime an hour behind this replica's clock (skewed clocks).
func heldBy(holder string) *coordinationv1.Lease {
	renew := &metav1.MicroTime{Time: t0.Add(-time.Hour)}
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "lease", Namespace: "ns"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](10),
			AcquireTime: renew, RenewTime: renew, LeaseTransitions: ptr.To[int32](4),
		},
	}
}

func testElector(s *apiServer, clk *testingclock.FakeClock, identity string) *elector {
	return newElector(Config{
		Name: "lease", Namespace: "ns", Client: s.CoordinationV1(), Identity: identity,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
	}, clk, log.Noop)
}

// background runs f in a goroutine; wait waits for it, failing after 10s.
func background(t *testing.T, f func()) (wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return func() {
		t.Helper()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("still running after 10s")
		}
	}
}

// until polls cond (real time: a goroutine's progress, not the clock's).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAcquiringCreatesTheLeaseFilledAsKubernetesComponentsDo(t *testing.T) {
	s, clk := newAPIServer(), testingclock.NewFakeClock(t0)
	l, start, ok := testElector(s, clk, "a").acquire(context.Background())
	if !ok || !start.Equal(t0) {
		t.Fatalf("got acquired %v at %s, want acquired at %s", ok, start, t0)
	}
	got := s.get(t).Spec
	if holder := ptr.Deref(got.HolderIdentity, ""); holder != "a" || l.ResourceVersion != s.get(t).ResourceVersion {
		t.Errorf("got holder %q at version %s, want a at the version acquire returned, %s", holder, s.get(t).ResourceVersion, l.ResourceVersion)
	}
	if d := ptr.Deref(got.LeaseDurationSeconds, 0); d != 15 {
		t.Errorf("got leaseDurationSeconds %d, want 15", d)
	}
	if !got.AcquireTime.Time.Equal(t0) || !got.RenewTime.Time.Equal(t0) || ptr.Deref(got.LeaseTransitions, -1) != 0 {
		t.Errorf("got acquireTime %s, renewTime %s, leaseTransitions %v; want %s, %s, 0", got.AcquireTime, got.RenewTime, got.LeaseTransitions, t0, t0)
	}
}

func TestTheLeaseDurationIsWrittenRoundedUp(t *testing.T) {
	e := testElector(newAPIServer(), testingclock.NewFakeClock(t0), "a")
	e.cfg.LeaseDuration = 1500 * time.Millisecond
	if got := e.seconds(); got != 2 {
		t.Errorf("got %ds for a lease duration of 1.5s, want 2s: a standby must not wait less than this replica leads", got)
	}
}

// Expiry is judged on this replica's clock, from when it first saw the
// Lease's current version: never from the holder's renewTime.
func TestAStandbyDeemsTheLeaseExpiredByItsOwnObservation(t *testing.T) {
	s, clk := newAPIServer(heldBy("x")), testingclock.NewFakeClock(t0)
	e := testElector(s, clk, "b")
	e.read(context.Background()) // first seen at t0, renewTime an hour earlier
	steps := []struct {
		name  string
		after time.Duration // since t0
		renew bool          // the holder renews just before
		want  time.Duration // until this replica may take the Lease
	}{
		{"just seen, though renewed an hour ago by the holder's clock", 0, false, 10 * time.Second},
		{"9s after it was seen", 9 * time.Second, false, time.Second},
		{"renewed at 9s: 10s from then", 9 * time.Second, true, 10 * time.Second},
		{"its duration after the renewal was seen", 19 * time.Second, false, 0},
	}
	for _, st := range steps {
		clk.SetTime(t0.Add(st.after))
		if st.renew {
			s.set(t, func(spec *coordinationv1.LeaseSpec) { spec.RenewTime = &metav1.MicroTime{Time: t0.Add(-time.Hour)} })
			e.read(context.Background())
		}
		if _, _, wait := e.freeIn(clk.Now()); wait != st.want {
			t.Errorf("%s: got free in %s, want %s", st.name, wait, st.want)
		}
	}
}

func TestAFreeLeaseIsTakenAtOnce(t *testing.T) {
	tests := []struct {
		name            string
		holder          string
		wantTransitions int32
		wantAcquired    time.Time
	}{
		{"released (no holder)", "", 5, t0},
		{"held by this identity (a previous run)", "b", 4, t0.Add(-time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clk := newAPIServer(heldBy(tt.holder)), testingclock.NewFakeClock(t0)
			if _, _, ok := testElector(s, clk, "b").acquire(context.Background()); !ok {
				t.Fatal("not acquired")
			}
			got := s.get(t).Spec
			if ptr.Deref(got.HolderIdentity, "") != "b" || ptr.Deref(got.LeaseTransitions, 0) != tt.wantTransitions || !got.AcquireTime.Time.Equal(tt.wantAcquired) || !got.RenewTime.Time.Equal(t0) {
				t.Errorf("got holder %q, leaseTransitions %d, acquireTime %s, renewTime %s; want b, %d, %s, %s",
					ptr.Deref(got.HolderIdentity, ""), ptr.Deref(got.LeaseTransitions, 0), got.AcquireTime, got.RenewTime, tt.wantTransitions, tt.wantAcquired, t0)
			}
		})
	}
}

// Two standbys that saw the same version race: the API server's
// resourceVersion check lets one win.
func TestOfTwoStandbysTakingTheSameVersionOneGetsAConflict(t *testing.T) {
	s, clk := newAPIServer(heldBy("")), testingclock.NewFakeClock(t0)
	a, b := testElector(s, clk, "a"), testElector(s, clk, "b")
	a.read(context.Background())
	b.read(context.Background())
	seenA, _, _ := a.freeIn(t0)
	seenB, _, _ := b.freeIn(t0)
	if _, err := a.take(context.Background(), seenA, t0); err != nil {
		t.Fatalf("a: %v", err)
	}
	if _, err := b.take(context.Background(), seenB, t0); !apierrors.IsConflict(err) {
		t.Errorf("got b's error %v, want a conflict", err)
	}
	if got := ptr.Deref(s.get(t).Spec.HolderIdentity, ""); got != "a" {
		t.Errorf("got holder %q, want a", got)
	}
	// Creating a Lease that exists fails too.
	if _, err := b.take(context.Background(), nil, t0); !apierrors.IsAlreadyExists(err) {
		t.Errorf("got b's error %v creating the Lease, want already exists", err)
	}
}

// acquire tries the moment the holder's Lease expires, or the watch shows
// it released: not at its next retry (an hour away here).
func TestAStandbyActsAtOnceOnAnExpiryOrARelease(t *testing.T) {
	for _, tt := range []string{"expiry", "release"} {
		t.Run(tt, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			s, clk := newAPIServer(heldBy("x")), testingclock.NewFakeClock(t0)
			e := testElector(s, clk, "b")
			e.cfg.RetryPeriod = time.Hour
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopWatch := background(t, func() { e.watch(ctx) })
			defer stopWatch()
			defer cancel()
			var (
				start time.Time
				ok    bool
			)
			wait := background(t, func() { _, start, ok = e.acquire(ctx) })
			// acquire waits, on its ticker and on a timer for the expiry.
			until(t, "acquire waits", func() bool { return clk.Waiters() >= 2 })
			if tt == "expiry" {
				clk.Step(9 * time.Second) // the expiry timer is not due
				if got := ptr.Deref(s.get(t).Spec.HolderIdentity, ""); got != "x" {
					t.Fatalf("taken by %s 9s after it was seen, want held by x for 10s", got)
				}
				clk.Step(time.Second)
			} else {
				s.set(t, func(spec *coordinationv1.LeaseSpec) { spec.HolderIdentity = ptr.To("") })
			}
			wait()
			if !ok || ptr.Deref(s.get(t).Spec.HolderIdentity, "") != "b" {
				t.Fatalf("got acquired %v, holder %q; want b", ok, ptr.Deref(s.get(t).Spec.HolderIdentity, ""))
			}
			if want := map[string]time.Time{"expiry": t0.Add(10 * time.Second), "release": t0}[tt]; !start.Equal(want) {
				t.Errorf("took it at %s, want %s", start, want)
			}
		})
	}
}

// hold renews every RetryPeriod; once no renewal succeeded for
// RenewDeadline from the start of the last one that did, leading ends.
func TestALeaderStopsLeadingRenewDeadlineAfterItsLastSuccessfulRenewal(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, clk := newAPIServer(), testingclock.NewFakeClock(t0)
	e := testElector(s, clk, "a")
	l, start, ok := e.acquire(context.Background())
	if !ok {
		t.Fatal("not acquired")
	}
	var (
		mu      sync.Mutex
		lostErr error
		renewed []time.Time
	)
	lose := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if lostErr == nil {
			lostErr = err
		}
	}
	lost := func() error { mu.Lock(); defer mu.Unlock(); return lostErr }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var held *coordinationv1.Lease
	waiters := clk.Waiters()
	wait := background(t, func() {
		held = e.hold(ctx, l, start.Add(10*time.Second), lose, func(u time.Time) { mu.Lock(); renewed = append(renewed, u); mu.Unlock() })
	})
	// tick steps the clock to the next renewal and waits for its request.
	tick := func() {
		n := s.updates.Load()
		clk.Step(2 * time.Second)
		until(t, "a renewal request", func() bool { return s.updates.Load() > n })
	}

	until(t, "hold waits on its deadline and its ticker", func() bool { return clk.Waiters() == waiters+2 })
	tick() // at 2s: renewed, leading until 12s
	until(t, "the renewal is noted", func() bool { mu.Lock(); defer mu.Unlock(); return len(renewed) == 1 })
	if want := t0.Add(12 * time.Second); !renewed[0].Equal(want) {
		t.Errorf("got leading until %s, want %s", renewed[0], want)
	}
	s.failing.Store(true)
	for range 4 { // 4s to 10s: each fails
		tick()
	}
	clk.Step(1900 * time.Millisecond) // 11.9s
	if err := lost(); err != nil {
		t.Fatalf("lost at 11.9s (%v), want leading until 12s", err)
	}
	clk.Step(100 * time.Millisecond) // 12s, even with a request hanging
	if err := lost(); !errors.Is(err, errExpired) {
		t.Fatalf("got %v at 12s, want %v", err, errExpired)
	}
	cancel()
	wait()
	if held.ResourceVersion != s.get(t).ResourceVersion {
		t.Errorf("got the Lease held at version %s, want the last written, %s", held.ResourceVersion, s.get(t).ResourceVersion)
	}
}

func TestALeaderStopsLeadingAtOnceWhenAnotherHoldsTheLease(t *testing.T) {
	s, clk := newAPIServer(), testingclock.NewFakeClock(t0)
	e := testElector(s, clk, "a")
	l, _, _ := e.acquire(context.Background())
	s.set(t, func(spec *coordinationv1.LeaseSpec) { spec.HolderIdentity = ptr.To("x") })
	if _, err := e.renew(context.Background(), l, t0); !errors.Is(err, errTaken) {
		t.Errorf("got %v, want %v", err, errTaken)
	}
}

// A renewal whose answer was lost still landed: the next one conflicts
// with it, reads the Lease, finds it this replica's, and goes on.
func TestARenewalConflictingWithThisReplicasOwnWriteGoesOn(t *testing.T) {
	s, clk := newAPIServer(), testingclock.NewFakeClock(t0)
	e := testElector(s, clk, "a")
	l, _, _ := e.acquire(context.Background())
	if _, err := e.renew(context.Background(), l, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	// l is now stale: renewing it conflicts.
	got, err := e.renew(context.Background(), l, t0.Add(4*time.Second))
	if err != nil {
		t.Fatalf("got %v, want renewed", err)
	}
	if spec := s.get(t).Spec; !spec.RenewTime.Time.Equal(t0.Add(4*time.Second)) || !spec.AcquireTime.Time.Equal(t0) || got.ResourceVersion != s.get(t).ResourceVersion {
		t.Errorf("got renewTime %s and acquireTime %s, want %s and %s", spec.RenewTime, spec.AcquireTime, t0.Add(4*time.Second), t0)
	}
}

func TestReleasingFreesOnlyThisReplicasLease(t *testing.T) {
	tests := []struct {
		name string
		// between runs after this replica acquired and before it releases.
		between    func(t *testing.T, s *apiServer, e *elector, l *coordinationv1.Lease)
		wantHolder string
	}{
		{"held since", func(*testing.T, *apiServer, *elector, *coordinationv1.Lease) {}, ""},
		{"renewed since, the answer lost", func(t *testing.T, _ *apiServer, e *elector, l *coordinationv1.Lease) {
			if _, err := e.renew(context.Background(), l, t0); err != nil {
				t.Fatal(err)
			}
		}, ""},
		// A leader whose renewals failed while another replica took
		// the Lease over must not release that replica's Lease.
		{"taken over since", func(t *testing.T, s *apiServer, _ *elector, _ *coordinationv1.Lease) {
			s.set(t, func(spec *coordinationv1.LeaseSpec) { spec.HolderIdentity = ptr.To("b") })
		}, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clk := newAPIServer(), testingclock.NewFakeClock(t0)
			e := testElector(s, clk, "a")
			l, _, _ := e.acquire(context.Background())
			tt.between(t, s, e, l)
			clk.Step(time.Second)
			if err := e.release(context.Background(), l); err != nil {
				t.Fatal(err)
			}
			got := s.get(t).Spec
			if h := ptr.Deref(got.HolderIdentity, ""); h != tt.wantHolder {
				t.Fatalf("got holder %q, want %q", h, tt.wantHolder)
			}
			if tt.wantHolder == "" && (ptr.Deref(got.LeaseDurationSeconds, 0) != 1 || !got.RenewTime.Time.Equal(t0.Add(time.Second)) || ptr.Deref(got.LeaseTransitions, -1) != 0) {
				t.Errorf("got leaseDurationSeconds %d, renewTime %s, leaseTransitions %d; want 1, %s, 0 (as client-go's elector releases)",
					ptr.Deref(got.LeaseDurationSeconds, 0), got.RenewTime, ptr.Deref(got.LeaseTransitions, -1), t0.Add(time.Second))
			}
		})
	}
}

// Through the Runner: a leader cut off from the API server cancels its
// runnables at the deadline, releases nothing, and Run returns
// ErrLeaseLost.
func TestARunnerCutOffStopsItsRunnablesAtTheDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, clk := newAPIServer(), testingclock.NewFakeClock(t0)
	handling := make(chan struct{})
	var stoppedAt atomic.Pointer[time.Time]
	r, err := New(Config{
		Name: "lease", Namespace: "ns", Client: s.CoordinationV1(), Identity: "a",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
	}, runFunc(func(ctx context.Context) error {
		close(handling)
		<-ctx.Done()
		now := clk.Now()
		stoppedAt.Store(&now)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	r.clock = clk
	var runErr error
	wait := background(t, func() { runErr = r.Run(context.Background()) })
	<-handling
	// acquire's ticker (a fake one stays a waiter once stopped), hold's
	// deadline and ticker.
	until(t, "hold waits", func() bool { return clk.Waiters() == 3 })
	s.failing.Store(true)
	for range 4 { // 2s to 8s: each renewal fails
		n := s.updates.Load()
		clk.Step(2 * time.Second)
		until(t, "a renewal request", func() bool { return s.updates.Load() > n })
	}
	clk.Step(1999 * time.Millisecond)
	if stoppedAt.Load() != nil || !r.Leading() {
		t.Fatal("stopped handling before the deadline")
	}
	clk.Step(time.Millisecond)
	wait()
	if !errors.Is(runErr, ErrLeaseLost) {
		t.Errorf("got Run error %v, want %v", runErr, ErrLeaseLost)
	}
	if at := stoppedAt.Load(); at == nil || !at.Equal(t0.Add(10*time.Second)) {
		t.Errorf("got the runnable stopped at %v, want at the deadline %s", at, t0.Add(10*time.Second))
	}
	if h := ptr.Deref(s.get(t).Spec.HolderIdentity, ""); h != "a" {
		t.Errorf("got holder %q, want a: a replica that lost its hold releases nothing", h)
	}
}

type runFunc func(ctx context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }
