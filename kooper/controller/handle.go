package controller

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/internal/deadline"
	"github.com/kooperkit/kooper/kooper/internal/handling"
	"github.com/kooperkit/kooper/kooper/internal/logkey"
	"github.com/kooperkit/kooper/kooper/log"
)

// How one key is handled, once a worker has taken it from the queue: four
// small stages, run in this order by process, the one place that strings
// them together.
//
//  1. fetch: the object's latest state, from the cache, and why its key
//     was queued (reason.go). A key whose object is gone is dropped:
//     nothing is left to handle. A key whose caches have not yet seen
//     what its handlings wrote waits for them out of the queue (caughtUp,
//     writes.go).
//  2. admit: the gate a handling must pass before it starts (the right to
//     handle that SetValidUntil bounds). A key refused is queued again a
//     second later; a handling the gate cancels, too.
//  3. call: the handler (Config.Handler inside the controller's own
//     middlewares, New), on the object's own deep copy, in a context
//     bounded by ProcessingTimeout and describing the handling.
//  4. settle: what the handler's answer means for the key: forgotten,
//     queued again after a requested delay, retried with backoff, or
//     dropped.
//
// The workqueue never gives a key to a worker while another holds it, so
// one object is never in two of these at once.
func (c *Controller) process(ctx context.Context, logger log.Logger, key string, src objects, queue *workQueue) {
	obj, why, ok := c.fetch(key, src, queue)
	if !ok {
		return
	}
	why, ok = c.caughtUp(logger, key, why, queue)
	if !ok {
		return
	}
	ctx, cancelled, ok := c.gate.admit(ctx)
	if !ok {
		c.retryLater(queue, key, why)
		return
	}
	err := c.call(ctx, key, obj, why, queue)
	c.settle(ctx, logger, key, why, err, queue)
	if cancelled() {
		// By the gate, not by a stop: handled again if the right comes
		// back, by the next leader otherwise.
		c.retryLater(queue, key, why)
	}
}

// fetch returns the cached object of key and why key was queued, or false
// (and forgets the key) when the cache no longer holds it: deleted since
// it was queued.
func (c *Controller) fetch(key string, src objects, queue *workQueue) (runtime.Object, handling.Reasons, bool) {
	why := queue.order.take(key)
	item, exists, err := src.get(key)
	if err != nil || !exists {
		queue.Forget(key)
		c.writes.forget(key)
		return nil, why, false
	}
	return item.(runtime.Object), why, true
}

// caughtUp holds key, queued for why, while the caches have not seen what
// its handlings wrote through a client of TrackWrites (writes.go): false,
// and the key comes back with its next event or after a poll, to be
// checked again, and is handled once they have or once it has waited
// writeWaitBound. Otherwise it returns why, with the reasons of the times
// the key was held, and records the wait, if there was one.
func (c *Controller) caughtUp(logger log.Logger, key string, why handling.Reasons, queue *workQueue) (handling.Reasons, bool) {
	outcome, waited, why := c.writes.check(key, why, queue)
	switch outcome {
	case writesHold:
		return why, false
	case writesSeen:
		c.cfg.MetricsRecorder.ObserveCacheWait(c.cfg.Name, true, waited)
	case writesTimedOut:
		c.cfg.MetricsRecorder.ObserveCacheWait(c.cfg.Name, false, waited)
		logger.Warn("handling although the caches have not seen the key's own writes yet", logkey.Object, key, "waited", waited.String(), logkey.Reasons, why.Strings())
	}
	return why, true
}

// call runs the handler on its own copy of obj: the cached object is
// shared with every later handling and with the informer.
func (c *Controller) call(ctx context.Context, key string, obj runtime.Object, why handling.Reasons, queue *workQueue) error {
	hctx, release := handlingContext(ctx, c.cfg.clock, c.cfg.ProcessingTimeout,
		handling.Info{Controller: c.cfg.Name, Key: key, Attempt: queue.NumRequeues(key) + 1, Reasons: why, Writes: c.writes})
	defer release()
	return c.handler.Handle(hctx, obj.DeepCopyObject())
}

