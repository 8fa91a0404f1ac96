package child

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/bench/internal/cluster/impls"
	"github.com/kooperkit/kooper/bench/internal/cluster/ledger"
	"github.com/kooperkit/kooper/bench/internal/cluster/pods"
	"github.com/kooperkit/kooper/bench/internal/cluster/proc"
)

// The Sharding conversation (scenario 6, Kooper only): one replica of a
// sharded controller per child (Replica set: impls.ShardReplica with a
// group) or the unsharded baseline (plain Run):
//
//  1. ShardReady once the settled heap before the start is measured. The
//     parent starts the children it needs, then writes ShardGo to the
//     stdin of each, at once.
//  2. After ShardGo: ShardState whenever the replica's slots change
//     (Runner.Slots, checked every SlotPoll), and every StateEvery anyway.
//  3. On a ShardMeasure line: ShardMeasured.
//  4. Every handling is recorded in the Handlings file (package ledger) as
//     it begins and as it ends; it sleeps HandlerDelay in between.
//  5. stdin's end: Stopped once Run returned (a replica leaves its group
//     on the way: gives up its slots, its handlings returned, and deletes
//     its Lease).

// Commands the parent writes to a Sharding child's stdin, one per line.
const (
	ShardGo      = "go"
	ShardMeasure = "measure"
)

// How often a Sharding child looks at its slots, and reports its state
// even if they did not change.
const (
	SlotPoll   = 10 * time.Millisecond
	StateEvery = 250 * time.Millisecond
)

// ShardReady says the child is waiting for ShardGo.
type ShardReady struct{}

// ShardState is a replica's state at At (Unix nanoseconds).
type ShardState struct {
	At int64 `json:"at"`
	// Mode is "server-side" or "client-side" (once detected), or
	// "unsharded".
	Mode  string `json:"mode"`
	Slots []int  `json:"slots"`
	// Cached is how many objects the controller's cache holds.
	Cached int `json:"cached"`
	// Delivered is how many objects its Retriever delivered so far.
	Delivered int64 `json:"delivered"`
	// Handlings counts the handlings that began.
	Handlings int64 `json:"handlings"`
}

// ShardMeasured is a replica's memory and cache when the parent asked.
type ShardMeasured struct {
	ShardState
	// Heap is the settled heap (two GCs) now minus the one before the
	// start, in bytes.
	Heap int64 `json:"heap"`
	// RSS is VmRSS in bytes now.
	RSS uint64 `json:"rss"`
	// Requests are the HTTP requests made so far.
	Requests []string `json:"requests"`
}

func (e *env) sharding() error {
	a := e.a
	rec, err := ledger.Create(a.Handlings)
	if err != nil {
		return err
	}
	var group *impls.ShardGroup
	if a.Replica != "" {
		group = &impls.ShardGroup{Election: a.Election, Identity: a.Replica}
	}
	var handlings atomic.Int64
	handle := func(ctx context.Context, obj metav1.Object) {
		i, ok := pods.Index(obj.GetName())
		if !ok {
			return
		}
		rv := obj.GetResourceVersion()
		start := rec.Begin(i, rv)
		handlings.Add(1)
		if a.HandlerDelay > 0 {
			t := time.NewTimer(a.HandlerDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		rec.End(i, rv, start)
	}

	heap0 := proc.SettledHeap()
	if err := e.out.Encode(Message{ShardReady: &ShardReady{}}); err != nil {
		return errors.Join(fmt.Errorf("could not report ready: %w", err), rec.Close())
	}
	if err := e.awaitGo(); err != nil {
		return errors.Join(err, rec.Close())
	}
	replica, err := impls.NewShardReplica(rest.CopyConfig(e.cfg), a.Election.Namespace, handle, group)
	if err != nil {
		return errors.Join(err, rec.Close())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- replica.Run(ctx) }()
	state := func() ShardState {
		return ShardState{At: time.Now().UnixNano(), Mode: replica.Mode(), Slots: replica.Slots(),
			Cached: replica.Cached(), Delivered: replica.Delivered(), Handlings: handlings.Load()}
	}

	var stopped Stop
	err = e.report(replica, state, heap0, done)
	if err == nil {
		stopped.Elapsed, err = e.stopSharded(cancel, done)
	}
	if err = errors.Join(err, rec.Close()); err != nil {
		return err
	}
	if err := e.out.Encode(Message{Stopped: &stopped}); err != nil {
		return fmt.Errorf("could not report the stop: %w", err)
	}
	return nil
}

// awaitGo waits for ShardGo; a stop request first is a failure.
func (e *env) awaitGo() error {
	for {
		select {
		case cmd := <-e.commands:
			if cmd == ShardGo {
				return nil
			}
		case <-e.stopCtx.Done():
			return errors.New("asked to stop before the go")
		}
	}
}

// report reports the replica's state until the parent asks the child to
// stop, and measures it when asked.
func (e *env) report(replica *impls.ShardReplica, state func() ShardState, heap0 uint64, done <-chan error) error {
	poll := time.NewTicker(SlotPoll)
	defer poll.Stop()
	every := time.NewTicker(StateEvery)
	defer every.Stop()
	var last []int
	send := func(s ShardState) error {
		last = s.Slots
		if err := e.out.Encode(Message{ShardState: &s}); err != nil {
			return fmt.Errorf("could not report the state: %w", err)
		}
		return nil
	}
	if err := send(state()); err != nil {
		return err
	}
	for {
		select {
		case <-poll.C:
			if slots := replica.Slots(); !slices.Equal(slots, last) {
				if err := send(state()); err != nil {
					return err
				}
			}
		case <-every.C:
			if err := send(state()); err != nil {
				return err
			}
		case cmd := <-e.commands:
			if cmd != ShardMeasure {
				continue
			}
			heap := proc.SettledHeap()
			mem, err := proc.ReadMemory()
			if err != nil {
				return err
			}
			if err := e.out.Encode(Message{ShardMeasured: &ShardMeasured{
				ShardState: state(),
				Heap:       int64(heap) - int64(heap0),
				RSS:        mem.RSS,
				Requests:   e.reqs.snapshot(),
			}}); err != nil {
				return fmt.Errorf("could not report the measurement: %w", err)
			}
		case err := <-done:
			return fmt.Errorf("the replica's Run returned before it was asked to stop: %w", errOrNil(err))
		case <-e.stopCtx.Done():
			return nil
		}
	}
}

// stopSharded cancels the replica's context, waits for its Run and
// returns how long that took.
func (e *env) stopSharded(cancel context.CancelFunc, done <-chan error) (time.Duration, error) {
	stopping := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			return 0, fmt.Errorf("the replica failed while stopping: %w", err)
		}
		return time.Since(stopping), nil
	case <-time.After(e.a.StopTimeout):
		return 0, fmt.Errorf("the replica did not return within %s of being asked to stop", e.a.StopTimeout)
	}
}
