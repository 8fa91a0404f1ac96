// Package owner sets controller owner references and routes changes of
// owned objects into their owner's queue.
//
// # Owner references instead of cleanup code
//
// An owner reference in a child's metadata.ownerReferences names the object
// it belongs to. When the owner is deleted, the Kubernetes garbage collector
// deletes the child: a handler that creates Deployments, Services or Secrets
// for a custom resource needs no finalizer and no delete code for them, only
// [SetController] before it creates each child. That includes a
// cluster-scoped owner's children in any namespace. Finalizers (package
// finalizer) are for what cannot carry an owner reference: state outside the
// cluster, and a namespaced owner's objects in another namespace.
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
// To react when someone edits or deletes a child (scales the Deployment by
// hand, deletes the Service), run a second controller on the child type
// whose handler is [EnqueueOwner]: it reads each child's controller
// reference and queues the owner's key in the owner's controller, which
// handles it.
//
//	foos, err := controller.New(controller.Config{
//		Name: "foo", Handler: h, Retriever: fooRetriever,
//	})
//	...
//	deployments, err := controller.New(controller.Config{
//		Name:          "foo-deployments",
//		Handler:       owner.EnqueueOwner(foos, fooGroupKind),
//		Retriever:     deploymentRetriever,
//		HandleDeleted: true,
//		DisableResync: true,
//	})
//
// The owner's domain logic runs only in the owner's controller. Its queue
// holds each key once and gives it to one worker at a time, so one owner is
// never handled by two workers at once, whichever kind changed, and a burst
// of child changes while the owner waits in the queue is one handling. The
// child controller makes no API call: it reads the child's metadata (a
// metadata-only Retriever is enough) and the owner from the owner
// controller's cache.
//
// A child without a controller reference to the owner kind is ignored, and
// so is one whose owner is gone or was re-created with the same name (a
// different UID is a different object): the garbage collector removes such
// children. A child's deletion is seen when the child controller sets
// controller.Config.HandleDeleted: the deleted child's last state reaches
// EnqueueOwner as a *controller.Deleted, and its owner, still alive, is
// handled and re-creates it.
package owner
