package controller

import "time"

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
