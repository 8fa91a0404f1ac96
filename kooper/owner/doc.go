// Package owner sets controller owner references.
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
// hand, deletes the Service), give the owner's controller a source of the
// child's kind, controller.Owns: each change of a child, its deletion
// included, queues its owner's key in the owner's controller, whose
// handler reads the children from the source's cache (Watched.Of).
//
//	deployments := controller.Owns[*appsv1.Deployment](deploymentRetriever)
//	foos, err := controller.New(controller.Config{
//		Name: "foo", Handler: h, Retriever: fooRetriever,
//	}, deployments)
//
// A child without a controller reference to one of the controller's
// objects is ignored, and so is one whose owner is gone or was re-created
// with the same name (a different UID is a different object): the garbage
// collector removes such children.
package owner
