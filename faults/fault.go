package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Fault is one kind of failure the harness injects: Inject brings it
// about, waits while it lasts, and ends it; it returns what it did, for
// the log.
type Fault struct {
	Name   string
	Inject func(ctx context.Context, h *Harness, rng *rand.Rand) (string, error)
}

// Faults are every kind, each on its own; Mixed picks among them.
var Faults = []Fault{
	{"reset", reset},
	{"latency", latency},
	{"blackhole", blackhole},
	{"apiserver-restart", apiserverRestart},
	{"etcd-restart", etcdRestart},
	{"compaction", compaction},
	{"429-storm", storm},
	{"sigkill-leader", sigkillLeader},
	{"sigstop-leader", sigstopLeader},
}

// FaultNamed returns the fault called name.
func FaultNamed(name string) (Fault, bool) {
	for _, f := range Faults {
		if f.Name == name {
			return f, true
		}
	}
	return Fault{}, false
}

// Seed is the seed in FAULTS_SEED, to repeat a run's faults, or a new one.
func Seed() (uint64, error) {
	if s := os.Getenv("FAULTS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("FAULTS_SEED=%q: %w", s, err)
		}
		return v, nil
	}
	return uint64(time.Now().UnixNano()), nil
}

// ParseKinds returns the faults a comma-separated list names, e.g.
// "latency,etcd-restart" (FAULTS_KINDS, to hunt a failure), or all of them
// for "".
func ParseKinds(list string) ([]Fault, error) {
	if list == "" {
		return Faults, nil
	}
	var kinds []Fault
	for name := range strings.SplitSeq(list, ",") {
		f, ok := FaultNamed(name)
		if !ok {
			return nil, fmt.Errorf("no fault %q", name)
		}
		kinds = append(kinds, f)
	}
	return kinds, nil
}

// Mix injects faults drawn by rng from kinds, 0-3s apart, until d has
// passed; after each it logs what it did (h.Logf) and calls check. It
// returns how many of each kind it injected, and stops at the first error
// of a fault or of check, which names the fault. The same rng seed draws
// the same faults.
func Mix(ctx context.Context, h *Harness, rng *rand.Rand, kinds []Fault, d time.Duration, check func() error) (map[string]int, error) {
	counts := map[string]int{}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		f := kinds[rng.IntN(len(kinds))]
		what, err := f.Inject(ctx, h, rng)
		if err != nil {
			return counts, fmt.Errorf("%s: %w", f.Name, err)
		}
		counts[f.Name]++
		h.Logf("%s %s", time.Now().Format("15:04:05.000"), what)
		if err := check(); err != nil {
			return counts, fmt.Errorf("after %s: %w", what, err)
		}
		sleep(ctx, time.Duration(rng.IntN(3000))*time.Millisecond)
	}
	return counts, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// between is a random duration in [lo, hi].
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// reset resets every connection of every replica, watches mid-stream
// included, three times a second apart.
func reset(ctx context.Context, h *Harness, _ *rand.Rand) (string, error) {
	for range 3 {
		for _, r := range h.Replicas() {
			heal, err := r.Proxy.Reset()
			if err != nil {
				return "", err
			}
			sleep(ctx, 50*time.Millisecond)
			heal()
		}
		sleep(ctx, time.Second)
	}
	return "reset every replica's connections 3 times", nil
}

// latency delays every request and response of every replica by 0.5-3s
// for a while: longer than RenewDeadline, so the leader may lose the
// Lease.
func latency(ctx context.Context, h *Harness, rng *rand.Rand) (string, error) {
	ms := 500 + rng.IntN(2500)
	hold := between(rng, 3*time.Second, 8*time.Second)
	var heals []func()
	for _, r := range h.Replicas() {
		heal, err := r.Proxy.Latency(ms, ms/4)
		if err != nil {
			return "", err
		}
		heals = append(heals, heal)
	}
	sleep(ctx, hold)
	for _, heal := range heals {
		heal()
	}
	return fmt.Sprintf("%dms latency on every connection for %s", ms, hold.Round(time.Millisecond)), nil
}

