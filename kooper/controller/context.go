package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// handlingContext is the context of one handling: the Run context with a
// deadline of Config.ProcessingTimeout. It behaves exactly like
// context.WithDeadline(parent, deadline), but builds that context (a timer,
// a registration on the parent shared by every worker, four allocations)
// only when the handler first asks for Done, which a handler that makes no
// blocking call never does. Err and Deadline are answered without it.
type handlingContext struct {
	parent   context.Context
	deadline time.Time
	info     Handling

	once   sync.Once
	ready  atomic.Bool // inner and cancel are set
	inner  context.Context
	cancel context.CancelFunc
}

var _ context.Context = (*handlingContext)(nil)

func newHandlingContext(parent context.Context, timeout time.Duration) *handlingContext {
	return &handlingContext{parent: parent, deadline: time.Now().Add(timeout)}
}

func (c *handlingContext) build() {
	c.once.Do(func() {
		c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
		c.ready.Store(true)
	})
}

// Deadline returns the earlier of the parent's deadline and the timeout.
func (c *handlingContext) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done returns a channel closed at the deadline or when the parent is done.
func (c *handlingContext) Done() <-chan struct{} {
	c.build()
	return c.inner.Done()
}

// Err returns the parent's error, or DeadlineExceeded once the deadline passed.
func (c *handlingContext) Err() error {
	if c.ready.Load() {
		return c.inner.Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value looks key up in the built context, or in the parent before that.
// The standard library finds its cancelCtx through Value only after calling
// Done, so children derived from this context register on the built one
// instead of starting a goroutine each.
func (c *handlingContext) Value(key any) any {
	if _, ok := key.(handlingKey); ok {
		return c.info
	}
	if c.ready.Load() {
		return c.inner.Value(key)
	}
	return c.parent.Value(key)
}

// release frees the timer once the handling is over.
func (c *handlingContext) release() {
	if c.ready.Load() {
		c.cancel()
	}
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
