package handler

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// applied remembers, per Tenant, each child as the handler last applied it,
// so that a handling can tell a repair (its apply wrote again what someone
// else changed or deleted) from an apply that found everything in place.
// Only the drift metric reads it: nothing is skipped or filtered on it. A
// Tenant is handled by one worker at a time, so its entry is never written
// by two handlings at once; the lock guards the map. The handler forgets
// Tenants it sees deleted, and the Tenants that are gone from the cache are
// pruned each time the map has doubled: a Tenant deleted at once (it has no
// finalizer) gets no last handling.
type applied struct {
	mu      sync.Mutex
	tenants map[types.UID]tenantApplied
	// pruneAt is the size at which the next prune runs.
	pruneAt int
}

// tenantApplied is what the handler last applied for one Tenant.
type tenantApplied struct {
	name string
	// generation is the Tenant's generation then: a later one is a spec
	// change, not drift.
	generation int64
	children   map[childKey]appliedChild
}

type childKey struct{ kind, namespace, name string }

// appliedChild is a child as the API server returned it after an apply.
type appliedChild struct {
	uid types.UID
	rv  string
	// at is when the operator's apply last changed the child (its
	// managedFields entry), to the second.
	at time.Time
}

// region: repaired

// repaired reports whether applying the child produced now after someone
// else had deleted it (another UID) or changed the operator's fields of it
// (a later resourceVersion and a later apply time), for the same Tenant
// generation; and remembers now. live, if not nil, tells whether a Tenant
// still exists, for pruning.
func (a *applied) repaired(t metav1.Object, k childKey, now appliedChild, live func(name string, uid types.UID) bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tenants == nil {
		a.tenants = map[types.UID]tenantApplied{}
	}
	if live != nil && len(a.tenants) >= a.pruneAt {
		for uid, t := range a.tenants {
			if !live(t.name, uid) {
				delete(a.tenants, uid)
			}
		}
		a.pruneAt = 2*len(a.tenants) + 64
	}
	last, ok := a.tenants[t.GetUID()]
	if !ok || last.generation != t.GetGeneration() {
		last = tenantApplied{name: t.GetName(), generation: t.GetGeneration(), children: map[childKey]appliedChild{}}
		a.tenants[t.GetUID()] = last
	}
	before, seen := last.children[k]
	last.children[k] = now
	return seen && (before.uid != now.uid || (before.rv != now.rv && now.at.After(before.at)))
}

// endregion: repaired

// forget drops what was applied for t.
func (a *applied) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.tenants, uid)
}

// len returns the number of Tenants remembered.
func (a *applied) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.tenants)
}
