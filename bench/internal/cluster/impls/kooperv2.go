package impls

import (
	"context"
	"fmt"

	"github.com/spotahome/kooper/v2/controller"
	"github.com/spotahome/kooper/v2/controller/leaderelection"
	"github.com/spotahome/kooper/v2/log"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// KooperV2 is github.com/spotahome/kooper/v2 v2.8.0 as its docs show it: a
// cache.ListWatch over the typed pods client, MustRetrieverFromListerWatcher,
// a no-op logger and metrics recorder, 3 workers, resync off. It hands the
// handler the cached object (no copy) and keeps managedFields.
//
// It waits for sync with cache.WaitForCacheSync, which polls HasSynced every
// 100ms, and its Run returns when ctx is done without waiting for its
// workers and informer. Its ListerWatcher wrapper calls the ListWatch with
// context.TODO and hides any watch-list marker, which is harmless against a
// real API server (client-go still streams the initial list). Two
// controllers are two independent controllers on one clientset.
//
// Under an election each controller gets a leaderelection.New runner on
// the Lease with the given timings. That runner never releases its Lease:
// it renews it with context.TODO, so a stopped replica's Lease lapses only
// when its process exits and LeaseDuration passes.
type KooperV2 struct{}

// Name implements Impl.
func (KooperV2) Name() string { return NameKooperV2 }

// Run implements Impl.
func (KooperV2) Run(ctx context.Context, cfg *rest.Config, handlers []Handler, opts Options) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("could not create the clientset: %w", err)
	}
	pods := client.CoreV1().Pods(metav1.NamespaceAll)
	return runEach(ctx, handlers, func(ctx context.Context, i int, handle Handler) error {
		var elector leaderelection.Runner
		if e := opts.Election; e != nil {
			var err error
			elector, err = leaderelection.New(e.Name, e.Namespace, &leaderelection.LockConfig{
				LeaseDuration: e.LeaseDuration, RenewDeadline: e.RenewDeadline, RetryPeriod: e.RetryPeriod,
			}, client, log.Dummy)
			if err != nil {
				return fmt.Errorf("could not create the leader elector: %w", err)
			}
		}
		c, err := controller.New(&controller.Config{
			Name: fmt.Sprintf("bench-%d", i),
			Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
				handle(obj.(metav1.Object))
				return nil
			}),
			Retriever: controller.MustRetrieverFromListerWatcher(&cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
					return pods.List(ctx, opts)
				},
				WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
					return pods.Watch(ctx, opts)
				},
			}),
			Logger:            log.Dummy,
			MetricsRecorder:   controller.DummyMetricsRecorder,
			ConcurrentWorkers: Workers,
			ResyncInterval:    opts.Resync,
			DisableResync:     opts.Resync == 0,
			LeaderElector:     elector,
		})
		if err != nil {
			return fmt.Errorf("could not create the controller: %w", err)
		}
		return c.Run(ctx)
	})
}
