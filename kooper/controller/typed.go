package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// Typed returns a Handler that asserts each object to T and calls f, so
// the domain code needs no type assertion; T is inferred from f:
//
//	Handler: controller.Typed(func(ctx context.Context, pod *corev1.Pod) error { ... })
//
// An object of another type is a programming error (the retriever watches
// something else): it is reported as a [Terminal] error and never retried.
func Typed[T runtime.Object](f func(ctx context.Context, obj T) error) Handler {
	return HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
		t, ok := obj.(T)
		if !ok {
			var want T
			return Terminal(fmt.Errorf("handler wants %T, got %T", want, obj))
		}
		return f(ctx, t)
	})
}
