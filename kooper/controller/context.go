package controller

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// handlingContext returns the context of one handling: ctx, carrying info
// for HandlingFrom, with a timeout on clk. cancel frees its timer once the
// handling is over.
//
// On the real clock it is context.WithTimeout's, which Deadline reports to
// the calls the handler makes. Any other clock (a test's fake) decides
// when the timeout passes: the context is then cancelled with the cause
// context.DeadlineExceeded (its Err is context.Canceled), since only the
// standard library's own timer can make Err say DeadlineExceeded.
func handlingContext(ctx context.Context, clk clock.WithTickerAndDelayedExecution, timeout time.Duration, info Handling) (context.Context, context.CancelFunc) {
	ctx = context.WithValue(ctx, handlingKey{}, info)
	if realClock(clk) {
		return context.WithTimeout(ctx, timeout)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	timer := clk.AfterFunc(timeout, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		timer.Stop()
		cancel(context.Canceled)
	}
}

// realClock reports whether clk is the real clock.
func realClock(clk clock.PassiveClock) bool {
	switch clk.(type) {
	case clock.RealClock, *clock.RealClock:
		return true
	}
	return false
}

// Handling describes the handling a handler's context belongs to, for
// decorators that log or trace it. Read it with HandlingFrom.
type Handling struct {
	// Controller is the controller's Config.Name.
	Controller string
	// Key is the object's "namespace/name" (or "name").
	Key string
	// Attempt counts the handlings of the key since its last success,
	// from 1; retries raise it.
	Attempt int
}

type handlingKey struct{}

// HandlingFrom returns the Handling of a context the controller passed to a
// handler, or false for any other context.
func HandlingFrom(ctx context.Context) (Handling, bool) {
	h, ok := ctx.Value(handlingKey{}).(Handling)
	return h, ok
}
