package owner_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
	"github.com/kooperkit/kooper/kooper/owner"
)

var deploymentGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}

// owners is a map-based owner.Owners: the objects its Get finds, and the
// keys Enqueue got.
type owners struct {
	objs   map[string]runtime.Object
	queued []string
}

func (o *owners) Get(key string) (runtime.Object, bool) {
	obj, ok := o.objs[key]
	return obj, ok
}

func (o *owners) Enqueue(key string) { o.queued = append(o.queued, key) }

func TestEnqueueOwner(t *testing.T) {
	web := &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")}
	team := &corev1.Namespace{ObjectMeta: meta("", "team", "team-uid")}
	rs := func(refs ...metav1.OwnerReference) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "rs-uid", refs...)}
	}
	namespaceRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: "team", UID: "team-uid", Controller: ptr.To(true)}
	tests := []struct {
		name  string
		owner schema.GroupKind
		obj   runtime.Object
		want  []string // the keys queued
	}{
		{
			name:  "an owned object queues its owner",
			owner: deploymentGK,
			obj:   rs(controllerRef("Deployment", "web", "web-uid")),
			want:  []string{"ns/web"},
		},
		{
			name:  "a deleted owned object queues its owner, from its last state",
			owner: deploymentGK,
			obj:   &controller.Deleted{Object: rs(controllerRef("Deployment", "web", "web-uid"))},
			want:  []string{"ns/web"},
		},
		{
			name:  "a namespaced object queues its cluster-scoped owner",
			owner: schema.GroupKind{Kind: "Namespace"},
			obj:   &corev1.ConfigMap{ObjectMeta: meta("team", "quota", "cm-uid", namespaceRef)},
			want:  []string{"team"},
		},
		{
			name:  "a cluster-scoped object queues its cluster-scoped owner",
			owner: schema.GroupKind{Kind: "Namespace"},
			obj:   &corev1.PersistentVolume{ObjectMeta: meta("", "disk", "pv-uid", namespaceRef)},
			want:  []string{"team"},
		},
		{
			name:  "metadata alone is enough",
			owner: deploymentGK,
			obj:   &metav1.PartialObjectMetadata{ObjectMeta: meta("ns", "web-1", "rs-uid", controllerRef("Deployment", "web", "web-uid"))},
			want:  []string{"ns/web"},
		},
		{
			name:  "an owner referenced with another version is still found",
			owner: deploymentGK,
			obj: rs(metav1.OwnerReference{APIVersion: "apps/v1beta2", Kind: "Deployment", Name: "web", UID: "web-uid",
				Controller: ptr.To(true)}),
			want: []string{"ns/web"},
		},
		{
			name:  "an object without owner references is ignored",
			owner: deploymentGK,
			obj:   rs(),
		},
		{
			name:  "an object controlled by another kind is ignored",
			owner: deploymentGK,
			obj:   rs(controllerRef("StatefulSet", "web", "web-uid")),
		},
		{
			name:  "an object controlled by the same kind of another group is ignored",
			owner: deploymentGK,
			obj: rs(metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Deployment", Name: "web", UID: "web-uid",
				Controller: ptr.To(true)}),
		},
		{
			name:  "a plain owner reference is ignored",
			owner: deploymentGK,
			obj:   rs(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid"}),
		},
		{
			name:  "an owner re-created with the same name is not the owner",
			owner: deploymentGK,
			obj:   rs(controllerRef("Deployment", "web", "old-uid")),
		},
		{
			name:  "an owner missing from the cache is ignored",
			owner: deploymentGK,
			obj:   rs(controllerRef("Deployment", "api", "api-uid")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &owners{objs: map[string]runtime.Object{"ns/web": web, "team": team}}
			err := owner.EnqueueOwner(o, tt.owner).Handle(context.Background(), tt.obj)
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if !slices.Equal(o.queued, tt.want) {
				t.Errorf("got keys queued %q, want %q", o.queued, tt.want)
			}
		})
	}
}

func TestEnqueueOwnerRefusesAnObjectWithoutMetadata(t *testing.T) {
	o := &owners{}
	err := owner.EnqueueOwner(o, deploymentGK).Handle(context.Background(), &metav1.Status{})
	if !controller.IsTerminal(err) {
		t.Errorf("got error %v, want a terminal error", err)
	}
}

