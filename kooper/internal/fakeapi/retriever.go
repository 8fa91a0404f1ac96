package fakeapi

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kooperkit/kooper/kooper/controller"
)

// Options configures a Retriever.
type Options struct {
	// DisableWatchList makes the Retriever refuse streamed initial lists, as
	// a fake clientset does: it reports IsWatchListSemanticsUnSupported, so
	// client-go falls back to LIST then WATCH.
	DisableWatchList bool
}

// Call is one List or Watch call the Retriever received.
type Call struct {
	Verb    string // "list" or "watch"
	Options metav1.ListOptions
}

// Retriever is an in-memory store of objects of one type that lists and
// watches like an API server. Objects get increasing resourceVersions.
// It is safe for concurrent use.
type Retriever struct {
	example reflect.Type
	opts    Options

	mu       sync.Mutex
	rv       uint64
	objects  map[string]runtime.Object // by namespace/name key
	history  []watch.Event             // every change, for watches from an older resourceVersion
	watchers map[*watcher]struct{}
	calls    []Call
}

var _ controller.Retriever = (*Retriever)(nil)

// NewRetriever returns an empty Retriever for objects of example's type
// (a pointer, such as &corev1.Pod{}), needed to build bookmark events.
func NewRetriever(example runtime.Object, opts Options) *Retriever {
	return &Retriever{
		example:  reflect.TypeOf(example).Elem(),
		opts:     opts,
		objects:  map[string]runtime.Object{},
		watchers: map[*watcher]struct{}{},
	}
}

// IsWatchListSemanticsUnSupported reports Options.DisableWatchList to
// client-go's reflector.
func (r *Retriever) IsWatchListSemanticsUnSupported() bool { return r.opts.DisableWatchList }

// Add stores a copy of obj as a new object and notifies watchers. It returns
// the stored copy, with its resourceVersion set.
func (r *Retriever) Add(obj runtime.Object) (runtime.Object, error) {
	return r.write(watch.Added, obj)
}

// Update replaces a stored object with a copy of obj and notifies watchers.
func (r *Retriever) Update(obj runtime.Object) (runtime.Object, error) {
	return r.write(watch.Modified, obj)
}

// Delete removes the object with obj's namespace and name and notifies watchers.
func (r *Retriever) Delete(obj runtime.Object) error {
	_, err := r.write(watch.Deleted, obj)
	return err
}

// Calls returns the List and Watch calls received so far, oldest first.
func (r *Retriever) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *Retriever) write(typ watch.EventType, obj runtime.Object) (runtime.Object, error) {
	if t := reflect.TypeOf(obj); t.Kind() != reflect.Pointer || t.Elem() != r.example {
		return nil, fmt.Errorf("retriever stores %s, got %T", r.example, obj)
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, fmt.Errorf("could not compute the object key: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, exists := r.objects[key]
	switch {
	case typ == watch.Added && exists:
		return nil, apierrors.NewAlreadyExists(schemaGR, key)
	case typ != watch.Added && !exists:
		return nil, apierrors.NewNotFound(schemaGR, key)
	}
	r.rv++
	stored := obj.DeepCopyObject()
	m, err := meta.Accessor(stored)
	if err != nil {
		return nil, fmt.Errorf("object has no metadata: %w", err)
	}
	m.SetResourceVersion(strconv.FormatUint(r.rv, 10))
	if typ == watch.Deleted {
		delete(r.objects, key)
	} else {
		r.objects[key] = stored
	}
	e := watch.Event{Type: typ, Object: stored}
	r.history = append(r.history, e)
	for w := range r.watchers {
		w.send(w.filter(old, e))
	}
	return stored, nil
}

// List returns every stored object matching opts' label selector, in a
// *metav1.List with the current resourceVersion. ctx is not used.
func (r *Retriever) List(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Verb: "list", Options: opts})
	list := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(r.rv, 10)}}
	for _, obj := range r.sortedLocked() {
		if matches(sel, obj) {
			list.Items = append(list.Items, runtime.RawExtension{Object: obj.DeepCopyObject()})
		}
	}
	return list, nil
}

