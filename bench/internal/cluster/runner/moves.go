package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/ledger"
	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// ShardMoves is a membership run (ShardingMoves).
type ShardMoves struct {
	Pods int `json:"pods"`
	// Mode is how the replicas retrieved their share (sharding.Mode).
	Mode string `json:"mode"`
	// Changes are the membership changes in order; the first is the
	// start of the first replicas.
	Changes []ShardChange `json:"changes"`
	// Kill is the SIGKILL's takeover.
	Kill *ShardKill `json:"kill,omitempty"`
	// Restart is how long the API server's restart took (stopped,
	// started, ready).
	Restart time.Duration `json:"restart"`
	// Writes and WriteErrors count the writer's updates; errors come
	// while the API server restarts.
	Writes      int `json:"writes"`
	WriteErrors int `json:"writeErrors"`
	// Handlings counts every handling, by replica.
	Handlings map[string]int `json:"handlings"`
	// Overlaps counts the handlings that began before another of the same
	// key ended; Lost the pods whose final version (after the writer
	// stopped) was never handled. The run fails unless both are 0.
	Overlaps int      `json:"overlaps"`
	Lost     int      `json:"lost"`
	Problems []string `json:"problems,omitempty"` // up to 5 examples
	// FinalHandled is from the writer's stop to the first handling (its
	// end) of the last pod's final version; 0 if every final version had
	// been handled by then.
	FinalHandled time.Duration `json:"finalHandled"`
	// Rates are each replica's handlings per second, for the chart.
	Rates ShardRates `json:"rates"`
}

// ShardChange is one membership change.
type ShardChange struct {
	What string `json:"what"`
	// At is from the run's start.
	At time.Duration `json:"at"`
	// Replicas are the live replicas after it.
	Replicas []string `json:"replicas"`
	// Balanced is from the change to the live replicas' slots balanced
	// for good (until the next change); -1 if they were not by then.
	Balanced time.Duration `json:"balanced"`
	// Slots are how many slots each of Replicas owned at the next change.
	Slots []int `json:"slots"`
	// Acquired counts the slots each replica acquired from the change to
	// the next (ledger.Acquired): a slot given up and taken back counts
	// again, so the sum is at least the slots that had to move.
	Acquired map[string]int `json:"acquired"`
}

// ShardKill is the takeover of a killed replica's slots.
type ShardKill struct {
	Replica string `json:"replica"`
	// Slots is how many slots it owned when it was killed.
	Slots int `json:"slots"`
	// Owned is from the SIGKILL to its slots balanced over the others;
	// Handled to the first handling elsewhere of a pod of each of its
	// slots that holds one (the latest of them).
	Owned   time.Duration `json:"owned"`
	Handled time.Duration `json:"handled"`
}

// ShardRates are handlings per bucket: Counts[i][b] is Replicas[i]'s in
// bucket b (from the run's start, Width each).
type ShardRates struct {
	Width    time.Duration `json:"width"`
	Replicas []string      `json:"replicas"`
	Counts   [][]int       `json:"counts"`
}

// change is a membership change as it happens.
type change struct {
	what string
	at   int64
	live []*replica
}

