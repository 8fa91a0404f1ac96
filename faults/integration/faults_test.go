package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kooperkit/kooper/faults"
	"github.com/kooperkit/kooper/hack/envtest"
)

var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	faults.RunReplicaIfAsked()
	os.Exit(envtest.RunTests(m, envtest.Options{APIServerArgs: faults.APIServerArgs}, &cluster))
}

var runs atomic.Int32

// newHarness starts replicas of the test controller in a namespace of
// their own, and writers changing 40 ConfigMaps every 20ms; it stops them
// after the test.
func newHarness(t *testing.T, rng *rand.Rand, replicas int) *faults.Harness {
	t.Helper()
	h := &faults.Harness{
		Cluster:   cluster,
		Namespace: fmt.Sprintf("faults-%d-%d", os.Getpid(), runs.Add(1)),
		Dir:       t.TempDir(),
		Objects:   40,
		Logf:      t.Logf,
	}
	if err := h.Start(context.Background(), replicas); err != nil {
		t.Fatal(err)
	}
	h.StopWhenDone(t, 30)
	// The writers draw from a generator of their own: the faults' stay a
	// function of the seed.
	h.StartWriters(20*time.Millisecond, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	return h
}

// converge stops the writers and waits until every final version is
// handled, then checks that no key was handled twice at once.
func converge(t *testing.T, h *faults.Harness, seed uint64) {
	t.Helper()
	h.StopWriters()
	began := time.Now()
	if err := h.Converged(context.Background(), 60*time.Second); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	n, frozen, err := h.Check()
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	t.Logf("converged %s after the faults; %d handlings, none of one key at once (%d frozen by a SIGSTOP mid-handling)",
		time.Since(began).Round(time.Millisecond), n, frozen)
}

// seed is FAULTS_SEED, or a new one.
func seed(t *testing.T) uint64 {
	s, err := faults.Seed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Each fault on its own, one after the other against two replicas, with
// the invariants checked after each.
func TestEachFault(t *testing.T) {
	s := seed(t)
	t.Logf("seed %d (FAULTS_SEED=%d to repeat)", s, s)
	rng := rand.New(rand.NewPCG(s, s))
	h := newHarness(t, rng, 2)
	ctx := context.Background()
	if _, err := h.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range faults.Faults {
		t.Run(f.Name, func(t *testing.T) {
			what, err := f.Inject(ctx, h, rng)
			if err != nil {
				t.Fatalf("seed %d: %s: %v", s, f.Name, err)
			}
			t.Log(what)
			if _, _, err := h.Check(); err != nil {
				t.Fatalf("seed %d: after %s: %v", s, what, err)
			}
		})
	}
	converge(t, h, s)
}

// Faults mixed at random for FAULTS_DURATION (default 45s) against three
// replicas, from a seed the test prints; the run fails on the first
// violation, naming the seed.
func TestMixedFaults(t *testing.T) {
	s := seed(t)
	d := 45 * time.Second
	if v := os.Getenv("FAULTS_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("FAULTS_DURATION=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (FAULTS_SEED=%d to repeat), for %s", s, s, d)
	rng := rand.New(rand.NewPCG(s, s))
	h := newHarness(t, rng, 3)
	kinds, err := faults.ParseKinds(os.Getenv("FAULTS_KINDS"))
	if err != nil {
		t.Fatalf("FAULTS_KINDS: %v", err)
	}
	counts, err := faults.Mix(context.Background(), h, rng, kinds, d, func() error {
		_, _, err := h.Check()
		return err
	})
	if err != nil {
		t.Fatalf("seed %d: %v", s, err)
	}
	t.Logf("faults injected: %v", counts)
	converge(t, h, s)
}