// settle decides what happens to key after its handling, queued for why,
// returned err.
func (c *Controller) settle(ctx context.Context, logger log.Logger, key string, why handling.Reasons, err error, queue *workQueue) {
	rec, name := c.cfg.MetricsRecorder, c.cfg.Name
	if err == nil {
		queue.Forget(key) // success resets the backoff
		return
	}
	if delay, requeue := requeueAfter(err); requeue {
		queue.Forget(key) // a requested requeue is a success too
		rec.IncQueuedEvent(name, sourceRequeue)
		queue.order.later(key, reasons(handling.Reason{Why: reasonRequeue.Why, Detail: delay.String()}))
		queue.AddAfter(key, delay)
		return
	}
	attempt := queue.NumRequeues(key) + 1
	switch {
	case ctx.Err() != nil:
		// Stopping, or cancelled by the gate: the error is most likely the
		// cancellation itself.
		queue.Forget(key)
	case IsTerminal(err):
		queue.Forget(key)
		rec.IncDropped(name, dropTerminal)
		logger.Error("handling failed, not retrying", logkey.Object, key, logkey.Attempt, attempt, logkey.Reasons, why.Strings(), logkey.Err, err)
	case attempt <= c.cfg.MaxRetries:
		rec.IncRetry(name)
		rec.IncQueuedEvent(name, sourceRetry)
		logger.Warn("handling failed, retrying", logkey.Object, key, logkey.Attempt, attempt, logkey.Reasons, why.Strings(), logkey.Err, err)
		queue.order.later(key, reasons(handling.Reason{Why: reasonRetry.Why, Detail: err.Error()}))
		queue.AddRateLimited(key)
	default:
		queue.Forget(key)
		rec.IncDropped(name, dropMaxRetries)
		logger.Error("handling failed, retries exhausted", logkey.Object, key, logkey.Attempt, attempt, logkey.Reasons, why.Strings(), logkey.Err, err)
	}
}

// retryLater queues key again in a second, without backoff: its handling,
// queued for why, waits for the right to handle. The next handling is
// told why too, and that it waited.
func (c *Controller) retryLater(queue *workQueue, key string, why handling.Reasons) {
	queue.Forget(key)
	var rs handling.Reasons // a copy: why's own may still be in a handling's context
	for _, r := range why.All() {
		rs.Add(r)
	}
	rs.Add(reasonWaited)
	queue.order.later(key, rs)
	queue.AddAfter(key, time.Second)
}

// gate is what a handling passes before it starts. admit returns the
// context the handling runs in and cancelled, to call once it has returned:
// true if the gate cancelled it. ok is false when the key may not be
// handled now.
type gate interface {
	admit(ctx context.Context) (hctx context.Context, cancelled func() bool, ok bool)
}

// rightToHandle is the controller's gate: the right to handle that
// SetValidUntil bounds (kooper/internal/deadline, which package x/sharding's
// slot gate uses too, with the same meaning).
type rightToHandle struct{ d *deadline.Deadline }

func (r rightToHandle) admit(ctx context.Context) (context.Context, func() bool, bool) {
	if !r.d.Limited() {
		return ctx, func() bool { return false }, true
	}
	return r.d.Begin(ctx)
}

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
func (c *Controller) SetValidUntil(t time.Time) { c.validity.Set(t) }

// handlingContext returns the context of one handling: ctx, carrying info
// for the library's middlewares (kooper/internal/handling), with a timeout
// on clk. release frees its timer once the handling is over.
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

// measure records the duration (on clk) and outcome of every handling.
func measure(rec MetricsRecorder, name string, clk clock.PassiveClock) Middleware {
	if _, noop := rec.(noopRecorder); noop {
		return func(next Handler) Handler { return next }
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
			start := clk.Now()
			err := next.Handle(ctx, obj)
			success := err == nil
			if !success {
				_, success = requeueAfter(err)
			}
			rec.ObserveHandling(name, success, clk.Since(start))
			return err
		})
	}
}

// recoverPanics turns a handler panic into an error, so one bad object cannot
// crash the process; the loop then retries it like any failure.
func recoverPanics(rec MetricsRecorder, name string, logger log.Logger) Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, obj runtime.Object) (err error) {
			defer func() {
				if r := recover(); r != nil {
					key, _ := cache.MetaNamespaceKeyFunc(obj)
					rec.IncPanic(name)
					logger.Error("handler panicked", logkey.Object, key, "panic", r, "stack", string(debug.Stack()))
					err = fmt.Errorf("handler panicked: %v", r)
				}
			}()
			return next.Handle(ctx, obj)
		})
	}
}
