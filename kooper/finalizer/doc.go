// Package finalizer adds and removes metadata.finalizers, so that a handler
// can clean up state that lives outside the cluster before its object goes
// away.
//
// # Why a finalizer
//
// A Kooper handler is never called for a deleted object: by the time an
// object is gone, its spec is gone too, and a handler cannot know what it
// created for it. A finalizer is a name in metadata.finalizers that makes
// the API server keep the object, with metadata.deletionTimestamp set, until
// every finalizer is removed. Setting the deletion timestamp is an update, so
// the handler is called once more with the object still readable: it cleans
// up, removes its finalizer, and the API server deletes the object.
//
// Use a finalizer for external state only: a cloud load balancer, a DNS
// record, a row in a database, an object in another cluster, or one in
// another namespace than a namespaced owner's (which cannot carry an owner
// reference to it). Do not use one for child objects in the cluster: give
// them an owner reference (package owner; a cluster-scoped owner may own
// objects in any namespace) and the garbage collector deletes them with
// their owner, with no code and no finalizer.
//
// # The dance
//
// [Finalizer] does the whole protocol for one name. A handler calls
// [Finalizer.Finalize] first and [Finalizer.Ensure] second:
//
//	deleting, err := f.Finalize(ctx, obj, func(ctx context.Context) error {
//		return dns.DeleteRecord(ctx, obj.Spec.Hostname)
//	})
//	if deleting || err != nil {
//		return err // being deleted: do nothing else, even on success
//	}
//	if _, err := f.Ensure(ctx, obj); err != nil {
//		return err
//	}
//	// create or update external state here, after the finalizer is stored
//
// Ensure must succeed before the handler creates anything external:
// otherwise a delete racing with the first handling could leave that state
// behind with nobody to clean it.
//
// # Consequences
//
//   - The cleanup function must be idempotent. It runs again when it fails,
//     when persisting the removal fails, and when the process stops between
//     the two; it may find the external state already gone and must then
//     succeed.
//   - A cleanup that keeps failing keeps the object in Terminating forever,
//     and so does a finalizer whose operator was uninstalled. Remove the
//     operator's finalizers before uninstalling it; an operator that is
//     gone leaves them to be removed by hand (kubectl patch, or kubectl edit
//     metadata.finalizers).
//   - The API server refuses a new finalizer on an object that is being
//     deleted, so Ensure never adds one then.
//   - A finalizer name is a qualified name; prefer one prefixed with your
//     domain ("example.com/dns-record"): the API server warns about names
//     without one.
//
// [Has] reads metadata.finalizers, for a handler or a test that checks the
// finalizer is in place; [Finalizer] changes it and persists through its
// Update function.
package finalizer
