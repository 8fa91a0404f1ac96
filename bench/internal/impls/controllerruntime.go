package impls

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kooperkit/kooper/bench/internal/memsource"
)

// ControllerRuntime is a sigs.k8s.io/controller-runtime unmanaged controller
// (the version bench/go.mod pins) watching a client-go informer on the
// source. The reconciler reads the object from the informer's indexer and
// deep-copies it, as controller-runtime's cache reader does by default.
//
// It uses the classic client-go rate-limited workqueue, not the default
// priority queue, as the recorded results did: in v0.24.1 the priority queue
// could deadlock on shutdown (a worker leaves GetWithPriority through the
// closed done channel while handleReadyItems, holding the queue lock, blocks
// sending it an item; kubernetes-sigs/controller-runtime#3538). This harness
// hit it in about one run in four, so Start never returned. v0.25.2 has the
// fix (#3540: the send also watches done).
//
// Asymmetries it brings with it: its per-reconcile Prometheus metrics and
// its named queue's metrics (global registry) cannot be turned off, each
// reconcile gets a fresh reconcileID (UUID) and logger values, and
// source.Informer does not wait for the cache to sync before workers start.
type ControllerRuntime struct {
	// PriorityQueue uses controller-runtime's priority queue (its default
	// since v0.23), which hands out keys of the initial list after newer
	// changes. The throughput comparison keeps the classic queue.
	PriorityQueue bool
}

// Name implements Impl.
func (c ControllerRuntime) Name() string {
	if c.PriorityQueue {
		return NameControllerRuntimePQ
	}
	return NameControllerRuntime
}

// Run implements Impl.
func (c ControllerRuntime) Run(ctx context.Context, src *memsource.Source, handle func(runtime.Object)) error {
	informer := cache.NewSharedIndexInformerWithOptions(src.ListerWatcher(), &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{})
	indexer := informer.GetIndexer()
	reconciler := reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		key := req.Name
		if req.Namespace != "" {
			key = req.Namespace + "/" + req.Name
		}
		item, exists, err := indexer.GetByKey(key)
		if err != nil || !exists {
			return reconcile.Result{}, err
		}
		handle(item.(runtime.Object).DeepCopyObject())
		return reconcile.Result{}, nil
	})
	ctrl, err := controller.NewUnmanaged("bench", controller.Options{
		Reconciler:              reconciler,
		MaxConcurrentReconciles: Workers,
		SkipNameValidation:      ptr.To(true),
		UsePriorityQueue:        ptr.To(c.PriorityQueue),
		Logger:                  logr.Discard(),
	})
	if err != nil {
		return err
	}
	if err := ctrl.Watch(&source.Informer{Informer: informer, Handler: &handler.EnqueueRequestForObject{}}); err != nil {
		return err
	}
	var informerDone sync.WaitGroup
	informerDone.Go(func() { informer.RunWithContext(ctx) })
	err = ctrl.Start(ctx) // blocks until ctx is done and its workers returned
	informerDone.Wait()
	return err
}
