package controllertest

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// Retriever is an in-memory store of objects of one type that lists and
// watches like an API server. Objects get increasing resourceVersions.
// It is safe for concurrent use.
type Retriever struct {
	api *fakeapi.Retriever
}

var _ controller.Retriever = (*Retriever)(nil)

// NewRetriever returns an empty Retriever for objects of example's type
// (a pointer, such as &corev1.Pod{}), needed to build bookmark events.
func NewRetriever(example runtime.Object) *Retriever {
	return &Retriever{api: fakeapi.NewRetriever(example, fakeapi.Options{})}
}

// Add stores a copy of obj as a new object and notifies watchers. It returns
// the stored copy, with its resourceVersion set. Adding an object that is
// already stored returns an AlreadyExists error, as the API server does.
func (r *Retriever) Add(obj runtime.Object) (runtime.Object, error) { return r.api.Add(obj) }

// Update replaces a stored object with a copy of obj and notifies watchers.
// It returns the stored copy, with its new resourceVersion. Updating an
// object that is not stored returns a NotFound error.
func (r *Retriever) Update(obj runtime.Object) (runtime.Object, error) { return r.api.Update(obj) }

// Delete removes the object with obj's namespace and name and notifies
// watchers. Deleting an object that is not stored returns a NotFound error.
func (r *Retriever) Delete(obj runtime.Object) error { return r.api.Delete(obj) }

// List returns every stored object matching opts' label selector, in a
// *metav1.List with the current resourceVersion. ctx is not used.
func (r *Retriever) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return r.api.List(ctx, opts)
}

// Watch starts a watch. With opts.SendInitialEvents it first sends an
// Added event per stored object and a bookmark annotated
// "k8s.io/initial-events-end"; with a resourceVersion it replays the
// changes made after it; otherwise it starts from now. The watch stops
// when ctx is done or Stop is called.
func (r *Retriever) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return r.api.Watch(ctx, opts)
}
