package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
)

// Scenario 4's two runs per implementation.
const (
	// FailoverStop stops the leader cleanly (its context is cancelled).
	FailoverStop = "failover-stop"
	// FailoverKill kills the leader with SIGKILL.
	FailoverKill = "failover-kill"
)

// Failover is one failover run: two replicas of one implementation on one
// Lease, the leader stopped or killed.
type Failover struct {
	// Mode is "stop" or "kill".
	Mode string `json:"mode"`
	// Leader is the first replica's initial sync, as it led.
	Leader *child.Sync `json:"leader,omitempty"`
	// LeaderStop is the leader's clean stop (Mode "stop").
	LeaderStop *child.Stop `json:"leaderStop,omitempty"`
	// Standby is the second replica's state just before the leader stopped.
	Standby *child.Standby `json:"standby,omitempty"`
	// Takeover is what the second replica did once it led.
	Takeover *child.Takeover `json:"takeover,omitempty"`
	// FirstHandled and AllHandled are from the parent's stop request (or
	// SIGKILL) to the new leader's first handling, and to its handling of
	// every pod.
	FirstHandled time.Duration `json:"firstHandled"`
	AllHandled   time.Duration `json:"allHandled"`
}

// errAbandoned is why a failed run kills its leader.
var errAbandoned = errors.New("abandoned")

// failover runs two replicas of impl on a new Lease: the leader alone until
// it handled every pod, then the standby for StandbySettle, then it stops
// (scenario FailoverStop) or kills (FailoverKill) the leader and measures
// the standby's takeover.
func (r *runner) failover(ctx context.Context, impl, scenario string, round int) Record {
	run := Record{Impl: impl, Scenario: scenario, Round: round, Failover: &Failover{Mode: "stop"}}
	if scenario == FailoverKill {
		run.Failover.Mode = "kill"
	}
	r.runs++
	election := r.o.Lease
	election.Namespace, election.Name = Namespace, fmt.Sprintf("bench-failover-%04d", r.runs%10000)
	args := child.Args{
		Impl:          impl,
		Scenario:      child.Failover,
		Kubeconfig:    r.kubeconfig,
		Pods:          r.o.Pods,
		Token:         fmt.Sprintf("run-%04d", r.runs%10000),
		Timeout:       r.o.Timeout,
		StopTimeout:   r.o.StopTimeout,
		Role:          child.RoleLeader,
		Election:      election,
		StandbySettle: r.o.StandbySettle,
	}
	select {
	case <-time.After(r.o.Settle):
	case <-ctx.Done():
	}
	if err := r.failoverRun(ctx, args, &run); err != nil {
		run.Err = err.Error()
	}
	return run
}

func (r *runner) failoverRun(ctx context.Context, args child.Args, run *Record) (err error) {
	f := run.Failover
	leader, err := r.startChild(ctx, args)
	if err != nil {
		return fmt.Errorf("leader: %w", err)
	}
	leaderEnded := false
	defer func() {
		if !leaderEnded { // the run failed: kill the leader, say what it said
			_, lerr := leader.end(errAbandoned)
			err = fmt.Errorf("%w; leader: %w", err, lerr)
		}
	}()
	m, err := leader.next(r.o.Timeout + margin)
	if err != nil {
		return fmt.Errorf("waiting for the leader's sync: %w", err)
	}
	if f.Leader = m.Synced; f.Leader == nil {
		return fmt.Errorf("got %+v from the leader, want the sync", m)
	}

	args.Role = child.RoleStandby
	standby, err := r.startChild(ctx, args)
	if err != nil {
		return fmt.Errorf("standby: %w", err)
	}
	defer func() { run.TotalCPU, err = standby.end(err) }()
	if m, err = standby.next(r.o.StandbySettle + r.o.Timeout + margin); err != nil {
		return fmt.Errorf("waiting for the standby: %w", err)
	}
	if f.Standby = m.StandingBy; f.Standby == nil {
		return fmt.Errorf("got %+v from the standby, want it standing by", m)
	}

	stopped := time.Now()
	if f.Mode == "kill" {
		if err := leader.kill(); err != nil {
			return err
		}
	} else if f.LeaderStop, err = leader.stop(r.o.StopTimeout); err != nil {
		return fmt.Errorf("leader: %w", err)
	}
	leaderEnded = true
	if _, err := leader.end(nil); err != nil {
		return fmt.Errorf("leader: %w", err)
	}

	if m, err = standby.next(args.Election.LeaseDuration + r.o.Timeout + margin); err != nil {
		return fmt.Errorf("waiting for the takeover: %w", err)
	}
	if f.Takeover = m.TookOver; f.Takeover == nil {
		return fmt.Errorf("got %+v from the standby, want the takeover", m)
	}
	f.FirstHandled = time.Unix(0, f.Takeover.FirstAt).Sub(stopped)
	f.AllHandled = time.Unix(0, f.Takeover.AllAt).Sub(stopped)
	run.Stop, err = standby.stop(r.o.StopTimeout)
	return err
}
