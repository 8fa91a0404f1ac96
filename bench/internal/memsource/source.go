// Package memsource is the in-memory API server every compared implementation
// reads: a controllertest.Retriever that can refuse streamed initial lists,
// as a server without watch-list support does, counts the List and Watch
// calls it receives, and is handed to client-go informers as a
// ListerWatcher.
package memsource

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

// Pump is in the stack of every goroutine serving one watch of a Source
// (the Retriever's, in the library's internal in-memory API).
var Pump = []byte("fakeapi.(*watcher).pump")

// Source is an in-memory store of ConfigMaps that lists and watches like
// an API server. It is safe for concurrent use.
type Source struct {
	*controllertest.Retriever
	noWatchList bool
	calls       atomic.Int64
}

// New returns an empty Source. With disableWatchList it refuses a watch
// asking for a streamed initial list, and says so to client-go's
// reflector (IsWatchListSemanticsUnSupported), which then lists and
// watches from the list's resourceVersion.
func New(disableWatchList bool) *Source {
	return &Source{Retriever: controllertest.NewRetriever(&corev1.ConfigMap{}), noWatchList: disableWatchList}
}

// List lists the stored ConfigMaps.
func (s *Source) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	s.calls.Add(1)
	return s.Retriever.List(ctx, opts)
}

// Watch starts a watch; it refuses a streamed initial list when New was
// told to.
func (s *Source) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.calls.Add(1)
	if s.noWatchList && opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
	}
	return s.Retriever.Watch(ctx, opts)
}

// IsWatchListSemanticsUnSupported tells client-go's reflector (and Kooper,
// which forwards it) whether to stream the initial list.
func (s *Source) IsWatchListSemanticsUnSupported() bool { return s.noWatchList }

// Calls returns how many List and Watch calls the Source received.
func (s *Source) Calls() int64 { return s.calls.Load() }

// ListerWatcher returns the Source as a client-go ListerWatcher, for
// informers and libraries other than Kooper. It keeps the watch-list
// support marker.
func (s *Source) ListerWatcher() cache.ListerWatcher { return listerWatcher{s} }

type listerWatcher struct{ s *Source }

var (
	_ cache.ListerWatcher            = listerWatcher{}
	_ cache.ListerWatcherWithContext = listerWatcher{}
)

func (l listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.s.List(context.Background(), opts)
}

func (l listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.s.Watch(context.Background(), opts)
}

func (l listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return l.s.List(ctx, opts)
}

func (l listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return l.s.Watch(ctx, opts)
}

func (l listerWatcher) IsWatchListSemanticsUnSupported() bool { return l.s.noWatchList }
