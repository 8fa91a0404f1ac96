package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/ledger"
)

// replica is a running sharding child as the parent sees it: its
// messages (states apart), its slot reports and its handlings file.
type replica struct {
	name string
	c    *childProc
	tail *ledger.Tail
	// ctl has the child's messages other than ShardState.
	ctl  chan child.Message
	quit chan struct{}
	pump sync.WaitGroup

	mu      sync.Mutex
	last    child.ShardState
	reports []ledger.SlotReport
	// killedAt is when the parent sent SIGKILL (Unix nanoseconds), or 0.
	killedAt int64
	// gone is set once the parent stops or kills the replica.
	gone  bool
	ended bool
}

// startReplica starts a sharding child named name (empty: the unsharded
// baseline, "base" in reports) recording its handlings in dir, and waits
// until it is ready for the go.
func (r *runner) startReplica(ctx context.Context, args child.Args, name, dir string) (*replica, error) {
	label := name
	if label == "" {
		label = "base"
	}
	args.Replica = name
	args.Handlings = filepath.Join(dir, label+".handlings")
	c, err := r.startChild(ctx, args)
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", label, err)
	}
	rep := &replica{name: label, c: c, tail: ledger.NewTail(args.Handlings, label), ctl: make(chan child.Message), quit: make(chan struct{})}
	rep.pump.Go(func() {
		defer close(rep.ctl)
		for m := range c.msgs {
			if s := m.ShardState; s != nil {
				rep.mu.Lock()
				if len(rep.reports) == 0 || !slices.Equal(rep.last.Slots, s.Slots) {
					rep.reports = append(rep.reports, ledger.SlotReport{Replica: label, At: s.At, Slots: s.Slots})
				}
				rep.last = *s
				rep.mu.Unlock()
				continue
			}
			select {
			case rep.ctl <- m:
			case <-rep.quit:
				return
			}
		}
	})
	m, err := rep.next(r.o.Timeout)
	if err == nil && m.ShardReady == nil {
		err = fmt.Errorf("got %+v, want ready", m)
	}
	if err != nil {
		_, err = rep.end(err)
		return nil, fmt.Errorf("replica %s: %w", label, err)
	}
	return rep, nil
}

// next returns the replica's next message other than a state.
func (rep *replica) next(d time.Duration) (child.Message, error) { return next(rep.ctl, d) }

// state returns the replica's last reported state.
func (rep *replica) state() child.ShardState {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	return rep.last
}

// slotReports returns the replica's slot reports so far.
func (rep *replica) slotReports() []ledger.SlotReport {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	return slices.Clone(rep.reports)
}

// send writes a command line to the replica's stdin.
func (rep *replica) send(cmd string) error {
	if _, err := io.WriteString(rep.c.stdin, cmd+"\n"); err != nil {
		return fmt.Errorf("could not send %q to replica %s: %w", cmd, rep.name, err)
	}
	return nil
}

// measure asks the replica for its memory and cache.
func (rep *replica) measure(d time.Duration) (*child.ShardMeasured, error) {
	if err := rep.send(child.ShardMeasure); err != nil {
		return nil, err
	}
	m, err := rep.next(d)
	if err == nil && m.ShardMeasured == nil {
		err = fmt.Errorf("got %+v, want the measurement", m)
	}
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", rep.name, err)
	}
	return m.ShardMeasured, nil
}

// stop asks the replica to stop (closes its stdin) and requires its
// Stopped message within d (plus margin), then its exit.
func (rep *replica) stop(d time.Duration) (*child.Stop, error) {
	rep.mu.Lock()
	rep.gone = true
	rep.mu.Unlock()
	if err := rep.c.stdin.Close(); err != nil {
		return nil, fmt.Errorf("could not ask replica %s to stop: %w", rep.name, err)
	}
	m, err := rep.next(d + margin)
	if err == nil && m.Stopped == nil {
		err = fmt.Errorf("got %+v, want the stop", m)
	}
	if err != nil {
		return nil, fmt.Errorf("replica %s: waiting for the stop: %w", rep.name, err)
	}
	select {
	case _, open := <-rep.ctl:
		if open {
			return nil, fmt.Errorf("replica %s wrote after it stopped", rep.name)
		}
	case <-time.After(margin):
		return nil, fmt.Errorf("replica %s did not exit within %s of stopping", rep.name, margin)
	}
	return m.Stopped, nil
}

