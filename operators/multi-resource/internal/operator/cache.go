package operator

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// region: slim

// slim keeps of a child's metadata only what the operator reads from the
// cache; the child retrievers (managed) apply it to every object they
// list or watch, before the cache stores it. Owns, to route the child to
// its Tenant, and the handler, to tell its own namespace, read the name,
// namespace and controller reference. The uid, resourceVersion,
// generation and deletionTimestamp say which version is cached and
// whether it is going, the operator's own labels what it is. Annotations,
// managedFields, finalizers, other labels and other owner references go:
// anyone who may edit a child (a tenant's admins may edit the RoleBinding
// and the NetworkPolicy) may make them as large as an object can be,
// 1.5 MiB, and the operator would hold that in every replica, standbys
// included.
//
// It builds a new object, so it never changes its input, and applying it
// twice gives what applying it once does.
func slim(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	out := &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              m.Name,
			Namespace:         m.Namespace,
			UID:               m.UID,
			ResourceVersion:   m.ResourceVersion,
			Generation:        m.Generation,
			DeletionTimestamp: m.DeletionTimestamp,
			Labels:            ownLabels(m.Labels),
		},
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return out
}

// ownLabels returns the labels the operator sets on every child, of those
// in l, or nil if there are none.
func ownLabels(l map[string]string) map[string]string {
	var out map[string]string
	for _, key := range []string{tenant.ManagedByLabel, tenant.TenantLabel} {
		if v, ok := l[key]; ok {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[key] = v
		}
	}
	return out
}

// endregion: slim

// slimWatch passes a watch's events on with slim applied to every object
// added, changed or deleted; bookmarks and errors pass as they are (the
// bookmark ending an initial list carries an annotation the cache reads).
// Unlike apimachinery's watch.Filter, its goroutine ends on Stop even if
// nobody reads the event it holds.
type slimWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func newSlimWatch(in watch.Interface, seen func(watch.Event)) *slimWatch {
	w := &slimWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		for ev := range in.ResultChan() {
			if m, ok := ev.Object.(*metav1.PartialObjectMetadata); ok && ev.Type != watch.Bookmark {
				ev.Object = slim(m)
				seen(ev)
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

// ResultChan implements watch.Interface.
func (w *slimWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop implements watch.Interface.
func (w *slimWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.in.Stop()
}

// ChildObjects records the child objects the operator's caches are given
// (Config.ChildObjects): the latest version of each, as slim left it, by
// kind, less those whose deletion was seen. Only the child retrievers
// feed the caches, so what they never delivered the operator never holds.
// Its zero value is ready to use.
type ChildObjects struct {
	mu   sync.Mutex
	objs map[string]map[string]*metav1.PartialObjectMetadata // by kind, then namespace/name
}

// listed replaces what c holds of kind with a list's items.
func (c *ChildObjects) listed(kind string, items []metav1.PartialObjectMetadata) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objs == nil {
		c.objs = map[string]map[string]*metav1.PartialObjectMetadata{}
	}
	c.objs[kind] = map[string]*metav1.PartialObjectMetadata{}
	for i := range items {
		c.objs[kind][items[i].Namespace+"/"+items[i].Name] = items[i].DeepCopy()
	}
}

// watched records a watch event of kind.
func (c *ChildObjects) watched(kind string, ev watch.Event) {
	m, ok := ev.Object.(*metav1.PartialObjectMetadata)
	if c == nil || !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objs == nil {
		c.objs = map[string]map[string]*metav1.PartialObjectMetadata{}
	}
	if c.objs[kind] == nil {
		c.objs[kind] = map[string]*metav1.PartialObjectMetadata{}
	}
	key := m.Namespace + "/" + m.Name
	if ev.Type == watch.Deleted {
		delete(c.objs[kind], key)
		return
	}
	c.objs[kind][key] = m.DeepCopy()
}

// List returns a copy of the objects of kind (a tenant.Kind constant) the
// operator was given, in no order, and true; or nil and false if none of
// that kind was ever listed or watched.
func (c *ChildObjects) List(kind string) ([]*metav1.PartialObjectMetadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byKey, ok := c.objs[kind]
	if !ok {
		return nil, false
	}
	out := make([]*metav1.PartialObjectMetadata, 0, len(byKey))
	for _, m := range byKey {
		out = append(out, m.DeepCopy())
	}
	return out, true
}
