package controller

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/internal/handling"
)

// handlingContext returns the context of one handling: ctx, carrying info
// for the library's middlewares (kooper/internal/handling), with a timeout on clk. cancel frees its timer once the
// handling is over.
//
// On the real clock it is context.WithTimeout's, which Deadline reports to
// the calls the handler makes. Any other clock (a test's fake) decides
// when the timeout passes: the context is then cancelled with the cause
// context.DeadlineExceeded (its Err is context.Canceled), since only the
// standard library's own timer can make Err say DeadlineExceeded.
func handlingContext(ctx context.Context, clk clock.WithTickerAndDelayedExecution, timeout time.Duration, info handling.Info) (context.Context, context.CancelFunc) {
	ctx = handling.With(ctx, info)
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
