// Package handling carries, in a handler's context, what the controller
// knows about the handling it belongs to, for the library's own
// middlewares (package tracing names its spans and attributes from it).
package handling

import "context"

// Info describes one handling.
type Info struct {
	// Controller is the controller's Config.Name.
	Controller string
	// Key is the object's "namespace/name" (or "name").
	Key string
	// Attempt counts the handlings of the key since its last success,
	// from 1; retries raise it.
	Attempt int
}

type key struct{}

// With returns ctx carrying info.
func With(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, key{}, info)
}

// From returns the Info of a context the controller passed to a handler,
// or false for any other context.
func From(ctx context.Context) (Info, bool) {
	info, ok := ctx.Value(key{}).(Info)
	return info, ok
}
