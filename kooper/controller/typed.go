package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// TypedHandler is a [Handler] for one Go type, so the domain code needs no
// type assertion. Turn it into a Handler with [NewTypedHandler].
type TypedHandler[T runtime.Object] interface {
	Handle(ctx context.Context, obj T) error
}

// TypedHandlerFunc adapts a function to a [TypedHandler].
type TypedHandlerFunc[T runtime.Object] func(ctx context.Context, obj T) error

// Handle calls f(ctx, obj).
func (f TypedHandlerFunc[T]) Handle(ctx context.Context, obj T) error { return f(ctx, obj) }

// NewTypedHandler returns a Handler that asserts each object to T and calls h.
// An object of another type is a programming error (the retriever watches
// something else): it is reported as a [Terminal] error and never retried.
func NewTypedHandler[T runtime.Object](h TypedHandler[T]) Handler {
	return HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
		t, ok := obj.(T)
		if !ok {
			var want T
			return Terminal(fmt.Errorf("handler wants %T, got %T", want, obj))
		}
		return h.Handle(ctx, t)
	})
}
