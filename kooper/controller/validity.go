package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// SetValidUntil sets when this controller's right to handle ends unless it
// is moved later: from then on no key is taken for handling (each is
// queued again a second later, for when the right is back or the
// controller stops), and the handlings running then have their contexts
// cancelled. leaderelection.Runner sets it, at each renewal of the Lease,
// to the renewal's start plus RenewDeadline: a leader that was paused
// (SIGSTOP, a long garbage collection, a frozen VM) or cut off checks,
// before it takes a key, that it may still lead, instead of handling until
// its renewal loop runs again. The zero time removes the limit (the
// default). It is safe to call at any time, from any goroutine.
func (c *Controller) SetValidUntil(t time.Time) { c.validity.set(t) }

// validity is the right to handle that SetValidUntil bounds, on the
// controller's clock.
type validity struct {
	clock clock.WithDelayedExecution

	mu    sync.Mutex
	until time.Time
	// timer expires the right; none is armed once Run has returned.
	timer   clock.Timer
	stopped bool
	running map[*handlingStop]struct{}
}

// handlingStop cancels one running handling.
type handlingStop struct{ cancel context.CancelFunc }

func (v *validity) set(t time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.until = t
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
	if !t.IsZero() && !v.stopped {
		v.arm(t.Sub(v.clock.Now()))
	}
}

// arm calls expire after d, in a goroutine of its own as time.AfterFunc
// does (a fake clock calls back while it holds its lock, which expire's
// Now would wait for).
func (v *validity) arm(d time.Duration) {
	v.timer = v.clock.AfterFunc(d, func() { go v.expire() })
}

// limited reports whether a limit is set.
func (v *validity) limited() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return !v.until.IsZero()
}

// expire cancels every running handling once the right has ended.
func (v *validity) expire() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.until.IsZero() || v.stopped {
		return
	}
	if left := v.until.Sub(v.clock.Now()); left > 0 {
		v.arm(left) // moved later meanwhile
		return
	}
	for s := range v.running {
		s.cancel()
	}
}

// begin is called before a handling: ok is false once the right has
// ended; otherwise cancel is called if it ends before end is.
func (v *validity) begin(cancel context.CancelFunc) (s *handlingStop, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.until.IsZero() && !v.clock.Now().Before(v.until) {
		return nil, false
	}
	s = &handlingStop{cancel: cancel}
	if v.running == nil {
		v.running = map[*handlingStop]struct{}{}
	}
	v.running[s] = struct{}{}
	return s, true
}

func (v *validity) end(s *handlingStop) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.running, s)
}

// stop stops the timer once Run returns; later calls of set arm none.
func (v *validity) stop() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stopped = true
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
}
