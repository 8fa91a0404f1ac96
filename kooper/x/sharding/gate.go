package sharding

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/deadline"
)

// retryAfterExpiry is when a key refused, or cut short, by the end of the
// right to handle is handled again: by then the Lease was renewed, or the
// slot was released and the key is dropped.
const retryAfterExpiry = time.Second

// Handler returns next behind this replica's slot gate, the Middleware of
// every sharded controller's Config.Handler (or a link of its Chain):
//
//   - an object whose UID is in a slot this replica has not acquired is
//     dropped without calling next (it is another replica's: the handling
//     counts as one that did nothing);
//   - a handling registers with its object's slot, so that giving up the
//     slot waits until none of its handlings runs, and suspending every
//     slot (a Lease that could not be renewed) cancels their contexts;
//   - once the right to handle has ended (the last renewal of the Lease
//     plus RenewDeadline), no object is handled, each is queued again a
//     second later, and the handlings running then have their contexts
//     cancelled and are queued again too: the meaning of
//     controller.Controller.SetValidUntil.
//
// The gate decides by the object handled: a child's change that queues its
// owner (controller.Owns) is handled by the replica that holds the owner's
// slot. Every handler of a replica's sharded controllers goes through the
// same slots.
func (r *Runner) Handler(next controller.Handler) controller.Handler {
	r.wiring.Lock()
	r.handlers++
	r.wiring.Unlock()
	return controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
		return r.gate.handle(ctx, obj, next)
	})
}

// gate is the slot table of a replica: which slots it has acquired, and
// the handlings running in each. Safe for concurrent use.
type gate struct {
	count int
	// right bounds the right to handle (Runner.renewed sets it).
	right *deadline.Deadline

	mu    sync.Mutex
	slots []slotState
}

// slotState is one slot of a gate.
type slotState struct {
	// acquired: its objects may be handled.
	acquired bool
	// running holds its handlings, whose contexts suspend cancels; idle is
	// closed once none runs after a release.
	running map[*handling]struct{}
	idle    chan struct{}
}

// handling cancels one running handling.
type handling struct{ cancel context.CancelFunc }

func newGate(count int, right *deadline.Deadline) *gate {
	return &gate{count: count, right: right, slots: make([]slotState, count)}
}

// handle is the gate around one handling of obj by next.
func (g *gate) handle(ctx context.Context, obj runtime.Object, next controller.Handler) error {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetUID() == "" {
		return nil // no UID, no slot: nobody's
	}
	slot := SlotOf(m.GetUID(), g.count)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h, ok := g.begin(slot, cancel)
	if !ok {
		return nil // another replica's
	}
	defer g.end(slot, h)
	hctx, end, ok := g.right.Begin(sctx)
	if !ok {
		return controller.RequeueAfter(retryAfterExpiry)
	}
	var expired bool
	func() {
		defer func() { expired = end() }() // a panic goes on up, ended
		err = next.Handle(hctx, obj)
	}()
	switch {
	case expired:
		return controller.RequeueAfter(retryAfterExpiry)
	case sctx.Err() != nil && ctx.Err() == nil:
		// Suspended: the slot is no longer this replica's, and acquiring
		// it again queues its objects.
		return nil
	}
	return err
}

// begin registers a handling of slot: ok is false if the slot is not
// acquired (drop the object); otherwise cancel is called if suspend stops
// the slot, and end must follow.
func (g *gate) begin(slot int, cancel context.CancelFunc) (h *handling, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := &g.slots[slot]
	if !st.acquired {
		return nil, false
	}
	h = &handling{cancel: cancel}
	if st.running == nil {
		st.running = map[*handling]struct{}{}
	}
	st.running[h] = struct{}{}
	return h, true
}

// end is called once a handling that began returns.
func (g *gate) end(slot int, h *handling) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := &g.slots[slot]
	delete(st.running, h)
	if len(st.running) == 0 && st.idle != nil {
		close(st.idle)
		st.idle = nil
	}
}

// acquire lets the objects of slots be handled. Slots out of range are
// ignored (the Runner acquires only slots it read from its own count).
func (g *gate) acquire(slots []int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range slots {
		if s >= 0 && s < g.count {
			g.slots[s].acquired = true
		}
	}
}

// release stops handling the objects of slot and returns once none of its
// handlings runs any more, or with ctx's error (the slot is released, but
// a handling may still run). Releasing a slot that is not acquired waits
// for its handlings all the same.
func (g *gate) release(ctx context.Context, slot int) error {
	idle := g.stop(slot, false)
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("slot %d still has handlings running: %w", slot, ctx.Err())
	}
}

// suspend releases every slot at once and cancels the contexts of the
// handlings running, for a replica that may no longer own its slots. It
// returns once none runs, or with ctx's error.
func (g *gate) suspend(ctx context.Context) error {
	var idles []chan struct{}
	for slot := range g.count {
		if idle := g.stop(slot, true); idle != nil {
			idles = append(idles, idle)
		}
	}
	for _, idle := range idles {
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("handlings still running: %w", ctx.Err())
		}
	}
	return nil
}

// stop marks slot released (cancelling its handlings if cancel) and
// returns the channel closed when its handlings are done, nil if none
// runs.
func (g *gate) stop(slot int, cancel bool) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := &g.slots[slot]
	st.acquired = false
	if cancel {
		for h := range st.running {
			h.cancel()
		}
	}
	if len(st.running) == 0 {
		return nil
	}
	if st.idle == nil {
		st.idle = make(chan struct{})
	}
	return st.idle
}

// acquired returns the acquired slots, in order.
func (g *gate) acquired() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for i, st := range g.slots {
		if st.acquired {
			out = append(out, i)
		}
	}
	return out
}

// holds reports whether slot is acquired.
func (g *gate) holds(slot int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.slots[slot].acquired
}
