package sharding

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

// In these tests ConfigMaps own Secrets: a Secret's controller reference
// names its ConfigMap. The owners' controller is sharded; its source of
// Secrets (controller.Owns) is not.

func ownerCM(name string, uid types.UID) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
}

// childOf returns a Secret controlled by owner.
func childOf(name string, owner metav1.Object) *corev1.Secret {
	yes := true
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.GetName(),
			UID: owner.GetUID(), Controller: &yes}}}}
}

func mustAdd(t *testing.T, r *fakeapi.Retriever, obj runtime.Object) runtime.Object {
	t.Helper()
	stored, err := r.Add(obj)
	if err != nil {
		t.Fatalf("add: %v", err)
	}
	return stored
}

func mustUpdate(t *testing.T, r *fakeapi.Retriever, obj runtime.Object) runtime.Object {
	t.Helper()
	stored, err := r.Update(obj)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	return stored
}

// ownerLog is the owners' handler: it records each handling as
// "name:children", children being what Of returned.
type ownerLog struct {
	children *controller.Watched[*corev1.Secret]
	mu       sync.Mutex
	calls    []string
}

func (l *ownerLog) Handle(_ context.Context, obj runtime.Object) error {
	cm := obj.(*corev1.ConfigMap)
	var names []string
	for _, s := range l.children.Of(cm) {
		names = append(names, s.Name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, cm.Name+":"+strings.Join(names, ","))
	return nil
}

// Calls returns the handlings so far, oldest first.
func (l *ownerLog) Calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// waitCalls waits until there are n handlings and returns them.
func (l *ownerLog) waitCalls(t *testing.T, what string, n int) []string {
	t.Helper()
	eventually(t, what, func() bool { return len(l.Calls()) >= n })
	return l.Calls()
}

// A child's change has its owner handled only where the owner's slot is
// acquired: the child of an owner in another slot queues it, and the gate
// drops it before the handler.
func TestOnlyTheOwnersOfAcquiredSlotsAreHandled(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // last: once the controllers have stopped
	cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
	secrets := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	mine, theirs := ownerCM("mine", uidInSlot(t, "mine", 0, 2)), ownerCM("theirs", uidInSlot(t, "theirs", 1, 2))
	mustAdd(t, cms, mine)
	mustAdd(t, cms, theirs)
	r := newRunner(t, 2)
	r.acquire([]int{0})
	l := &ownerLog{children: controller.Owns[*corev1.Secret](secrets)}
	start(t, r, ModeClientSide, controller.Config{Name: "owners", Handler: l, Retriever: cms, ResyncInterval: -1}, l.children)

	l.waitCalls(t, "the acquired owner is handled", 1)
	settle()
	before := len(l.Calls())
	mustAdd(t, secrets, childOf("theirs-a", theirs))
	mustAdd(t, secrets, childOf("mine-a", mine))
	if got := l.waitCalls(t, "the acquired owner's child has it handled", before+1); got[before] != "mine:mine-a" {
		t.Errorf("got %q, want mine:mine-a", got[before])
	}
	settle()
	if got := l.Calls()[before:]; len(got) != 1 {
		t.Errorf("got handlings %q after the children were created, want 1: the other slot's owner is not this replica's", got)
	}
	for _, call := range l.Calls() {
		if strings.HasPrefix(call, "theirs:") {
			t.Errorf("the owner of a slot not acquired was handled: %q", call)
		}
	}
}

// With the owner's controller sharded over two replicas, each with its own
// source of the children, a child's change queues its owner in both, and
// only the replica whose slots hold the owner handles it: each owner is
// handled by one replica only, never twice at once, and its last state is
// handled.
func TestChildrenFollowTheirOwnersShard(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // last: once the controllers have stopped
	const owners, slots = 24, 4
	cms := fakeapi.NewRetriever(&corev1.ConfigMap{}, fakeapi.Options{})
	secrets := fakeapi.NewRetriever(&corev1.Secret{}, fakeapi.Options{})
	all := make([]*corev1.ConfigMap, owners)
	for i := range owners {
		name := fmt.Sprintf("web-%d", i)
		all[i] = ownerCM(name, uidInSlot(t, name, i%slots, slots))
		mustAdd(t, cms, all[i])
		mustAdd(t, secrets, childOf(name+"-a", all[i]))
	}

	var (
		mu       sync.Mutex
		by       = map[string]map[string]bool{} // owner → replicas
		inFlight = map[string]bool{}
		last     = map[string]string{} // owner → resourceVersion last handled
		overlaps int
	)
	handler := func(replica string) controller.Handler {
		return controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			cm := obj.(*corev1.ConfigMap)
			mu.Lock()
			if inFlight[cm.Name] {
				overlaps++
			}
			inFlight[cm.Name] = true
			if by[cm.Name] == nil {
				by[cm.Name] = map[string]bool{}
			}
			by[cm.Name][replica] = true
			mu.Unlock()
			time.Sleep(time.Duration(rand.IntN(2)) * time.Millisecond)
			mu.Lock()
			inFlight[cm.Name] = false
			last[cm.Name] = cm.ResourceVersion
			mu.Unlock()
			return nil
		})
	}
	runners := map[string]*Runner{}
	for name, mine := range map[string][]int{"a": {0, 1}, "b": {2, 3}} {
		r := newRunner(t, slots)
		r.acquire(mine)
		runners[name] = r
		start(t, r, ModeClientSide, controller.Config{Name: "owners-" + name, Handler: handler(name), Retriever: cms,
			ConcurrentWorkers: 4, ResyncInterval: -1}, controller.Owns[*corev1.Secret](secrets))
	}

	// The children change, many times: only they do.
	for round := range 20 {
		for i := range owners {
			s := childOf(fmt.Sprintf("web-%d-a", i), all[i])
			s.Labels = map[string]string{"round": strconv.Itoa(round)}
			mustUpdate(t, secrets, s)
		}
	}
	eventually(t, "every owner is handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(last) == owners
	})
	// An owner changed once the children's storm is over has that state
	// handled, by the replica that holds it.
	changed := all[5].DeepCopy()
	changed.Labels = map[string]string{"changed": "yes"}
	rv := mustUpdate(t, cms, changed).(*corev1.ConfigMap).ResourceVersion
	eventually(t, "the owner's last state is handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return last[changed.Name] == rv
	})

	mu.Lock()
	defer mu.Unlock()
	perReplica := map[string]int{}
	for _, o := range all {
		want := ""
		for name, r := range runners {
			if r.gate.holds(SlotOf(o.UID, slots)) {
				want = name
			}
		}
		if len(by[o.Name]) != 1 || !by[o.Name][want] {
			t.Errorf("%s (slot %d) handled by %v, want %s only", o.Name, SlotOf(o.UID, slots), by[o.Name], want)
		}
		perReplica[want]++
	}
	if overlaps != 0 {
		t.Errorf("got %d overlapping handlings of an owner", overlaps)
	}
	t.Logf("owners per replica %v", perReplica)
}
