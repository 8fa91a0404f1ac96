package sharding

import (
	"context"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kooperkit/kooper/kooper/log"
)

// view is what this replica knows of the group's Leases: each one's last
// version and when this replica first saw that version, on its own clock.
// A Lease whose version has not changed for its lease duration is gone.
type view struct {
	def time.Duration // lease duration of a Lease that says none

	mu     sync.Mutex
	leases map[string]seen
}

// seen is a Lease and when its version was first seen.
type seen struct {
	lease *coordinationv1.Lease
	at    time.Time
}

func newView(def time.Duration) *view {
	return &view{def: def, leases: map[string]seen{}}
}

// saw records l as seen at now.
func (v *view) saw(l *coordinationv1.Lease, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sawLocked(l, now)
}

func (v *view) sawLocked(l *coordinationv1.Lease, now time.Time) {
	if prev, ok := v.leases[l.Name]; ok && prev.lease.ResourceVersion == l.ResourceVersion {
		return
	}
	v.leases[l.Name] = seen{lease: l, at: now}
}

// gone forgets a deleted Lease.
func (v *view) gone(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.leases, name)
}

// replace records a full list of the group's Leases: those missing from it
// are gone.
func (v *view) replace(items []coordinationv1.Lease, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	keep := map[string]bool{}
	for i := range items {
		v.sawLocked(&items[i], now)
		keep[items[i].Name] = true
	}
	for name := range v.leases {
		if !keep[name] {
			delete(v.leases, name)
		}
	}
}

// duration is a Lease's lease duration.
func (v *view) duration(l *coordinationv1.Lease) time.Duration {
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return v.def
}

// live returns the live members other than self, and the claims of each
// (self excluded). A Lease with another slot count is never live: it is
// reported by mismatched.
func (v *view) live(now time.Time, self string) ([]string, map[string][]int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var members []string
	claims := map[string][]int{}
	for name, s := range v.leases {
		if name == self || now.Sub(s.at) >= v.duration(s.lease) {
			continue
		}
		count, err := strconv.Atoi(s.lease.Annotations[AnnotationSlotCount])
		if err != nil {
			continue
		}
		slots, err := parseSlots(s.lease.Annotations[AnnotationSlots], count)
		if err != nil {
			continue
		}
		members = append(members, name)
		claims[name] = slots
	}
	return members, claims
}

// mismatched returns a live Lease whose slot count is not count, if any.
func (v *view) mismatched(now time.Time, count int) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for name, s := range v.leases {
		if now.Sub(s.at) < v.duration(s.lease) && s.lease.Annotations[AnnotationSlotCount] != strconv.Itoa(count) {
			return name, true
		}
	}
	return "", false
}

// nextExpiry returns how long until the next live Lease expires.
func (v *view) nextExpiry(now time.Time) (time.Duration, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var next time.Duration
	found := false
	for _, s := range v.leases {
		left := s.at.Add(v.duration(s.lease)).Sub(now)
		if left > 0 && (!found || left < next) {
			next, found = left, true
		}
	}
	return next, found
}

// stale returns the Leases not renewed for longer than after.
func (v *view) stale(now time.Time, after time.Duration) []*coordinationv1.Lease {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []*coordinationv1.Lease
	for _, s := range v.leases {
		if now.Sub(s.at) >= after {
			out = append(out, s.lease)
		}
	}
	return out
}

// watchLeases keeps the view up to date from a watch of the group's Leases
// and wakes the loop on every change, until ctx is done.
func (r *Runner) watchLeases(ctx context.Context, wake chan<- struct{}) {
	leases := r.cfg.Client.Leases(r.cfg.Namespace)
	selector := LabelGroup + "=" + r.cfg.Name
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return leases.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return leases.Watch(ctx, opts)
		},
	}
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	informer := cache.NewSharedIndexInformer(lw, &coordinationv1.Lease{}, 0, cache.Indexers{})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if l, ok := obj.(*coordinationv1.Lease); ok {
				r.view.saw(l, time.Now())
				poke()
			}
		},
		UpdateFunc: func(_, obj any) {
			if l, ok := obj.(*coordinationv1.Lease); ok {
				r.view.saw(l, time.Now())
				poke()
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if l, ok := obj.(*coordinationv1.Lease); ok {
				r.view.gone(l.Name)
				poke()
			}
		},
	})
	if err != nil {
		r.log.Error("could not watch the group's Leases", log.KeyErr, err)
		return
	}
	informer.RunWithContext(ctx)
}
