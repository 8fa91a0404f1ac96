// Package deadline is a right to handle that ends at a time unless it is
// moved later, with one meaning wherever the library bounds handlings so:
// no handling begins once the right has ended, and the handlings running
// then have their contexts cancelled. controller.SetValidUntil (leader
// election) and the slot gate of package x/sharding both use it.
package deadline

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Deadline bounds a right to handle, on a clock. The zero limit (the
// default) never ends. Safe for concurrent use.
type Deadline struct {
	clock clock.WithDelayedExecution

	mu    sync.Mutex
	until time.Time
	// timer expires the right; none is armed once Stop was called.
	timer   clock.Timer
	stopped bool
	running map[*handling]struct{}
}

// handling cancels one running handling.
type handling struct{ cancel context.CancelFunc }

// New returns a Deadline with no limit, read on clk.
func New(clk clock.WithDelayedExecution) *Deadline {
	return &Deadline{clock: clk, running: map[*handling]struct{}{}}
}

// Set sets when the right ends unless Set moves it later: from then on
// Begin refuses, and the handlings running then have their contexts
// cancelled. The zero time removes the limit.
func (d *Deadline) Set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.until = t
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if !t.IsZero() && !d.stopped {
		d.arm(t.Sub(d.clock.Now()))
	}
}

// arm calls expire after wait, in a goroutine of its own as time.AfterFunc
// does (a fake clock calls back while it holds its lock, which expire's
// Now would wait for).
func (d *Deadline) arm(wait time.Duration) {
	d.timer = d.clock.AfterFunc(wait, func() { go d.expire() })
}

// Limited reports whether a limit is set.
func (d *Deadline) Limited() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.until.IsZero()
}

// expire cancels every running handling once the right has ended.
func (d *Deadline) expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.until.IsZero() || d.stopped {
		return
	}
	if left := d.until.Sub(d.clock.Now()); left > 0 {
		d.arm(left) // moved later meanwhile
		return
	}
	for h := range d.running {
		h.cancel()
	}
}

// Begin is called before a handling. ok is false once the right has
// ended: take nothing. Otherwise hctx is ctx, cancelled if the right ends
// before end is called, and end must be called once the handling has
// returned: it reports whether the end of the right cut the handling short
// (hctx cancelled while ctx was not), and releases hctx.
func (d *Deadline) Begin(ctx context.Context) (hctx context.Context, end func() (expired bool), ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.until.IsZero() && !d.clock.Now().Before(d.until) {
		return nil, nil, false
	}
	hctx, cancel := context.WithCancel(ctx)
	h := &handling{cancel: cancel}
	d.running[h] = struct{}{}
	return hctx, func() bool {
		d.mu.Lock()
		delete(d.running, h)
		d.mu.Unlock()
		expired := hctx.Err() != nil && ctx.Err() == nil
		cancel()
		return expired
	}, true
}

// Stop stops the timer for good, once nothing is handled any more (Run
// returned): later calls of Set arm none.
func (d *Deadline) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}
