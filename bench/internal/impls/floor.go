package impls

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kooperkit/kooper/bench/internal/memsource"
)

// Floor is the least a client-go controller does: a SharedIndexInformer, a
// typed rate-limited workqueue of keys (unnamed, so no queue metrics) and
// workers that hand the handler the cached object itself (no copy), as in
// kubernetes/sample-controller. Any library costs at least this much.
type Floor struct{}

// Name implements Impl.
func (Floor) Name() string { return NameFloor }

// Run implements Impl.
func (Floor) Run(ctx context.Context, src *memsource.Source, handle func(runtime.Object)) error {
	informer := cache.NewSharedIndexInformerWithOptions(src.ListerWatcher(), &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{})
	return RunFloor(ctx, informer, handle)
}

// RunFloor is the floor's loop over any informer not yet started: it runs
// informer, waits for its sync on the registration's HasSyncedChecker (no
// polling), then hands each queued key's cached object to handle with
// Workers workers until ctx is done, and returns once all have stopped.
// The benchmark on a real control plane runs the same loop.
func RunFloor(ctx context.Context, informer cache.SharedIndexInformer, handle func(runtime.Object)) error {
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return fmt.Errorf("could not register the event handler: %w", err)
	}
	var informerDone, workers sync.WaitGroup
	informerDone.Go(func() { informer.RunWithContext(ctx) })
	if cache.WaitFor(ctx, "", reg.HasSyncedChecker()) {
		indexer := informer.GetIndexer()
		for range Workers {
			workers.Go(func() {
				for {
					key, shutdown := queue.Get()
					if shutdown {
						return
					}
					if item, exists, err := indexer.GetByKey(key); err == nil && exists {
						handle(item.(runtime.Object))
					}
					queue.Forget(key)
					queue.Done(key)
				}
			})
		}
	}
	<-ctx.Done()
	queue.ShutDown()
	workers.Wait()
	informerDone.Wait()
	return nil
}
