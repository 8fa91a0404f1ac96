package impls

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
)

// Kooper is this repository's controller. The zero value is its defaults
// (no logger, no metrics recorder, managedFields dropped from the cache, a
// deep copy per handling, workers started once the cache is complete) over
// controller.NewRetriever on the typed pods client; the fields switch on
// one option each. Two controllers are two independent controllers (two
// informers, two queues) on one clientset.
type Kooper struct {
	// Metadata caches metadata only (controller.NewMetadataRetriever):
	// the handler gets *metav1.PartialObjectMetadata.
	Metadata bool
	// ColdStandby sets leaderelection.Config.DisableWarmStandby: under
	// leader election a standby starts its controllers only once it leads
	// (by default a standby fills its caches while it waits).
	ColdStandby bool
}

// Name implements Impl.
func (k Kooper) Name() string {
	switch {
	case k.Metadata:
		return NameKooperMetadata
	case k.ColdStandby:
		return NameKooperCold
	}
	return NameKooper
}

// Run implements Impl. Under an election the controllers run in one
// leaderelection.Runner, as the sample operators run theirs.
func (k Kooper) Run(ctx context.Context, cfg *rest.Config, handlers []Handler, opts Options) error {
	retriever, err := k.retriever(cfg)
	if err != nil {
		return err
	}
	runnables := make([]leaderelection.Runnable, 0, len(handlers))
	for i, handle := range handlers {
		c, err := controller.New(controller.Config{
			Name: fmt.Sprintf("bench-%d", i),
			Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
				handle(obj.(metav1.Object))
				return nil
			}),
			Retriever:      retriever,
			ResyncInterval: cmp.Or(opts.Resync, -1), // 0: never
		})
		if err != nil {
			return fmt.Errorf("could not create the controller: %w", err)
		}
		runnables = append(runnables, c)
	}
	le := leaderelection.Config{Disabled: true}
	if e := opts.Election; e != nil {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("could not create the clientset: %w", err)
		}
		le = leaderelection.Config{
			Name:               e.Name,
			Namespace:          e.Namespace,
			Client:             client.CoordinationV1(),
			LeaseDuration:      e.LeaseDuration,
			RenewDeadline:      e.RenewDeadline,
			RetryPeriod:        e.RetryPeriod,
			DisableWarmStandby: k.ColdStandby,
		}
	}
	runner, err := leaderelection.New(le, runnables...)
	if err != nil {
		return fmt.Errorf("could not create the runner: %w", err)
	}
	return runner.Run(ctx)
}

// retriever is what the docs show: NewRetriever over the typed pods
// client, or NewMetadataRetriever over the metadata client. It holds no
// state, so independent controllers can each use it.
func (k Kooper) retriever(cfg *rest.Config) (controller.Retriever, error) {
	if k.Metadata {
		md, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("could not create the metadata client: %w", err)
		}
		return controller.NewMetadataRetriever(md, corev1.SchemeGroupVersion.WithResource("pods"), metav1.NamespaceAll), nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("could not create the clientset: %w", err)
	}
	pods := client.CoreV1().Pods(metav1.NamespaceAll)
	return controller.NewRetriever(pods.List, pods.Watch), nil
}
