package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// Handler is the domain logic of a controller.
//
// Handle is called with the latest state of one object, never a diff, and is
// expected to make the world match it (level-based). obj is the handler's own
// deep copy, so it may be mutated and sent back to the API server. Handle is
// never called for one object from two workers at once, and is not called for deleted objects: use finalizers to
// clean up external state and owner references for child objects.
//
// Returning nil marks the object handled. Returning an error retries it with
// backoff, unless the error is [Terminal] (never retried) or carries a
// [RequeueAfter] request (handled again after that delay, not an error).
// ctx is cancelled when Config.ProcessingTimeout elapses and when the
// controller stops.
type Handler interface {
	Handle(ctx context.Context, obj runtime.Object) error
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(ctx context.Context, obj runtime.Object) error

// Handle calls f(ctx, obj).
func (f HandlerFunc) Handle(ctx context.Context, obj runtime.Object) error { return f(ctx, obj) }

// Middleware decorates a Handler: logging, metrics, tracing, owner lookup.
type Middleware func(next Handler) Handler

// Chain wraps h in mws. The first middleware is the outermost: it sees the
// call first and the result last.
//
//	Chain(h, a, b).Handle(ctx, obj) // runs a → b → h
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

var (
	// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
	ErrInvalidConfig = errors.New("invalid controller config")
	// ErrAlreadyRun is returned by Run on a Controller that already ran.
	ErrAlreadyRun = errors.New("controller already ran")
	// ErrShutdownTimeout is returned by Run when handlers were still running
	// after Config.ShutdownTimeout. Those handlers' contexts were cancelled;
	// a handler that ignores its context is abandoned.
	ErrShutdownTimeout = errors.New("handlers still running after the shutdown timeout")
	// ErrDecode is wrapped by the error [Controller.SyncError] returns when
	// the last list or watch answer could not be decoded into the
	// Retriever's Go type: typically one object holding a value its field
	// cannot (a custom resource whose schema accepts more than the type).
	// The cache does not sync, and nothing of that type is handled, until
	// the object is fixed or deleted.
	ErrDecode = errors.New("could not decode the retrieved objects")
)

// terminalError marks an error that retrying cannot fix.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return "terminal: " + e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal marks err as not worth retrying (an invalid spec, a type the
// handler cannot handle). The controller records and logs it, then forgets
// the object until its next change or resync. Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or any error it wraps, was made by [Terminal].
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// requeueError asks for another handling after a delay.
type requeueError struct{ after time.Duration }

func (e *requeueError) Error() string { return fmt.Sprintf("requeue after %s", e.after) }

// RequeueAfter returns a value for a Handler to return when the object must
// be handled again after d even if nothing changes (a periodic job, an
// external state to poll). It is not a failure: the object's backoff is
// reset and it is not counted as an error. It may be wrapped with %w. A
// change to the object before d triggers a handling as usual; the requested
// one still happens. d <= 0 requeues at once.
func RequeueAfter(d time.Duration) error { return &requeueError{after: d} }

// RequeueDelay returns the delay requested by a [RequeueAfter] in err (or
// any error it wraps), and whether there was one: for handler tests.
func RequeueDelay(err error) (time.Duration, bool) { return requeueAfter(err) }

// requeueAfter returns the delay requested by err, if any.
func requeueAfter(err error) (time.Duration, bool) {
	var r *requeueError
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}
