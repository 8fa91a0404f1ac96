package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kooperkit/kooper/bench/internal/cluster/child"
	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
)

// FreshNamespaces hold the pods scenario 5 creates during the initial
// backlog and during the resync; they are emptied before and after each
// run, so the seeded namespace never changes.
var FreshNamespaces = [2]string{"bench-fresh-sync", "bench-fresh-resync"}

// fresh runs impl's scenario 5 in a fresh child: every handling sleeps
// FreshHandle, resyncs come every FreshResync, and the parent creates
// FreshPods pods once the initial backlog is being handled and again once a
// resync is.
func (r *runner) fresh(ctx context.Context, impl string, round int) Record {
	run := Record{Impl: impl, Scenario: child.Fresh, Round: round}
	r.runs++
	args := child.Args{
		Impl:            impl,
		Scenario:        child.Fresh,
		Kubeconfig:      r.kubeconfig,
		Pods:            r.o.Pods,
		Token:           fmt.Sprintf("run-%04d", r.runs%10000),
		HandlerDelay:    r.o.FreshHandle,
		Timeout:         r.o.Timeout,
		StopTimeout:     r.o.StopTimeout,
		Resync:          r.o.FreshResync,
		FreshPods:       r.o.FreshPods,
		FreshNamespaces: FreshNamespaces,
	}
	err := r.clearFresh(ctx)
	if err == nil {
		select {
		case <-time.After(r.o.Settle):
		case <-ctx.Done():
		}
		err = r.freshRun(ctx, args, &run)
		err = errors.Join(err, r.clearFresh(ctx))
	}
	if err != nil {
		run.Err = err.Error()
	}
	return run
}

func (r *runner) clearFresh(ctx context.Context) error {
	for _, ns := range FreshNamespaces {
		if err := pods.Clear(ctx, r.client, ns); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) freshRun(ctx context.Context, args child.Args, run *Record) (err error) {
	c, err := r.startChild(ctx, args)
	if err != nil {
		return err
	}
	defer func() { run.TotalCPU, err = c.end(err) }()
	for i, phase := range child.FreshPhases {
		wait := r.o.Timeout + margin
		if i > 0 {
			wait += args.Resync
		}
		m, err := c.next(wait)
		if err != nil {
			return fmt.Errorf("waiting for the %s backlog: %w", phase, err)
		}
		if m.Backlog == nil && m.Resyncing == nil {
			return fmt.Errorf("got %+v, want a backlog under way", m)
		}
		if err := pods.Create(ctx, r.client, args.FreshNamespaces[i], args.FreshPods, r.o.FreshEvery, args.Token); err != nil {
			return err
		}
		if m, err = c.next(r.o.Timeout + margin); err != nil {
			return fmt.Errorf("waiting for the pods created during the %s: %w", phase, err)
		}
		if m.FreshHandled == nil {
			return fmt.Errorf("got %+v, want the created pods handled", m)
		}
		run.Fresh = append(run.Fresh, *m.FreshHandled)
	}
	run.Stop, err = c.stop(r.o.StopTimeout)
	return err
}
