package owner

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrAlreadyOwned is wrapped by the error [SetController] returns when
// another object already controls the object.
var ErrAlreadyOwned = errors.New("object already has another controller")

// SetController makes owner, of kind gvk, the controller of obj: it adds an
// owner reference with Controller and BlockOwnerDeletion set. It only
// changes obj in memory; set it before creating or updating obj.
//
// It does nothing when owner already controls obj (same UID), and replaces a
// non-controller reference to owner. It returns an error wrapping
// [ErrAlreadyOwned] when another object controls obj, and an error when the
// reference would break the garbage collector's namespace rules: a
// namespaced owner (owner.GetNamespace() != "") must be in obj's namespace,
// so obj's namespace must be set before calling. owner must have been read
// from the API server: an owner without a UID is refused.
func SetController(owner, obj metav1.Object, gvk schema.GroupVersionKind) error {
	if gvk.Kind == "" || gvk.Version == "" {
		return fmt.Errorf("could not set controller of %s: owner kind %q is incomplete", key(obj), gvk.String())
	}
	if owner.GetName() == "" || owner.GetUID() == "" {
		return fmt.Errorf("could not set %s %s as controller of %s: owner has no name or uid (read it from the API server first)", gvk.Kind, key(owner), key(obj))
	}
	if ns := owner.GetNamespace(); ns != "" {
		switch obj.GetNamespace() {
		case "":
			return fmt.Errorf("could not set %s %s as controller of %s: a cluster-scoped object cannot have a namespaced owner", gvk.Kind, key(owner), key(obj))
		case ns:
		default:
			return fmt.Errorf("could not set %s %s as controller of %s: an owner must be in its object's namespace", gvk.Kind, key(owner), key(obj))
		}
	}

	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID == owner.GetUID() {
			return nil
		}
		return fmt.Errorf("could not set %s %s as controller of %s: %w: %s %s", gvk.Kind, key(owner), key(obj), ErrAlreadyOwned, ref.Kind, ref.Name)
	}

	// A new slice: the existing one may be shared with another copy of obj.
	refs := slices.DeleteFunc(slices.Clone(obj.GetOwnerReferences()), func(r metav1.OwnerReference) bool {
		return r.UID == owner.GetUID()
	})
	obj.SetOwnerReferences(append(refs, *metav1.NewControllerRef(owner, gvk)))
	return nil
}

// key returns "namespace/name", or "name" for a cluster-scoped object.
func key(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
