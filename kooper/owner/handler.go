package owner

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kooperkit/kooper/kooper/controller"
)

// Getter fetches an owner by namespace and name. For a cluster-scoped owner
// kind it must ignore namespace, which is the child's. It returns an error
// for which apierrors.IsNotFound is true when the owner does not exist (a
// lister or a typed client already does); (nil, nil) is treated the same.
//
// A Getter backed by a lister or informer cache returns the cache's shared
// object. That is fine here: [Handler] passes a deep copy to the next
// handler, so the cache is never mutated.
type Getter func(ctx context.Context, namespace, name string) (runtime.Object, error)

// Handler is a [controller.Handler] for owned objects: it calls the next
// handler with the object's controlling owner instead of the object.
// Build it with [NewHandler] or [Middleware].
type Handler struct {
	owner schema.GroupKind
	get   Getter
	next  controller.Handler
}

var _ controller.Handler = (*Handler)(nil)

// NewHandler returns a Handler that maps an owned object to its controller
// of kind owner (Group "" for core kinds), fetched with get, and calls next
// with it. A Handler built with a nil get or next returns a terminal error
// from Handle.
func NewHandler(owner schema.GroupKind, get Getter, next controller.Handler) *Handler {
	return &Handler{owner: owner, get: get, next: next}
}

// Middleware returns [NewHandler] as a [controller.Middleware], for
// [controller.Chain].
func Middleware(owner schema.GroupKind, get Getter) controller.Middleware {
	return func(next controller.Handler) controller.Handler {
		return NewHandler(owner, get, next)
	}
}

// Handle finds obj's (or a *controller.Deleted's object's) controller owner reference of the configured kind and
// calls the next handler with a deep copy of that owner. It returns nil
// without calling it when obj has no such reference, when the owner is not
// found, and when the owner found has another UID than the reference (it
// was deleted and re-created: the garbage collector will delete obj). Other
// errors from the Getter are returned wrapped, so the controller retries.
// The next handler's result is returned as is.
func (h *Handler) Handle(ctx context.Context, obj runtime.Object) error {
	if h.get == nil || h.next == nil {
		return controller.Terminal(errors.New("owner handler needs a getter and a next handler"))
	}
	if d, ok := obj.(*controller.Deleted); ok {
		obj = d.Object // a deleted child: its owner re-creates it
	}
	child, err := meta.Accessor(obj)
	if err != nil {
		return controller.Terminal(fmt.Errorf("could not read metadata of %T: %w", obj, err))
	}
	ref := h.controllerRef(child)
	if ref == nil {
		return nil
	}

	o, err := h.get(ctx, child.GetNamespace(), ref.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("could not get owner %s %s of %s: %w", h.owner.Kind, ref.Name, key(child), err)
	}
	if o == nil {
		return nil
	}
	got, err := meta.Accessor(o)
	if err != nil {
		return controller.Terminal(fmt.Errorf("could not read metadata of owner %T: %w", o, err))
	}
	if got.GetUID() != ref.UID {
		return nil
	}
	return h.next.Handle(ctx, o.DeepCopyObject())
}

// controllerRef returns obj's controller reference if it points to the
// owner's group and kind, whatever the version.
func (h *Handler) controllerRef(obj metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != h.owner.Kind {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != h.owner.Group {
		return nil
	}
	return ref
}