// kill sends the replica SIGKILL and notes when.
func (rep *replica) kill() error {
	rep.mu.Lock()
	rep.killedAt = time.Now().UnixNano()
	rep.gone = true
	rep.mu.Unlock()
	return rep.c.kill()
}

// end reaps the replica (killing it first if err is not nil), once.
func (rep *replica) end(err error) (time.Duration, error) {
	rep.mu.Lock()
	ended := rep.ended
	rep.ended = true
	rep.mu.Unlock()
	if ended {
		return 0, err
	}
	close(rep.quit)
	cpu, err := rep.c.end(err)
	rep.pump.Wait()
	if err != nil {
		err = fmt.Errorf("replica %s: %w", rep.name, err)
	}
	return cpu, err
}

// fleet is the replicas of one run, and every handling read from their
// files so far.
type fleet struct {
	reps  []*replica
	cover *ledger.Coverage
	hs    []ledger.Handling
}

func newFleet(pods int) *fleet { return &fleet{cover: ledger.NewCoverage(pods)} }

// poll reads the handlings the replicas recorded since the last poll.
func (f *fleet) poll() error {
	var errs []error
	for _, rep := range f.reps {
		hs, err := rep.tail.Read()
		f.hs = append(f.hs, hs...)
		f.cover.Add(hs)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// goAll sends the go to every replica given, at once, and returns when.
func goAll(reps ...*replica) (time.Time, error) {
	at := time.Now()
	for _, rep := range reps {
		if err := rep.send(child.ShardGo); err != nil {
			return at, err
		}
	}
	return at, nil
}

// names returns the names of the replicas given.
func names(reps []*replica) []string {
	out := make([]string, len(reps))
	for i, rep := range reps {
		out[i] = rep.name
	}
	return out
}

// balancedNow reports whether the live replicas' last reported slots are
// balanced.
func balancedNow(live []*replica, count int) bool {
	owned := map[string][]int{}
	for _, rep := range live {
		owned[rep.name] = rep.state().Slots
	}
	return ledger.Balanced(owned, names(live), count)
}

// unfinished returns the handlings that began and never ended: in a
// replica that was killed, they end when it was killed; in any other, they
// are an error.
func (f *fleet) unfinished() ([]ledger.Handling, error) {
	var out []ledger.Handling
	var errs []error
	for _, rep := range f.reps {
		rep.mu.Lock()
		killedAt := rep.killedAt
		rep.mu.Unlock()
		for _, h := range rep.tail.Open() {
			if killedAt == 0 {
				errs = append(errs, fmt.Errorf("a handling never returned in replica %s, which stopped cleanly: %s", rep.name, h))
				continue
			}
			h.End = max(killedAt, h.Start)
			out = append(out, h)
		}
	}
	return out, errors.Join(errs...)
}

// waitUntil polls the fleet's handlings and cond every 20 ms until cond
// holds, ctx is done or timeout passes; what and progress say what it
// waited for.
func (f *fleet) waitUntil(ctx context.Context, timeout time.Duration, what string, cond func() bool, progress func() string) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := f.poll(); err != nil {
			return err
		}
		if err := f.failed(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s (%s)", what, timeout, progress())
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, context.Cause(ctx))
		}
	}
}

// failed returns why a replica that should be running failed or exited:
// meanwhile a replica says nothing but its states.
func (f *fleet) failed() error {
	for _, rep := range f.reps {
		rep.mu.Lock()
		gone := rep.gone || rep.ended
		rep.mu.Unlock()
		if gone {
			continue
		}
		select {
		case m, open := <-rep.ctl:
			if !open {
				return fmt.Errorf("replica %s exited", rep.name)
			}
			if m.Error != "" {
				return fmt.Errorf("replica %s failed: %s", rep.name, m.Error)
			}
			return fmt.Errorf("replica %s said %+v, want nothing but its state", rep.name, m)
		default:
		}
	}
	return nil
}
