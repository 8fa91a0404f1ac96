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
	// Reasons are what queued the key since its last handling
	// (controller.Reasons).
	Reasons Reasons
	// Writes, if not nil, is told what the handling writes through a
	// client of controller.TrackWrites.
	Writes Writes
}

// Reason is one thing that queued a key: what happened (Why) and, for
// some, more about it (Detail). controller.Reason documents the values.
type Reason struct {
	Why, Detail string
}

// String returns Why, then Detail in parentheses if there is one.
func (r Reason) String() string {
	if r.Detail == "" {
		return r.Why
	}
	return r.Why + " (" + r.Detail + ")"
}

// MaxReasons is how many reasons a key keeps: the latest.
const MaxReasons = 8

// Reasons are the reasons a key was queued for, oldest first, each once,
// at most MaxReasons (the latest). The first is held inline, so that a key
// queued for one reason, the common case, costs no allocation. The zero
// value holds none.
type Reasons struct {
	n     int
	first Reason
	more  []Reason
}

func (rs *Reasons) at(i int) Reason {
	if i == 0 {
		return rs.first
	}
	return rs.more[i-1]
}

// Add adds r, unless it is held already. With MaxReasons held, the oldest
// goes.
func (rs *Reasons) Add(r Reason) {
	for i := range rs.n {
		if rs.at(i) == r {
			return
		}
	}
	switch rs.n {
	case 0:
		rs.first = r
	case MaxReasons:
		rs.first = rs.more[0]
		copy(rs.more, rs.more[1:])
		rs.more[len(rs.more)-1] = r
		return
	default:
		rs.more = append(rs.more, r)
	}
	rs.n++
}

// Len returns how many reasons rs holds.
func (rs Reasons) Len() int { return rs.n }

// All returns the reasons, oldest first; nil if none.
func (rs Reasons) All() []Reason {
	if rs.n == 0 {
		return nil
	}
	return append([]Reason{rs.first}, rs.more...)
}

// Strings returns each reason's String, oldest first; nil if none.
func (rs Reasons) Strings() []string {
	if rs.n == 0 {
		return nil
	}
	out := make([]string, 0, rs.n)
	for i := range rs.n {
		out = append(out, rs.at(i).String())
	}
	return out
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

// Writes is told what a handling wrote (controller's read-your-own-writes,
// TrackWrites).
type Writes interface {
	// Wrote records that the handling of key wrote w.
	Wrote(key string, w Write)
}

// Write is one successful write: the object written and the
// resourceVersion the API server answered.
type Write struct {
	// Group and Resource name the resource ("" and "pods", "apps" and
	// "deployments").
	Group, Resource string
	// Namespace ("" for a cluster-scoped object) and Name name the object.
	Namespace, Name string
	// Labels are the object's labels, as written.
	Labels map[string]string
	// ResourceVersion is the object's version after the write.
	ResourceVersion string
}