// Watch starts a watch. With opts.SendInitialEvents it first
// sends an Added event per stored object and a bookmark annotated
// "k8s.io/initial-events-end" (refused with DisableWatchList); with a
// resourceVersion it replays the changes made after it; otherwise it starts
// from now. The watch stops when ctx is done or Stop is called.
func (r *Retriever) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Verb: "watch", Options: opts})
	// Work out what to send before starting the watcher, so a refused
	// request leaves no goroutine behind.
	var backlog []watch.Event
	switch {
	case opts.SendInitialEvents != nil && *opts.SendInitialEvents:
		if r.opts.DisableWatchList {
			return nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
		}
		for _, obj := range r.sortedLocked() {
			if matches(sel, obj) {
				backlog = append(backlog, watch.Event{Type: watch.Added, Object: obj})
			}
		}
		bookmark := reflect.New(r.example).Interface().(runtime.Object)
		m, _ := meta.Accessor(bookmark)
		m.SetResourceVersion(strconv.FormatUint(r.rv, 10))
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		backlog = append(backlog, watch.Event{Type: watch.Bookmark, Object: bookmark})
	case opts.ResourceVersion != "" && opts.ResourceVersion != "0":
		from, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", opts.ResourceVersion))
		}
		if from > r.rv {
			return nil, apierrors.NewTooManyRequests("resourceVersion is in the future", 1)
		}
		// history[i] has resourceVersion i+1.
		prev := map[string]runtime.Object{}
		for _, e := range r.history[:from] {
			k, _ := cache.MetaNamespaceKeyFunc(e.Object)
			prev[k] = e.Object
		}
		for _, e := range r.history[from:] {
			k, _ := cache.MetaNamespaceKeyFunc(e.Object)
			backlog = append(backlog, filterFor(sel, prev[k], e))
			prev[k] = e.Object
		}
	}
	w := newWatcher(ctx, sel, func(w *watcher) {
		r.mu.Lock()
		delete(r.watchers, w)
		r.mu.Unlock()
	})
	for _, e := range backlog {
		w.send(e)
	}
	r.watchers[w] = struct{}{}
	return w, nil
}

// sortedLocked returns the stored objects oldest first (by resourceVersion).
func (r *Retriever) sortedLocked() []runtime.Object {
	objs := make([]runtime.Object, 0, len(r.objects))
	for _, o := range r.objects {
		objs = append(objs, o)
	}
	slices.SortFunc(objs, func(a, b runtime.Object) int { return rvOf(a) - rvOf(b) })
	return objs
}

func rvOf(obj runtime.Object) int {
	m, _ := meta.Accessor(obj)
	rv, _ := strconv.Atoi(m.GetResourceVersion())
	return rv
}

func matches(sel labels.Selector, obj runtime.Object) bool {
	if obj == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	return err == nil && sel.Matches(labels.Set(m.GetLabels()))
}

// ListerWatcher returns the Retriever as a client-go ListerWatcher, for
// informers and libraries other than Kooper (benchmarks compare them on
// the same source). It keeps the watch-list support marker.
func (r *Retriever) ListerWatcher() cache.ListerWatcher { return listerWatcher{r} }

type listerWatcher struct{ r *Retriever }

var (
	_ cache.ListerWatcher            = listerWatcher{}
	_ cache.ListerWatcherWithContext = listerWatcher{}
)

func (l listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.r.List(context.Background(), opts)
}

func (l listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.r.Watch(context.Background(), opts)
}

func (l listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return l.r.List(ctx, opts)
}

func (l listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return l.r.Watch(ctx, opts)
}

func (l listerWatcher) IsWatchListSemanticsUnSupported() bool { return l.r.opts.DisableWatchList }
