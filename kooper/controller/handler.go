package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// Handler is the domain logic of a controller.
//
// Handle is called with the latest state of one object, never a diff, and is
// expected to make the world match it (level-based). obj is the handler's own
// deep copy, so it may be mutated and
// sent back to the API server. Handle is never called for one object from two
// workers at once, and is not called for deleted objects: use finalizers to
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
