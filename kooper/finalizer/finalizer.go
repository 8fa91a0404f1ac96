package finalizer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrInvalid is wrapped by every error a [Finalizer] returns because it is
// misconfigured or was called with a missing argument. Retrying does not
// help.
var ErrInvalid = errors.New("invalid finalizer")

// Has reports whether obj carries the finalizer name.
func Has(obj metav1.Object, name string) bool {
	return slices.Contains(obj.GetFinalizers(), name)
}

// add adds the finalizer name to obj unless it is already there, and reports
// whether obj changed. It does not persist obj.
func add(obj metav1.Object, name string) bool {
	fs := obj.GetFinalizers()
	if slices.Contains(fs, name) {
		return false
	}
	// A new slice: fs may be shared with another copy of the object.
	obj.SetFinalizers(append(slices.Clip(fs), name))
	return true
}

// remove removes every occurrence of the finalizer name from obj and reports
// whether obj changed. It does not persist obj.
func remove(obj metav1.Object, name string) bool {
	fs := obj.GetFinalizers()
	if !slices.Contains(fs, name) {
		return false
	}
	kept := make([]string, 0, len(fs)-1)
	for _, f := range fs {
		if f != name {
			kept = append(kept, f)
		}
	}
	obj.SetFinalizers(kept)
	return true
}

// Finalizer adds one finalizer to objects and removes it once their cleanup
// succeeded. Its zero value is invalid: Name and Update are required. It
// holds no state, so one Finalizer serves every worker of a controller.
type Finalizer struct {
	// Name is written to metadata.finalizers. It must be a qualified name,
	// preferably prefixed with a domain ("example.com/dns-record"). Required.
	Name string

	// Update persists obj's finalizers: a merge patch of
	// metadata.finalizers that carries obj's resourceVersion (so that a
	// stale obj conflicts), or a typed client's Update; not UpdateStatus.
	// The patch is better: an Update sends the whole spec back as Go
	// writes it ("60s" becomes "1m0s"), changes its generation for
	// nothing and takes its fields' ownership from whoever applied them.
	// It should copy the server's answer back into obj (for example
	// *obj.(*v1.Foo) = *updated) so that a later write by the handler does
	// not conflict on the resourceVersion. Required.
	Update func(ctx context.Context, obj metav1.Object) error
}

// Ensure adds the finalizer to obj and persists it when it is missing, and
// reports whether it did. It writes nothing when the finalizer is present or
// when obj is being deleted (the API server refuses new finalizers then; the
// handler should have stopped at [Finalizer.Finalize]). When the write fails,
// obj is left as it was and the error is returned.
func (f Finalizer) Ensure(ctx context.Context, obj metav1.Object) (added bool, err error) {
	if err := f.validate(); err != nil {
		return false, err
	}
	if obj.GetDeletionTimestamp() != nil || Has(obj, f.Name) {
		return false, nil
	}
	old := obj.GetFinalizers()
	add(obj, f.Name)
	if err := f.Update(ctx, obj); err != nil {
		obj.SetFinalizers(old)
		return false, fmt.Errorf("could not add finalizer %s to %s: %w", f.Name, key(obj), err)
	}
	return true, nil
}

// Finalize reports whether obj is being deleted (its deletion timestamp is
// set); the handler must then stop, whatever the error. When obj is being
// deleted and carries the finalizer, Finalize runs cleanup and, only if
// cleanup succeeded, removes the finalizer and persists obj; the API server
// deletes obj once its last finalizer is gone. A cleanup error is returned
// wrapped, with the finalizer still in place, so the controller retries: the
// cleanup must be idempotent. If persisting returns NotFound the object is
// already gone and Finalize succeeds.
func (f Finalizer) Finalize(ctx context.Context, obj metav1.Object, cleanup func(ctx context.Context) error) (deleting bool, err error) {
	if err := f.validate(); err != nil {
		return obj.GetDeletionTimestamp() != nil, err
	}
	if cleanup == nil {
		return obj.GetDeletionTimestamp() != nil, fmt.Errorf("%w: cleanup function is required", ErrInvalid)
	}
	if obj.GetDeletionTimestamp() == nil {
		return false, nil
	}
	if !Has(obj, f.Name) {
		// Cleaned up already; other finalizers hold the object.
		return true, nil
	}
	if err := cleanup(ctx); err != nil {
		return true, fmt.Errorf("could not clean up %s before removing finalizer %s: %w", key(obj), f.Name, err)
	}
	old := obj.GetFinalizers()
	remove(obj, f.Name)
	if err := f.Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		obj.SetFinalizers(old)
		return true, fmt.Errorf("could not remove finalizer %s from %s: %w", f.Name, key(obj), err)
	}
	return true, nil
}

func (f Finalizer) validate() error {
	if errs := validation.IsQualifiedName(f.Name); len(errs) > 0 {
		return fmt.Errorf("%w: name %q is not a qualified name: %s", ErrInvalid, f.Name, strings.Join(errs, "; "))
	}
	if f.Update == nil {
		return fmt.Errorf("%w: update function is required", ErrInvalid)
	}
	return nil
}

// key returns "namespace/name", or "name" for a cluster-scoped object.
func key(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