// moves runs the membership changes on p.
func (r *runner) moves(ctx context.Context, p *plane, run *Record) (err error) {
	m := &ShardMoves{Pods: p.pods}
	run.Moves = m
	uids, _, err := pods.Versions(ctx, p.cluster.Config(), Namespace, p.pods)
	if err != nil {
		return err
	}
	slotOf := slotsOf(uids)
	dir, err := os.MkdirTemp("", "kooper-bench-sharding-")
	if err != nil {
		return fmt.Errorf("could not create the handlings directory: %w", err)
	}
	defer os.RemoveAll(dir)
	args := r.shardArgs(p)
	args.HandlerDelay = r.o.ShardingHandle
	lease := r.o.Lease

	f := newFleet(p.pods)
	defer func() {
		for _, rep := range f.reps {
			cpu, rerr := rep.end(err)
			run.TotalCPU += cpu
			if err == nil {
				err = rerr
			}
		}
	}()
	began := time.Now()
	var (
		live    []*replica
		changes []change
	)
	mark := func(what string, at time.Time) {
		changes = append(changes, change{what: what, at: at.UnixNano(), live: slices.Clone(live)})
		fmt.Fprintf(r.o.Progress, "sharding: %6.2fs %s\n", at.Sub(began).Seconds(), what)
	}
	progress := func() string {
		var parts []string
		for _, rep := range live {
			parts = append(parts, fmt.Sprintf("%s %d", rep.name, len(rep.state().Slots)))
		}
		return fmt.Sprintf("slots %s; %d/%d pods handled", strings.Join(parts, ", "), f.cover.Covered(), p.pods)
	}
	balanced := func(what string, timeout time.Duration) error {
		return f.waitUntil(ctx, timeout, what, func() bool { return balancedNow(live, sharding.DefaultSlots) }, progress)
	}
	hold := func() error {
		select {
		case <-time.After(r.o.ShardingHold):
			return f.poll()
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	start := func(name string) (*replica, error) {
		rep, err := r.startReplica(ctx, args, name, dir)
		if err != nil {
			return nil, err
		}
		f.reps = append(f.reps, rep)
		return rep, nil
	}
	find := func(name string) *replica {
		return live[slices.IndexFunc(live, func(rep *replica) bool { return rep.name == name })]
	}
	leave := func(rep *replica) {
		live = slices.DeleteFunc(live, func(other *replica) bool { return other == rep })
	}
	timeout := lease.LeaseDuration + margin

	// Three replicas, then the writer.
	for _, name := range []string{"a", "b", "c"} {
		rep, err := start(name)
		if err != nil {
			return err
		}
		live = append(live, rep)
	}
	at, err := goAll(live...)
	if err != nil {
		return err
	}
	mark("start a, b, c", at)
	if err := f.waitUntil(ctx, r.o.Timeout, "waiting for every pod handled and the slots balanced",
		func() bool { return f.cover.Complete() && balancedNow(live, sharding.DefaultSlots) }, progress); err != nil {
		return err
	}
	m.Mode = live[0].state().Mode
	if m.Mode != string(sharding.ModeServerSide) {
		return fmt.Errorf("the replicas detected %s sharding, want %s", m.Mode, sharding.ModeServerSide)
	}
	w := startWriter(p, args.Token, r.o.ShardingWriteEvery)
	writing := true
	defer func() {
		if writing {
			w.stop()
		}
	}()
	if err := hold(); err != nil {
		return err
	}

	// The changes; each returns when it happened.
	var killed *replica
	killIndex := -1
	stop := func(name string) (time.Time, error) {
		rep := find(name)
		leave(rep)
		at := time.Now()
		_, err := rep.stop(r.o.StopTimeout) // it gives up its slots and deletes its Lease
		return at, err
	}
	steps := []struct {
		what string
		do   func() (time.Time, error)
	}{
		{"start d: 4 replicas", func() (time.Time, error) {
			rep, err := start("d")
			if err != nil {
				return time.Time{}, err
			}
			live = append(live, rep)
			return goAll(rep)
		}},
		{"start e: 5 replicas", func() (time.Time, error) {
			rep, err := start("e")
			if err != nil {
				return time.Time{}, err
			}
			live = append(live, rep)
			return goAll(rep)
		}},
		{"stop e (clean): 4 replicas", func() (time.Time, error) { return stop("e") }},
		{"stop d (clean): 3 replicas", func() (time.Time, error) { return stop("d") }},
		{"SIGKILL a: 2 replicas", func() (time.Time, error) {
			killed = find("a")
			leave(killed)
			killIndex = len(changes)
			return time.Now(), killed.kill()
		}},
		{"API server restart", func() (time.Time, error) {
			at := time.Now()
			if err := p.cluster.RestartAPIServer(ctx); err != nil {
				return at, fmt.Errorf("could not restart the API server: %w", err)
			}
			m.Restart = time.Since(at)
			// A replica that could not renew within its deadline stops
			// and checks its claims again: by now it has, if it had to.
			return at, f.waitUntil(ctx, lease.RenewDeadline+2*time.Second, "waiting out the renew deadline",
				func() bool { return time.Since(at) > lease.RenewDeadline+time.Second }, progress)
		}},
	}
	for _, step := range steps {
		at, err := step.do()
		if err != nil {
			return fmt.Errorf("%s: %w", step.what, err)
		}
		mark(step.what, at)
		if err := balanced("waiting for the slots balanced after "+step.what, timeout); err != nil {
			return err
		}
		if err := hold(); err != nil {
			return err
		}
	}
	m.Writes, m.WriteErrors = w.stop()
	writing = false
	writerStopped := time.Now()
	end := writerStopped

	// Every pod's final version must be handled, by one replica or the
	// other; a version listed as final that a late write replaced is
	// checked again.
	final := map[int]string{}
	for attempt := 0; ; attempt++ {
		_, rvs, err := pods.Versions(ctx, p.cluster.Config(), Namespace, p.pods)
		if err != nil {
			return err
		}
		changed := false
		for i, rv := range rvs {
			if final[i] != rv {
				final[i], changed = rv, true
			}
		}
		if !changed || attempt == 3 {
			break
		}
		// Not in time: the pods are counted lost below. A replica that
		// failed meanwhile fails its stop.
		var lost []int
		_ = f.waitUntil(ctx, r.o.Timeout, "waiting for every final version handled",
			func() bool { lost = ledger.Lost(f.hs, final); return len(lost) == 0 },
			func() string { return fmt.Sprintf("%d pods' final version not handled", len(lost)) })
	}
	for _, rep := range live {
		if _, err := rep.stop(r.o.StopTimeout); err != nil {
			return err
		}
	}
	if err := f.poll(); err != nil {
		return err
	}
	cut, err := f.unfinished()
	if err != nil {
		return err
	}
	all := append(slices.Clone(f.hs), cut...)

	// The checks.
	var problems []error
	overlaps := ledger.Overlaps(all)
	m.Overlaps = len(overlaps)
	for i, o := range overlaps {
		if i < 5 {
			m.Problems = append(m.Problems, o.String())
		}
	}
	if len(overlaps) > 0 {
		problems = append(problems, fmt.Errorf("%d handlings began before another of the same key ended, e.g. %s", len(overlaps), overlaps[0]))
	}
	lost := ledger.Lost(all, final)
	m.Lost = len(lost)
	for i, key := range lost {
		if i < 5 {
			m.Problems = append(m.Problems, fmt.Sprintf("pod %s: final resourceVersion %s never handled", pods.Name(key), final[key]))
		}
	}
	if len(lost) > 0 {
		problems = append(problems, fmt.Errorf("%d pods' final resourceVersion was never handled, e.g. %s at %s", len(lost), pods.Name(lost[0]), final[lost[0]]))
	} else if last, ok := ledger.LastFirst(all, final); ok && last > writerStopped.UnixNano() {
		m.FinalHandled = time.Duration(last - writerStopped.UnixNano())
	}

	// The figures.
	var reports []ledger.SlotReport
	for _, rep := range f.reps {
		reports = append(reports, rep.slotReports()...)
	}
	for i, c := range changes {
		until := end.UnixNano()
		if i+1 < len(changes) {
			until = changes[i+1].at
		}
		sc := ShardChange{What: c.what, At: time.Duration(c.at - began.UnixNano()), Replicas: names(c.live), Balanced: -1}
		if at, ok := ledger.SettledAt(reports, sc.Replicas, sharding.DefaultSlots, c.at, until); ok {
			sc.Balanced = time.Duration(at - c.at)
		}
		sc.Slots = slotsAt(reports, sc.Replicas, until)
		sc.Acquired = ledger.Acquired(reports, c.at, until)
		m.Changes = append(m.Changes, sc)
	}
	if killIndex >= 0 {
		c := changes[killIndex]
		var slots []int // the killed replica's last report before the kill
		for _, rep := range reports {
			if rep.Replica == killed.name && rep.At <= c.at {
				slots = rep.Slots
			}
		}
		m.Kill = &ShardKill{Replica: killed.name, Slots: len(slots), Owned: m.Changes[killIndex].Balanced, Handled: -1}
		held := slices.DeleteFunc(slices.Clone(slots), func(slot int) bool { return !slices.Contains(slotOf, slot) })
		if at, ok := ledger.TakenOver(all, func(key int) int { return slotOf[key] }, held, killed.name, c.at); ok {
			m.Kill.Handled = time.Duration(at - c.at)
		}
	}
	m.Handlings = map[string]int{}
	for _, h := range all {
		m.Handlings[h.Replica]++
	}
	last := began.UnixNano()
	for _, h := range all {
		last = max(last, h.End)
	}
	m.Rates = ShardRates{Width: time.Second, Replicas: names(f.reps)}
	m.Rates.Counts = ledger.Rates(all, m.Rates.Replicas, began.UnixNano(), last+1, time.Second)
	return errors.Join(problems...)
}

// slotsAt returns how many slots each replica owned at t, going by
// reports.
func slotsAt(reports []ledger.SlotReport, replicas []string, t int64) []int {
	out := make([]int, len(replicas))
	for i, name := range replicas {
		var at int64 = -1
		for _, rep := range reports {
			if rep.Replica == name && rep.At <= t && rep.At >= at {
				at, out[i] = rep.At, len(rep.Slots)
			}
		}
	}
	return out
}

// writer updates random pods, one at a time, one every interval.
type writer struct {
	quit         chan struct{}
	wg           sync.WaitGroup
	writes, errs int
}

// startWriter starts updating random pods of p every interval (pods.Touch
// with token). A write that fails (the API server restarting) is counted
// and skipped.
func startWriter(p *plane, token string, every time.Duration) *writer {
	w := &writer{quit: make(chan struct{})}
	w.wg.Go(func() {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 6))
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
			// Not cancelled by stop: a write the client gave up on could
			// still be stored after the final versions were listed.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := pods.Touch(ctx, p.client, Namespace, rng.IntN(p.pods), token)
			cancel()
			w.writes++
			if err != nil {
				w.errs++
			}
		}
	})
	return w
}

// stop stops the writer after its write in flight and returns its counts.
func (w *writer) stop() (writes, errs int) {
	close(w.quit)
	w.wg.Wait()
	return w.writes, w.errs
}
