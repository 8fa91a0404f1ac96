package leaderelection_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	kooperle "github.com/kooperkit/kooper/kooper/controller/leaderelection"
)

// clientGoElector runs client-go's leader elector on the Lease ops/lease,
// as a replica of the previous kooper version did, and records in j when
// it leads. stop cancels it (recording the end of its leading first: it
// stops at once, and releases only after), and waits for it.
func clientGoElector(t *testing.T, client *fake.Clientset, j *journal, identity string, release bool) (stop func()) {
	t.Helper()
	cfg := testConfig(client, identity)
	var (
		mu      sync.Mutex
		leading = -1 // its entry in j while leading
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		ReleaseOnCancel: release,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				j.mu.Lock()
				mu.Lock()
				leading = len(j.entries)
				mu.Unlock()
				j.entries = append(j.entries, entry{identity: identity, start: time.Now()})
				j.mu.Unlock()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		elector.Run(ctx)
	}()
	return func() {
		j.mu.Lock()
		mu.Lock()
		if leading >= 0 {
			j.entries[leading].end = time.Now()
		}
		mu.Unlock()
		j.mu.Unlock()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("client-go's elector still runs 10s after it was cancelled")
		}
	}
}

// A rolling upgrade from a kooper version built on client-go's elector:
// one replica runs client-go's elector, the other a Runner, on one Lease.
// Each stands by while the other holds the Lease, takes it over once it is
// released or expired, and the two never lead at once.
func TestAClientGoElectorAndARunnerNeverLeadAtOnce(t *testing.T) {
	tests := []struct {
		name    string
		release bool
		// minGap is the least time from the client-go elector's end to
		// the Runner's start: LeaseDuration (1s) after the last renewal
		// when it expires, seen a RetryPeriod (100ms) before the elector
		// stopped, or more on a loaded machine. The other way, client-go's elector judges a
		// change on renewTime in whole seconds (its raw record), so with
		// a sub-second RetryPeriod it may date the Runner's last renewal
		// up to a second early: only the order is checked.
		minGap time.Duration
	}{
		{"released", true, 0},
		{"expired", false, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			client := newClient()
			j := &journal{}

			// client-go's elector leads, the Runner takes over.
			stopOld := clientGoElector(t, client, j, "old", tt.release)
			eventually(t, "client-go's elector leads", func() bool { return j.started("old") })
			cfg := testConfig(client, "new")
			if !tt.release {
				kooperle.KeepLease(&cfg)
			}
			cancelNew, waitNew := run(t, newRunner(t, cfg, j.runnable("new", 0)))
			time.Sleep(1200 * time.Millisecond) // past the Lease duration
			if j.started("new") {
				t.Fatal("the Runner leads while client-go's elector holds the Lease")
			}
			stopOld()
			eventually(t, "the Runner takes over", func() bool { return j.started("new") })

			// A new client-go elector stands by, and takes over from the
			// Runner.
			stopNext := clientGoElector(t, client, j, "next", true)
			time.Sleep(1200 * time.Millisecond)
			if j.started("next") {
				t.Fatal("client-go's elector leads while the Runner holds the Lease")
			}
			cancelNew()
			if err := waitNew(); err != nil {
				t.Fatalf("got the Runner's error %v, want nil", err)
			}
			eventually(t, "client-go's elector takes over", func() bool { return j.started("next") })
			stopNext()

			e := j.get()
			if len(e) != 3 {
				t.Fatalf("got %d leaderships, want 3", len(e))
			}
			for i, minGap := range []time.Duration{tt.minGap, 0} {
				prev, next := e[i], e[i+1]
				gap := next.start.Sub(prev.end)
				t.Logf("%s led %s after %s stopped", next.identity, gap.Round(time.Millisecond), prev.identity)
				if gap <= minGap {
					t.Errorf("%s led %s after %s stopped, want over %s", next.identity, gap, prev.identity, minGap)
				}
			}
			if gap := e[1].start.Sub(e[0].end); tt.release && gap > 500*time.Millisecond {
				t.Errorf("the Runner led %s after the released Lease, want at once (under 500ms)", gap)
			}
		})
	}
}