// One owner kind and two child kinds, each with its own controller of 8
// workers, and bursts of changes to the same owners from all three: the
// owner's handler runs only in the owner's controller, so it never runs
// twice at once for one owner, every owner's last state is handled, and a
// deleted child still has its owner handled.
func TestAnOwnerIsNeverHandledTwiceAtOnceAcrossKinds(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts controllertest.Options
	}{
		{"watch-list", controllertest.Options{}},
		{"list+watch", controllertest.Options{DisableWatchList: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			const owners, workers = 10, 8
			deployments := controllertest.NewRetriever(&appsv1.Deployment{}, mode.opts)
			replicaSets := controllertest.NewRetriever(&appsv1.ReplicaSet{}, mode.opts)
			services := controllertest.NewRetriever(&corev1.Service{}, mode.opts)
			ownerOf := func(i int) metav1.ObjectMeta {
				return meta("ns", fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i)))
			}
			childOf := func(i int, suffix string) metav1.ObjectMeta {
				return meta("ns", fmt.Sprintf("web-%d-%s", i, suffix), "", controllerRef("Deployment", fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i))))
			}
			for i := range owners {
				mustAdd(t, deployments, &appsv1.Deployment{ObjectMeta: ownerOf(i)})
				mustAdd(t, replicaSets, &appsv1.ReplicaSet{ObjectMeta: childOf(i, "rs")})
				mustAdd(t, services, &corev1.Service{ObjectMeta: childOf(i, "svc")})
			}

			h := newExclusive()
			primary, err := controller.New(controller.Config{
				Name: "deployments", Handler: h, Retriever: deployments, ConcurrentWorkers: workers, DisableResync: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			child := func(name string, r controller.Retriever) *controller.Controller {
				c, err := controller.New(controller.Config{
					Name: name, Handler: owner.EnqueueOwner(primary, deploymentGK), Retriever: r,
					ConcurrentWorkers: workers, DisableResync: true, HandleDeleted: true,
				})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			ctrls := []*controller.Controller{primary, child("replicasets", replicaSets), child("services", services)}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for _, c := range ctrls {
				wg.Go(func() {
					if err := c.Run(ctx); err != nil {
						t.Errorf("Run: %v", err)
					}
				})
			}
			defer func() { cancel(); wg.Wait() }()
			eventually(t, "every controller syncs", func() bool {
				return !slices.ContainsFunc(ctrls, func(c *controller.Controller) bool { return !c.HasSynced() })
			})

			// Bursts: the owners' own changes and their children's, from
			// three goroutines at once.
			var writers sync.WaitGroup
			for _, write := range []func(i, round int){
				func(i, round int) {
					d := &appsv1.Deployment{ObjectMeta: ownerOf(i)}
					d.Labels = map[string]string{"round": strconv.Itoa(round)}
					mustUpdate(t, deployments, d)
				},
				func(i, round int) {
					rs := &appsv1.ReplicaSet{ObjectMeta: childOf(i, "rs")}
					rs.Labels = map[string]string{"round": strconv.Itoa(round)}
					mustUpdate(t, replicaSets, rs)
				},
				func(i, round int) {
					svc := &corev1.Service{ObjectMeta: childOf(i, "svc")}
					svc.Labels = map[string]string{"round": strconv.Itoa(round)}
					mustUpdate(t, services, svc)
				},
			} {
				writers.Go(func() {
					for round := range 30 {
						for _, i := range rand.Perm(owners) {
							write(i, round)
						}
					}
				})
			}
			writers.Wait()

			want := map[string]string{}
			for _, obj := range mustList(t, deployments) {
				d := obj.(*appsv1.Deployment)
				want[d.Namespace+"/"+d.Name] = d.ResourceVersion
			}
			eventually(t, "every owner's last state is handled", func() bool { return h.lastIs(want) })

			// A child deleted on its own has its owner handled again.
			before := h.count("ns/web-3")
			if err := services.Delete(&corev1.Service{ObjectMeta: childOf(3, "svc")}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the owner of the deleted child is handled", func() bool { return h.count("ns/web-3") > before })

			cancel()
			wg.Wait()
			if n := h.overlaps.Load(); n != 0 {
				t.Errorf("got %d handlings of an owner while another of it was running, want 0", n)
			}
			t.Logf("%d owner handlings for %d owners", h.total(), owners)
		})
	}
}

// exclusive is an owner handler that counts the handlings of one key that
// start while another of it runs, and records the last resourceVersion
// handled per key.
type exclusive struct {
	overlaps atomic.Int64

	mu       sync.Mutex
	inFlight map[string]int
	last     map[string]string
	counts   map[string]int
}

func newExclusive() *exclusive {
	return &exclusive{inFlight: map[string]int{}, last: map[string]string{}, counts: map[string]int{}}
}

func (e *exclusive) Handle(_ context.Context, obj runtime.Object) error {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return controller.Terminal(fmt.Errorf("got %T, want a Deployment", obj))
	}
	key := d.Namespace + "/" + d.Name
	e.mu.Lock()
	e.inFlight[key]++
	if e.inFlight[key] > 1 {
		e.overlaps.Add(1)
	}
	e.mu.Unlock()
	time.Sleep(time.Millisecond) // long enough for a second worker to start
	e.mu.Lock()
	e.inFlight[key]--
	e.last[key] = d.ResourceVersion
	e.counts[key]++
	e.mu.Unlock()
	return nil
}

func (e *exclusive) lastIs(want map[string]string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, rv := range want {
		if e.last[k] != rv {
			return false
		}
	}
	return true
}

func (e *exclusive) count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[key]
}

func (e *exclusive) total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.counts {
		n += c
	}
	return n
}

func mustAdd(t *testing.T, r *controllertest.Retriever, obj runtime.Object) {
	t.Helper()
	if _, err := r.Add(obj); err != nil {
		t.Fatal(err)
	}
}

func mustUpdate(t *testing.T, r *controllertest.Retriever, obj runtime.Object) {
	t.Helper()
	if _, err := r.Update(obj); err != nil {
		t.Error(err)
	}
}

func mustList(t *testing.T, r *controllertest.Retriever) []runtime.Object {
	t.Helper()
	list, err := r.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
