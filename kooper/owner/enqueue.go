package owner

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kooperkit/kooper/kooper/controller"
)

// Owners is the owner kind's controller as [EnqueueOwner] uses it: a
// *controller.Controller.
type Owners interface {
	// Get returns the owner with key from the controller's cache.
	Get(key string) (runtime.Object, bool)
	// Enqueue queues key for the owner's handler.
	Enqueue(key string)
}

// EnqueueOwner returns the handler of a child controller: for each child it
// is called with, it queues the child's controlling owner of kind owner
// (Group "" for core kinds) in owners, the owner kind's controller, whose
// workers then handle it. It makes no API call: the owner reference is read
// from the child's metadata (a metadata-only Retriever is enough), and the
// owner from owners' cache, which also tells a namespaced owner (in the
// child's namespace) from a cluster-scoped one.
//
// A child is ignored when it has no controller reference to owner's kind,
// and when the owner is not in owners' cache or has another UID than the
// reference (it was deleted, or re-created with the same name: the garbage
// collector deletes the child). A deleted child (a *controller.Deleted, with
// controller.Config.HandleDeleted on the child controller) queues its owner
// too, from the last state the cache held, so that the owner makes it again.
//
// The handler returns nil, or a Terminal error for an object without
// metadata.
func EnqueueOwner(owners Owners, owner schema.GroupKind) controller.Handler {
	return controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		if d, ok := obj.(*controller.Deleted); ok {
			obj = d.Object // a deleted child: its owner makes it again
		}
		child, err := meta.Accessor(obj)
		if err != nil {
			return controller.Terminal(fmt.Errorf("could not read metadata of %T: %w", obj, err))
		}
		ref := controllerRef(child, owner)
		if ref == nil {
			return nil
		}
		// A namespaced owner is in its child's namespace; a cluster-scoped
		// one has no namespace.
		keys := []string{ref.Name}
		if ns := child.GetNamespace(); ns != "" {
			keys = []string{ns + "/" + ref.Name, ref.Name}
		}
		for _, key := range keys {
			o, ok := owners.Get(key)
			if !ok {
				continue
			}
			if m, err := meta.Accessor(o); err == nil && m.GetUID() == ref.UID {
				owners.Enqueue(key)
				return nil
			}
		}
		return nil
	})
}

// controllerRef returns obj's controller reference if it points to owner's
// group and kind, whatever the version.
func controllerRef(obj metav1.Object, owner schema.GroupKind) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != owner.Kind {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != owner.Group {
		return nil
	}
	return ref
}
