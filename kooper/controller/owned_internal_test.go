package controller

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// stubRetriever is a Retriever never called: the tests below feed a
// source's event handler directly.
type stubRetriever struct{}

func (stubRetriever) List(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return &corev1.SecretList{}, nil
}

func (stubRetriever) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}

// mapObjects is an objects over a map, by key.
type mapObjects map[string]any

func (m mapObjects) get(key string) (any, bool, error) {
	obj, ok := m[key]
	return obj, ok, nil
}

func (m mapObjects) keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func (m mapObjects) list() []any {
	items := make([]any, 0, len(m))
	for _, v := range m {
		items = append(items, v)
	}
	return items
}

func controllerRef(name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid, Controller: &yes}
}

func secret(ns, name, rv string, refs ...metav1.OwnerReference) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv,
		OwnerReferences: refs, Labels: map[string]string{}}}
}

// labelled returns s with label owner set to the keys of its owners, as
// the Watches source below maps it.
func labelled(s *corev1.Secret, owners string) *corev1.Secret {
	s.Labels["owners"] = owners
	return s
}

// The mapping from an event of a source to the keys queued: which owner a
// child's controller reference names (the owner cached at that name with
// that UID), what a Watches function returns, for every kind of event.
func TestSourceEventsQueueTheKeysTheObjectRelatesTo(t *testing.T) {
	owners := mapObjects{
		"ns/web":   &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web"}},
		"ns/db":    &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "uid-db"}},
		"team":     &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-team"}},
		"other/db": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "db", UID: "uid-other-db"}},
	}
	notController := controllerRef("web", "uid-web")
	notController.Controller = nil
	add := func(obj any) func(cache.ResourceEventHandler) {
		return func(h cache.ResourceEventHandler) { h.OnAdd(obj, false) }
	}
	update := func(oldObj, obj any) func(cache.ResourceEventHandler) {
		return func(h cache.ResourceEventHandler) { h.OnUpdate(oldObj, obj) }
	}
	remove := func(obj any) func(cache.ResourceEventHandler) {
		return func(h cache.ResourceEventHandler) { h.OnDelete(obj) }
	}
	owns := func() Source { return Owns[*corev1.Secret](stubRetriever{}) }
	watches := func() Source {
		return Watches(stubRetriever{}, func(s *corev1.Secret) []string {
			if v := s.Labels["owners"]; v != "" {
				return []string{"ns/" + v, "ns/" + v, "ns/db"} // duplicates queue once
			}
			return nil
		})
	}
	tests := []struct {
		name   string
		source func() Source
		event  func(cache.ResourceEventHandler)
		want   []string
	}{
		{"A child whose controller reference names a cached owner with its UID queues the owner",
			owns, add(secret("ns", "a", "1", controllerRef("web", "uid-web"))), []string{"ns/web"}},
		{"A child whose reference has another UID than the owner cached at its name queues nothing",
			owns, add(secret("ns", "a", "1", controllerRef("web", "uid-old-web"))), nil},
		{"A child whose owner reference is not a controller reference queues nothing",
			owns, add(secret("ns", "a", "1", notController)), nil},
		{"A child without owner references queues nothing",
			owns, add(secret("ns", "a", "1")), nil},
		{"A child whose owner is not cached queues nothing",
			owns, add(secret("ns", "a", "1", controllerRef("gone", "uid-gone"))), nil},
		{"A namespaced child of a cluster-scoped owner queues the owner's name",
			owns, add(secret("ns", "a", "1", controllerRef("team", "uid-team"))), []string{"team"}},
		{"A child's owner is looked for in the child's namespace",
			owns, add(secret("other", "a", "1", controllerRef("db", "uid-other-db"))), []string{"other/db"}},
		{"An object of the initial list queues nothing: the owners' own list queues them",
			owns, func(h cache.ResourceEventHandler) {
				h.(cache.ResourceEventHandlerDetailedFuncs).AddFunc(secret("ns", "a", "1", controllerRef("web", "uid-web")), true)
			}, nil},
		{"A changed child queues its owner",
			owns, update(secret("ns", "a", "1", controllerRef("web", "uid-web")), secret("ns", "a", "2", controllerRef("web", "uid-web"))),
			[]string{"ns/web"}},
		{"A child whose controller reference moved queues the owners before and after",
			owns, update(secret("ns", "a", "1", controllerRef("web", "uid-web")), secret("ns", "a", "2", controllerRef("db", "uid-db"))),
			[]string{"ns/db", "ns/web"}},
		{"An unchanged child listed again queues nothing",
			owns, update(secret("ns", "a", "1", controllerRef("web", "uid-web")), secret("ns", "a", "1", controllerRef("web", "uid-web"))), nil},
		{"A deleted child queues its owner, from its last state",
			owns, remove(secret("ns", "a", "1", controllerRef("web", "uid-web"))), []string{"ns/web"}},
		{"A child deleted while the watch was down (a tombstone) queues its owner",
			owns, remove(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: secret("ns", "a", "1", controllerRef("web", "uid-web"))}),
			[]string{"ns/web"}},
		{"Watches queues every key its function returns, once each",
			watches, add(labelled(secret("ns", "a", "1"), "web")), []string{"ns/db", "ns/web"}},
		{"Watches queues nothing for an object its function maps to no key",
			watches, add(secret("ns", "a", "1")), nil},
		{"Watches queues, for a change, the keys before and after",
			watches, update(labelled(secret("ns", "a", "1"), "web"), labelled(secret("ns", "a", "2"), "cache")),
			[]string{"ns/cache", "ns/db", "ns/web"}},
		{"Watches queues, for a tombstone, the keys of the last state",
			watches, remove(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: labelled(secret("ns", "a", "1"), "web")}),
			[]string{"ns/db", "ns/web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.source()
			c, err := New(Config{Name: "owners", Retriever: stubRetriever{},
				Handler: HandlerFunc(func(context.Context, runtime.Object) error { return nil })}, src)
			if err != nil {
				t.Fatal(err)
			}
			q := c.newQueue()
			defer q.ShutDown()
			c.queue.Store(q)
			s := src.base()
			s.owners.Store(&objectsRef{owners})

			tc.event(s.events(c))

			var got []string
			for q.Len() > 0 {
				key, _ := q.Get()
				got = append(got, key)
				q.Done(key)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q queued, want %q", got, tc.want)
			}
		})
	}
}
