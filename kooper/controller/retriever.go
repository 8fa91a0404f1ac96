package controller

import (
	"context"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Retriever lists and watches one resource type. The controller's cache
// calls it with the controller's context and with the options the client-go
// reflector chooses, which a Retriever must pass through unchanged: with
// client-go 0.35 or later and a 1.27+ API server the initial state arrives
// as a streamed watch (sendInitialEvents=true, allowWatchBookmarks=true)
// with no LIST at all, and List is used only as a fallback.
//
// A Retriever that cannot stream the initial list, such as one over a fake
// clientset, must say so with a method IsWatchListSemanticsUnSupported()
// bool returning true: the cache then lists, and watches from the list's
// version. Fakes need it. A fake watch ignores sendInitialEvents and never
// sends the bookmark that ends an initial list, so a cache streaming from a
// fake waits for it forever: its controller never syncs, and Run handles
// nothing. client-go's fake clientsets (kubernetes, metadata, dynamic and
// client-gen's) have the method, but the typed clients they hand out do
// not: wrap a Retriever over a fake clientset's typed client with
// [WithoutWatchList]. [NewMetadataRetriever] reads the method of its client
// itself; a Retriever that wraps another must forward it. The method is the
// one client-go's reflector looks for (through
// watchlist.DoesClientNotSupportWatchListSemantics);
// TestPinTheReflectorListsForAClientWithoutWatchList fails if a new
// client-go stops looking for it.
type Retriever interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// watchListMarker is the method a Retriever that cannot stream an
// initial list has (see Retriever).
type watchListMarker interface {
	IsWatchListSemanticsUnSupported() bool
}

// watchListUnsupported reports whether v says it cannot stream an initial
// list.
func watchListUnsupported(v any) bool {
	u, ok := v.(watchListMarker)
	return ok && u.IsWatchListSemanticsUnSupported()
}

// WithoutWatchList returns r marked as unable to stream its initial list
// (see [Retriever]), for a Retriever over a fake clientset:
//
//	client := fake.NewClientset(objects...)
//	pods := client.CoreV1().Pods("")
//	r := controller.WithoutWatchList(controller.NewRetriever(pods.List, pods.Watch))
func WithoutWatchList(r Retriever) Retriever { return noWatchList{r} }

type noWatchList struct{ Retriever }

var (
	_ watchListMarker = noWatchList{}
	_ watchListMarker = (*funcRetriever[runtime.Object])(nil)
	_ watchListMarker = listerWatcher{}
)

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }
func (n noWatchList) describe() string                    { return describe(n.Retriever) }
func (n noWatchList) unwrap() Retriever                   { return n.Retriever }

// NewRetriever returns a Retriever over a typed client's List and Watch
// methods, the usual way to retrieve a built-in or generated type:
//
//	pods := client.CoreV1().Pods("") // "" is every namespace
//	r := controller.NewRetriever(pods.List, pods.Watch)
//
// Over a fake clientset, wrap it with [WithoutWatchList].
func NewRetriever[L runtime.Object](
	list func(context.Context, metav1.ListOptions) (L, error),
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error),
) Retriever {
	return &funcRetriever[L]{list: list, watch: watch}
}

type funcRetriever[L runtime.Object] struct {
	list  func(context.Context, metav1.ListOptions) (L, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	// noWatchList says that list and watch come from a fake
	// (NewMetadataRetriever only; see Retriever).
	noWatchList bool
	// what names the objects in client-go's messages; default: the type
	// of the list's items, e.g. "*v1.Pod".
	what string
}

// describe names the retrieved objects the way client-go's reflector names
// a typed informer's ("failed to list *v1.Pod"): the list's item type.
func (r *funcRetriever[L]) describe() string {
	if r.what != "" {
		return r.what
	}
	t := reflect.TypeFor[L]()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if f, ok := t.FieldByName("Items"); ok && f.Type.Kind() == reflect.Slice {
		return reflect.PointerTo(f.Type.Elem()).String()
	}
	return t.String()
}

// describe names what r retrieves for client-go's messages, or returns ""
// (client-go then says "<unspecified>") for a Retriever of unknown origin.
func describe(r Retriever) string {
	if d, ok := r.(interface{ describe() string }); ok {
		return d.describe()
	}
	return ""
}

func (r *funcRetriever[L]) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return r.list(ctx, opts)
}

func (r *funcRetriever[L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return r.watch(ctx, opts)
}

func (r *funcRetriever[L]) IsWatchListSemanticsUnSupported() bool { return r.noWatchList }

// NewMetadataRetriever returns a Retriever of the metadata only of one
// resource's objects, in namespace ("" for every namespace, or for a
// cluster-scoped resource): the handler gets *metav1.PartialObjectMetadata,
// with names, labels, annotations, owner references, finalizers and
// resourceVersion, and no spec or status.
//
//	md, err := metadata.NewForConfig(restConfig)
//	r := controller.NewMetadataRetriever(md, corev1.SchemeGroupVersion.WithResource("pods"), "")
//
// Use it for controllers that only need to know that objects exist or
// changed, such as those of child objects that map a child to its owner: a
// cached pod's metadata weighs a fraction of the pod. The API server still
// streams the initial list (watch-list) and encodes in protobuf. To filter
// by label, build the Retriever with NewRetriever over the metadata
// client's List and Watch instead.
func NewMetadataRetriever(client metadata.Interface, resource schema.GroupVersionResource, namespace string) Retriever {
	res := client.Resource(resource).Namespace(namespace)
	return &funcRetriever[*metav1.PartialObjectMetadataList]{list: res.List, watch: res.Watch,
		noWatchList: watchListUnsupported(client), what: resource.GroupResource().String() + " (metadata)"}
}

// listerWatcher turns a Retriever into the client-go ListerWatcher that the
// informer needs, bound to the context of one Run. The reflector only calls
// the WithContext methods; the others exist to satisfy cache.ListerWatcher.
type listerWatcher struct {
	ctx context.Context
	r   Retriever
	// idle, if positive, ends a watch that received nothing for that long
	// on clock (idle.go; nil: the real clock); onIdle is told.
	idle   time.Duration
	onIdle func()
	clock  clock.WithDelayedExecution
	// view, if not nil, is in the context of every list and watch, for
	// TrackWrites's transport to tell what the cache lists (writes.go).
	view *cacheView
}

var (
	_ cache.ListerWatcher            = listerWatcher{}
	_ cache.ListerWatcherWithContext = listerWatcher{}
)

func (l listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(l.ctx, opts)
}

func (l listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(l.ctx, opts)
}

func (l listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return l.r.List(l.viewed(ctx), opts)
}

func (l listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	ctx = l.viewed(ctx)
	if l.idle <= 0 {
		return l.r.Watch(ctx, opts)
	}
	onIdle := l.onIdle
	if onIdle == nil {
		onIdle = func() {}
	}
	return watchUnanswered(ctx, l.clock, l.r, opts, l.idle, onIdle)
}

// viewed returns ctx carrying l's view, if any.
func (l listerWatcher) viewed(ctx context.Context) context.Context {
	if l.view == nil {
		return ctx
	}
	return context.WithValue(ctx, viewKey{}, l.view)
}

// IsWatchListSemanticsUnSupported forwards the Retriever's marker: hiding it
// would make an informer over a fake clientset hang.
func (l listerWatcher) IsWatchListSemanticsUnSupported() bool { return watchListUnsupported(l.r) }
