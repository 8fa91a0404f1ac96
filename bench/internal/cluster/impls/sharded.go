package impls

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// ShardName names the sharded controller and its group's Leases' prefix
// in scenario 6. No peer has sharding: only Kooper runs it.
const ShardName = "bench-sharding"

// ModeUnsharded is ShardReplica.Mode without a group.
const ModeUnsharded = "unsharded"

// ShardGroup is the group a sharded replica joins.
type ShardGroup struct {
	// Election has the Leases' namespace, the group's name (Name: the
	// Runner's Config.Name) and the Lease timings.
	Election
	// Identity names this replica in its Lease.
	Identity string
}

// ShardReplica is Kooper's controller on the pods of one namespace, with
// its defaults (3 workers, managedFields dropped, a deep copy per
// handling) and resync off, run as one replica of a sharded group (its
// handler and Retriever wrapped by a sharding.Runner, which runs it) or,
// without a group, alone with plain Run: the baseline. It counts the objects its
// Retriever delivers (list items and watch events carrying one).
type ShardReplica struct {
	ctrl      *controller.Controller
	runner    *sharding.Runner // nil: unsharded
	delivered atomic.Int64
}

// NewShardReplica builds the controller over cfg's pods of namespace,
// calling handle once per handling, and, with group, its sharding Runner.
func NewShardReplica(cfg *rest.Config, namespace string, handle func(context.Context, metav1.Object), group *ShardGroup) (*ShardReplica, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("could not create the clientset: %w", err)
	}
	r := &ShardReplica{}
	pods := client.CoreV1().Pods(namespace)
	list := func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
		l, err := pods.List(ctx, opts)
		if err == nil {
			r.delivered.Add(int64(len(l.Items)))
		}
		return l, err
	}
	watchPods := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		w, err := pods.Watch(ctx, opts)
		if err != nil {
			return nil, err
		}
		return newCountingWatch(w, &r.delivered), nil
	}
	ccfg := controller.Config{
		Name: ShardName,
		Handler: controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
			handle(ctx, obj.(metav1.Object))
			return nil
		}),
		Retriever:      controller.NewRetriever(list, watchPods),
		ResyncInterval: -1,
	}
	if group != nil {
		r.runner, err = sharding.New(sharding.Config{
			Name:          group.Name,
			Namespace:     group.Namespace,
			Client:        client.CoordinationV1(),
			Identity:      group.Identity,
			LeaseDuration: group.LeaseDuration,
			RenewDeadline: group.RenewDeadline,
			RetryPeriod:   group.RetryPeriod,
		})
		if err != nil {
			return nil, fmt.Errorf("could not create the sharding runner: %w", err)
		}
		ccfg.Handler = r.runner.Handler(ccfg.Handler)
		ccfg.Retriever = r.runner.Retriever(ccfg.Retriever)
	}
	r.ctrl, err = controller.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("could not create the controller: %w", err)
	}
	return r, nil
}

// Run runs the replica until ctx is done: the Runner (which leaves its
// group on the way out), or the controller alone.
func (r *ShardReplica) Run(ctx context.Context) error {
	if r.runner == nil {
		return r.ctrl.Run(ctx)
	}
	return r.runner.Run(ctx, r.ctrl)
}

// Slots returns the slots the replica handles now (nil unsharded).
func (r *ShardReplica) Slots() []int {
	if r.runner == nil {
		return nil
	}
	return r.runner.Slots()
}

// Mode returns "server-side" or "client-side" once the Runner detected
// it, "" before, and ModeUnsharded without a group.
func (r *ShardReplica) Mode() string {
	if r.runner == nil {
		return ModeUnsharded
	}
	return string(r.runner.Mode())
}

// Cached returns how many objects the controller's cache holds (0 before
// it synced).
func (r *ShardReplica) Cached() int {
	objs, _ := r.ctrl.List()
	return len(objs)
}

// Delivered returns how many objects the Retriever delivered so far.
func (r *ShardReplica) Delivered() int64 { return r.delivered.Load() }

// countingWatch passes a watch's events on, counting those that carry an
// object (added, modified, deleted). Unlike watch.Filter, it stops
// forwarding once stopped, so no goroutine outlives a reader that went.
type countingWatch struct {
	w    watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func newCountingWatch(w watch.Interface, n *atomic.Int64) *countingWatch {
	c := &countingWatch{w: w, out: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(c.out)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
					n.Add(1)
				}
				select {
				case c.out <- ev:
				case <-c.done:
					return
				}
			case <-c.done:
				return
			}
		}
	}()
	return c
}

func (c *countingWatch) ResultChan() <-chan watch.Event { return c.out }

func (c *countingWatch) Stop() {
	c.once.Do(func() { close(c.done) })
	c.w.Stop()
}
