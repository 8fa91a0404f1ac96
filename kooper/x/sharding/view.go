package sharding

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kooperkit/kooper/kooper/internal/logkey"
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

// forgetAfter is, in this replica's lease durations, the longest a Lease
// that is not renewed counts as live, whatever duration it states: its
// holder is gone, and cleanUp deletes it then.
const forgetAfter = 10

// duration is how long a Lease counts as live after its last change: its
// own lease duration (a holder stops handling within it), at most
// forgetAfter of this replica's. A Lease anyone wrote with an hour's
// duration holds nothing back for longer.
func (v *view) duration(l *coordinationv1.Lease) time.Duration {
	d := v.def
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return min(d, forgetAfter*v.def)
}

// others returns the live Leases other than self, as they were seen: what
// they say is read by readLeases.
func (v *view) others(now time.Time, self string) []*coordinationv1.Lease {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []*coordinationv1.Lease
	for name, s := range v.leases {
		if name != self && now.Sub(s.at) < v.duration(s.lease) {
			out = append(out, s.lease)
		}
	}
	return out
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
	// A Client that says it cannot stream lists (a fake clientset's, in
	// tests) gets a list then a watch.
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return leases.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return leases.Watch(ctx, opts)
		},
	}, r.cfg.Client)
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
				r.view.saw(l, r.cfg.Clock.Now())
				poke()
			}
		},
		UpdateFunc: func(_, obj any) {
			if l, ok := obj.(*coordinationv1.Lease); ok {
				r.view.saw(l, r.cfg.Clock.Now())
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
		r.log.Error("could not watch the group's Leases", logkey.Err, err)
		return
	}
	informer.RunWithContext(ctx)
}
