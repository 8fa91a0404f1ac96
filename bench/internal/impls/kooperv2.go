package impls

import (
	"context"

	"github.com/spotahome/kooper/v2/controller"
	"github.com/spotahome/kooper/v2/log"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/bench/internal/memsource"
)

// KooperV2 is github.com/spotahome/kooper/v2 v2.8.0 with a no-op logger and
// metrics recorder. It hands the handler the cached object (no copy).
//
// Its Retriever adapter wraps the ListerWatcher in a cache.ListWatch that
// hides the watch-list support marker: with a source that refuses streamed
// initial lists, the reflector's watch-list request fails and it falls back
// to LIST+WATCH (a fake clientset, which never refuses, would hang).
// Its Run returns when ctx is done without waiting for its workers and
// informer, which stop shortly after.
type KooperV2 struct{}

// Name implements Impl.
func (KooperV2) Name() string { return NameKooperV2 }

// Run implements Impl.
func (KooperV2) Run(ctx context.Context, src *memsource.Source, handle func(runtime.Object)) error {
	c, err := controller.New(&controller.Config{
		Name: "bench",
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			handle(obj)
			return nil
		}),
		Retriever:         controller.MustRetrieverFromListerWatcher(src.ListerWatcher()),
		Logger:            log.Dummy,
		MetricsRecorder:   controller.DummyMetricsRecorder,
		ConcurrentWorkers: Workers,
		DisableResync:     true,
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
