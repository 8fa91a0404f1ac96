package integration_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
)

// leadRecorder is a Runnable that records when its replica led.
type leadRecorder struct {
	id  string
	rec *handlings
}

func (l leadRecorder) Run(ctx context.Context) error {
	began := time.Now()
	<-ctx.Done()
	l.rec.record(l.id, began, time.Now())
	return nil
}

// leases returns a client of the test cluster's Leases of its own.
func leases() coordinationv1client.LeasesGetter {
	return kubernetes.NewForConfigOrDie(rest.CopyConfig(cluster.Config())).CoordinationV1()
}

// startRecorded runs a Runner with cfg (its Client set here unless set)
// whose only runnable records in rec when this replica led, and returns it
// with its stop function.
func startRecorded(t *testing.T, rec *handlings, cfg leaderelection.Config) (*leaderelection.Runner, func() error) {
	t.Helper()
	if cfg.Client == nil {
		cfg.Client = leases()
	}
	r, err := leaderelection.New(cfg, leadRecorder{id: cfg.Identity, rec: rec})
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runInBackground(t, r.Run)
	return r, stop
}

// With a 20-second retry period, a standby that only polled could take a
// released Lease over no sooner than its next retry, 20 to 44 seconds
// after its last one. Two standbys watch the Lease: when the leader stops
// cleanly and releases it, one of them leads well before that, the other
// keeps standing by, and the three never lead at once.
func TestAStandbyTakesAReleasedLeaseBeforeItsNextRetry(t *testing.T) {
	_, ns := setup(t)
	const retry = 20 * time.Second
	rec := &handlings{}
	start := func(id string) (*leaderelection.Runner, func() error) {
		return startRecorded(t, rec, leaderelection.Config{
			Name: "handover", Namespace: ns, Identity: id,
			LeaseDuration: 60 * time.Second, RenewDeadline: 30 * time.Second, RetryPeriod: retry,
		})
	}

	a, stopA := start("a")
	eventually(t, 10*time.Second, "a leads", a.Leading)
	b, stopB := start("b")
	c, stopC := start("c")
	// Their first attempt is at once, and fails: a holds the Lease.
	time.Sleep(2 * time.Second)
	if b.Leading() || c.Leading() {
		t.Fatal("a standby leads while a holds the Lease")
	}

	if err := stopA(); err != nil {
		t.Fatalf("a: %v", err)
	}
	stopped := time.Now()
	eventually(t, retry-5*time.Second, "b or c leads before its next retry", func() bool { return b.Leading() || c.Leading() })
	t.Logf("a standby led %s after a stopped", time.Since(stopped).Round(time.Millisecond))
	time.Sleep(time.Second)
	if b.Leading() && c.Leading() {
		t.Fatal("b and c both lead")
	}
	// The standby stops first: stopped second, it would take over the
	// Lease the leader releases, at once.
	stops := []func() error{stopC, stopB}
	if c.Leading() {
		stops = []func() error{stopB, stopC}
	}
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}

	// The three leaderships, in order, never overlap.
	leads := rec.since(time.Time{})
	if len(leads) != 2 || leads[0].identity != "a" {
		t.Fatalf("got leaderships %v, want a's then one of b or c", identities(leads))
	}
	if !leads[1].start.After(leads[0].end) {
		t.Errorf("%s started leading at %s, before a stopped at %s", leads[1].identity,
			leads[1].start.Format(time.StampMicro), leads[0].end.Format(time.StampMicro))
	}
}

// partitioned is a LeasesGetter whose Lease writes fail once cut is set:
// a replica cut off from the API server, which can neither renew nor
// release its Lease.
type partitioned struct {
	coordinationv1client.LeasesGetter
	cut *atomic.Bool
}

func (p partitioned) Leases(namespace string) coordinationv1client.LeaseInterface {
	return partitionedLeases{LeaseInterface: p.LeasesGetter.Leases(namespace), cut: p.cut}
}

type partitionedLeases struct {
	coordinationv1client.LeaseInterface
	cut *atomic.Bool
}

func (l partitionedLeases) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if l.cut.Load() {
		return nil, errors.New("partitioned from the API server")
	}
	return l.LeaseInterface.Update(ctx, lease, opts)
}

// A leader that stops renewing without releasing (a SIGKILL, a partition:
// here Lease writes that fail from just before its Run is cancelled)
// leaves the Lease to run out. With a 9-second retry period a polling standby would take it over
// up to 19.8 seconds after it expired; the watching standby takes it at
// its expiry: LeaseDuration after it saw the last renewal, never before.
func TestAStandbyTakesAnExpiredLeaseAtItsExpiry(t *testing.T) {
	_, ns := setup(t)
	const lease = 12 * time.Second
	rec := &handlings{}
	var cutA atomic.Bool
	start := func(id string, cut *atomic.Bool) (*leaderelection.Runner, func() error) {
		return startRecorded(t, rec, leaderelection.Config{
			Name: "expiry", Namespace: ns, Identity: id,
			LeaseDuration: lease, RenewDeadline: 11 * time.Second, RetryPeriod: 9 * time.Second,
			Client: partitioned{LeasesGetter: leases(), cut: cut},
		})
	}
	a, stopA := start("a", &cutA)
	eventually(t, 10*time.Second, "a leads", a.Leading)
	b, stopB := start("b", new(atomic.Bool))
	time.Sleep(time.Second) // b's first attempt, at once, fails
	if b.Leading() {
		t.Fatal("b leads while a holds the Lease")
	}
	cutA.Store(true)
	if err := stopA(); err != nil { // no release: the Lease stays a's
		t.Fatalf("a: %v", err)
	}
	stopped := time.Now()
	// a's last renewal was before it stopped: the Lease expires within
	// lease of now, and b takes it at once (2s of slack for a loaded
	// machine; polling alone would take up to 2.2 retry periods more).
	eventually(t, lease+2*time.Second, "b leads once a's Lease expired", b.Leading)
	took := time.Since(stopped)
	t.Logf("b led %s after a stopped renewing (Lease %s, renewed every 9s at most)", took.Round(time.Millisecond), lease)
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	leads := rec.since(time.Time{})
	if len(leads) != 2 || leads[0].identity != "a" || leads[1].identity != "b" {
		t.Fatalf("got leaderships %v, want a's then b's", identities(leads))
	}
	// a's last renewal was at most a retry period before it stopped, and
	// b may not take over before LeaseDuration after it.
	if earliest := leads[0].end.Add(lease - 9*time.Second); leads[1].start.Before(earliest) {
		t.Errorf("b led at %s, before a's Lease could have expired (%s)", leads[1].start.Format(time.StampMilli), earliest.Format(time.StampMilli))
	}
}
