package handler

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kooperkit/kooper/kooper/controller"
)

// Writes remembers the resourceVersion of each child as the handler last
// applied it, so that the child controllers can tell the echo of the
// operator's own write (same resourceVersion: nothing to do) from a change
// made by someone else (drift: handle the Tenant). It is shared by the
// handler and the child controllers' Children middleware, and forgets a
// child when its deletion is seen, so it holds one entry per live child.
type Writes struct {
	m sync.Map // childKey -> write
}

type childKey struct{ kind, namespace, name string }

// write is a child as the handler last applied it.
type write struct {
	rv string
	// applied is when the operator last changed its fields of the child
	// (its managedFields entry); generation is the Tenant's generation then.
	applied    time.Time
	generation int64
	// owner is the UID of the Tenant it was applied for.
	owner types.UID
	// createdRV is the resourceVersion the handler created the child at
	// (with a create, not an apply), kept by later records for the same
	// Tenant: the creation's event is an echo too, whenever it comes.
	createdRV string
}

func (w *Writes) record(kind, namespace, name string, wr write) {
	if before, ok := w.last(kind, namespace, name); ok && wr.createdRV == "" && before.owner == wr.owner {
		wr.createdRV = before.createdRV
	}
	w.m.Store(childKey{kind, namespace, name}, wr)
}

func (w *Writes) last(kind, namespace, name string) (write, bool) {
	got, ok := w.m.Load(childKey{kind, namespace, name})
	if !ok {
		return write{}, false
	}
	return got.(write), true
}

func (w *Writes) forget(kind, namespace, name string) {
	w.m.Delete(childKey{kind, namespace, name})
}

// wrote reports whether the handler wrote this child at resourceVersion
// rv, with its last apply or its creation.
func (w *Writes) wrote(kind, namespace, name, rv string) bool {
	got, ok := w.last(kind, namespace, name)
	return ok && (got.rv == rv || (got.createdRV != "" && got.createdRV == rv))
}

// Len returns the number of children remembered.
func (w *Writes) Len() int {
	n := 0
	w.m.Range(func(_, _ any) bool { n++; return true })
	return n
}

// trigger is the child change that made a child controller handle a Tenant.
type trigger struct {
	kind, namespace, name, rv string
	deleted                   bool
}

type triggerKey struct{}

func triggerFrom(ctx context.Context) (trigger, bool) {
	t, ok := ctx.Value(triggerKey{}).(trigger)
	return t, ok
}

// region: children

// Children is the outermost middleware of the controller of one child kind
// (before owner.Middleware): it drops the echoes of the handler's own
// writes, forgets deleted children, and tells the handler which child
// changed, so that it can count drift repairs.
func Children(kind string, w *Writes) controller.Middleware {
	return func(next controller.Handler) controller.Handler {
		return controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
			d, deleted := obj.(*controller.Deleted)
			child := obj
			if deleted {
				child = d.Object
			}
			m, err := meta.Accessor(child)
			if err != nil {
				return controller.Terminal(err)
			}
			t := trigger{kind: kind, namespace: m.GetNamespace(), name: m.GetName(), rv: m.GetResourceVersion(), deleted: deleted}
			switch {
			case deleted:
				w.forget(kind, t.namespace, t.name)
			case w.wrote(kind, t.namespace, t.name, t.rv):
				return nil // our own write coming back
			}
			return next.Handle(context.WithValue(ctx, triggerKey{}, t), obj)
		})
	}
}

// endregion: children
