// Package owner sets controller owner references and routes changes of
// owned objects to their owner's handler.
//
// # Owner references instead of cleanup code
//
// An owner reference in a child's metadata.ownerReferences names the object
// it belongs to. When the owner is deleted, the Kubernetes garbage collector
// deletes the child: a handler that creates Deployments, Services or Secrets
// for a custom resource needs no finalizer and no delete code for them, only
// [SetController] before it creates each child. Finalizers (package
// finalizer) are for state the garbage collector cannot see: outside the
// cluster, or across namespaces.
//
// The garbage collector's rules decide what [SetController] accepts:
//
//   - A namespaced owner can only own objects in its own namespace. Across
//     namespaces the reference is ignored (the child is deleted as an orphan
//     or never), so SetController returns an error instead.
//   - A cluster-scoped owner can own namespaced and cluster-scoped objects.
//   - A cluster-scoped object cannot be owned by a namespaced one.
//   - An object has at most one controller: [ErrAlreadyOwned] says another
//     one got there first, and two operators fighting over a child is a bug
//     to fix, not an error to retry.
//
// SetController sets BlockOwnerDeletion, so a foreground deletion of the
// owner waits for the child. Where the OwnerReferencesPermissionEnforcement
// admission plugin is enabled (OpenShift, some managed clusters) this needs
// permission to update the owner's finalizers subresource, for example
// "foos/finalizers" with verb "update" in the operator's Role.
//
// # Watching children
//
// Kooper's handler always receives the primary object. To react when
// someone edits or deletes a child (scales the Deployment by hand, deletes
// the Service), run a second controller on the child type with the same
// handler wrapped by [Middleware]: it maps each child to its controlling
// owner, fetches it and calls the handler with it.
//
//	foos, err := controller.New(controller.Config{
//		Name: "foo", Handler: h, Retriever: fooRetriever,
//	})
//	...
//	deployments, err := controller.New(controller.Config{
//		Name:      "foo-deployments",
//		Handler:   controller.Chain(h, owner.Middleware(fooGroupKind, getFoo)),
//		Retriever: deploymentRetriever,
//	})
//
// A child without a controller reference to the owner kind is ignored, and
// so is one whose owner is gone or was re-created with the same name (a
// different UID is a different object): the garbage collector removes such
// children. A child's deletion is seen when the child controller sets
// controller.Config.HandleDeleted: the deleted child's last state reaches
// Middleware as a *controller.Deleted, and its owner, still alive, is handled
// and re-creates it. Without it, the owner is handled again only at its next
// change or resync.
//
// The two controllers have separate queues, so the handler may run for the
// same owner in both at once, and a burst of child changes handles the
// owner once per change. The handler must be idempotent and expect update
// conflicts (returned as errors, they are retried with the latest object).
package owner
