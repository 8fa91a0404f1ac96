package owner_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
	"github.com/kooperkit/kooper/kooper/owner"
)

// replicaOf records which replica handled each owner.
type replicaOf struct {
	mu sync.Mutex
	by map[string]map[string]bool // owner key → replicas
}

func (r *replicaOf) wrap(replica string, next controller.Handler) controller.Handler {
	return controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
		m := obj.(metav1.Object)
		r.mu.Lock()
		key := m.GetNamespace() + "/" + m.GetName()
		if r.by[key] == nil {
			r.by[key] = map[string]bool{}
		}
		r.by[key][replica] = true
		r.mu.Unlock()
		return next.Handle(ctx, obj)
	})
}

// With the owner's controller sharded over two replicas and each replica's
// child controller unsharded, a child's change is routed to the replica
// whose slots hold its owner: each owner is handled by one replica only,
// never twice at once, and its last state is handled.
func TestChildrenFollowTheirOwnersShard(t *testing.T) {
	defer goleak.VerifyNone(t)
	const owners, slots = 24, 4
	deployments := controllertest.NewRetriever(&appsv1.Deployment{}, controllertest.Options{})
	replicaSets := controllertest.NewRetriever(&appsv1.ReplicaSet{}, controllertest.Options{})
	uid := func(i int) types.UID {
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
	}
	ownerOf := func(i int) metav1.ObjectMeta { return meta("ns", fmt.Sprintf("web-%d", i), uid(i)) }
	childOf := func(i int) metav1.ObjectMeta {
		return meta("ns", fmt.Sprintf("web-%d-rs", i), "", controllerRef("Deployment", fmt.Sprintf("web-%d", i), uid(i)))
	}
	for i := range owners {
		mustAdd(t, deployments, &appsv1.Deployment{ObjectMeta: ownerOf(i)})
		mustAdd(t, replicaSets, &appsv1.ReplicaSet{ObjectMeta: childOf(i)})
	}

	h, seen := newExclusive(), &replicaOf{by: map[string]map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	shards := map[string]*controller.Shards{}
	for r, mine := range map[string][]int{"a": {0, 1}, "b": {2, 3}} {
		s, err := controller.NewShards(slots, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, slot := range mine {
			_ = s.Acquire(slot)
		}
		shards[r] = s
		primary, err := controller.New(controller.Config{Name: "deployments-" + r, Handler: seen.wrap(r, h), Retriever: deployments, ConcurrentWorkers: 4, DisableResync: true})
		if err != nil {
			t.Fatal(err)
		}
		child, err := controller.New(controller.Config{Name: "replicasets-" + r, Handler: owner.EnqueueOwner(primary, deploymentGK), Retriever: replicaSets, ConcurrentWorkers: 4, DisableResync: true})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := primary.RunSharded(ctx, s); err != nil {
				t.Errorf("RunSharded: %v", err)
			}
		})
		wg.Go(func() {
			if err := child.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()

	// The children change, many times: only they do.
	for round := range 20 {
		for i := range owners {
			rs := &appsv1.ReplicaSet{ObjectMeta: childOf(i)}
			rs.Labels = map[string]string{"round": strconv.Itoa(round)}
			mustUpdate(t, replicaSets, rs)
		}
	}
	want := map[string]string{}
	for _, obj := range mustList(t, deployments) {
		d := obj.(*appsv1.Deployment)
		want[d.Namespace+"/"+d.Name] = d.ResourceVersion
	}
	eventually(t, "every owner is handled", func() bool { return h.lastIs(want) })
	before := h.total()
	mustUpdate(t, replicaSets, &appsv1.ReplicaSet{ObjectMeta: childOf(5), Spec: appsv1.ReplicaSetSpec{MinReadySeconds: 3}})
	eventually(t, "a child's change has its owner handled", func() bool { return h.count("ns/web-5") > 0 && h.total() > before })

	seen.mu.Lock()
	defer seen.mu.Unlock()
	perReplica := map[string]int{}
	for i := range owners {
		key := fmt.Sprintf("ns/web-%d", i)
		var wantReplica string
		for r, s := range shards {
			if s.Owns(uid(i)) {
				wantReplica = r
			}
		}
		if len(seen.by[key]) != 1 || !seen.by[key][wantReplica] {
			t.Errorf("%s (slot %d) handled by %v, want %s only", key, controller.SlotOf(uid(i), slots), seen.by[key], wantReplica)
		}
		perReplica[wantReplica]++
	}
	if n := h.overlaps.Load(); n != 0 {
		t.Errorf("got %d overlapping handlings of an owner", n)
	}
	t.Logf("owners per replica %v, %d owner handlings", perReplica, h.total())
}