// blackhole lets nothing through the leader's proxy, closing nothing, for
// longer than the Lease: a standby takes over while the leader is cut off.
func blackhole(ctx context.Context, h *Harness, rng *rand.Rand) (string, error) {
	r, err := h.Leader(ctx)
	if err != nil {
		return "", err
	}
	hold := between(rng, h.leaseDuration()+time.Second, 3*h.leaseDuration())
	heal, err := r.Proxy.Blackhole()
	if err != nil {
		return "", err
	}
	sleep(ctx, hold)
	heal()
	return fmt.Sprintf("blackholed leader %s for %s", r.ID(), hold.Round(time.Millisecond)), nil
}

func apiserverRestart(ctx context.Context, h *Harness, rng *rand.Rand) (string, error) {
	down := between(rng, 0, 3*time.Second)
	h.Cluster.StopAPIServer()
	sleep(ctx, down)
	if err := h.Cluster.StartAPIServer(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("API server down %s", down.Round(time.Millisecond)), nil
}

func etcdRestart(ctx context.Context, h *Harness, rng *rand.Rand) (string, error) {
	down := between(rng, time.Second, 5*time.Second)
	h.Cluster.StopEtcd()
	sleep(ctx, down)
	if err := h.Cluster.StartEtcd(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("etcd down %s", down.Round(time.Millisecond)), nil
}

// compaction cuts the leader off while writes go on, compacts etcd, and
// restarts the API server (whose new watch cache starts after the
// compaction): the leader's watch resumes from a version that is gone and
// must list again.
func compaction(ctx context.Context, h *Harness, _ *rand.Rand) (string, error) {
	r, err := h.Leader(ctx)
	if err != nil {
		return "", err
	}
	heal, err := r.Proxy.Blackhole()
	if err != nil {
		return "", err
	}
	sleep(ctx, 2*time.Second)
	rev, err := CompactEtcd(ctx, h.Cluster.EtcdURL())
	if err != nil {
		heal()
		return "", err
	}
	if err := h.Cluster.RestartAPIServer(ctx); err != nil {
		heal()
		return "", err
	}
	heal()
	return fmt.Sprintf("compacted etcd at revision %d while leader %s was cut off, then restarted the API server", rev, r.ID()), nil
}

func storm(ctx context.Context, h *Harness, rng *rand.Rand) (string, error) {
	d := between(rng, 3*time.Second, 6*time.Second)
	n, err := h.Storm(ctx, d, 40)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s of 40 concurrent LISTs: the API server answered 429 %d times", d.Round(time.Millisecond), n), nil
}

func sigkillLeader(ctx context.Context, h *Harness, _ *rand.Rand) (string, error) {
	r, _, err := h.signalLeader(ctx, syscall.SIGKILL)
	if err != nil {
		return "", err
	}
	id := r.ID() // before the supervisor starts the next process
	sleep(ctx, 2*time.Second)
	return "SIGKILL of leader " + id, nil
}

// signalLeader sends sig to the leader's process, and returns it and when
// the signal was sent. The leader may exit between the Lease's read and the
// signal (it lost the Lease): then it looks for the leader again, a few
// times.
func (h *Harness) signalLeader(ctx context.Context, sig syscall.Signal) (*Replica, time.Time, error) {
	for try := 0; ; try++ {
		r, err := h.Leader(ctx)
		if err != nil {
			return nil, time.Time{}, err
		}
		sent := time.Now()
		err = r.Signal(sig)
		if err == nil || !errors.Is(err, os.ErrProcessDone) || try == 4 {
			return r, sent, err
		}
		sleep(ctx, 500*time.Millisecond)
	}
}

// sigstopLeader stops the leader for longer than its Lease: a standby
// takes over, and the old leader must not handle when it wakes up.
func sigstopLeader(ctx context.Context, h *Harness, rng *rand.Rand) (string, error) {
	hold := between(rng, h.leaseDuration()+2*time.Second, 3*h.leaseDuration())
	// The pause begins as the signal is sent, not before the Lease's read:
	// a handling begun meanwhile was not frozen by it.
	r, from, err := h.signalLeader(ctx, syscall.SIGSTOP)
	if err != nil {
		return "", err
	}
	sleep(ctx, hold)
	if err := r.Signal(syscall.SIGCONT); err != nil {
		return "", err
	}
	h.Paused(r, from, time.Now())
	sleep(ctx, 2*time.Second)
	return fmt.Sprintf("SIGSTOP of leader %s for %s, then SIGCONT", r.ID(), hold.Round(time.Millisecond)), nil
}
