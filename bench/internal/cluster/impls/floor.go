package impls

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	memimpls "github.com/kooperkit/kooper/bench/internal/impls"
)

// Floor is the least a client-go controller does, as in
// kubernetes/sample-controller: client-go's generated pod informer on the
// typed clientset (protobuf, streamed initial list), a typed rate-limited
// workqueue of keys (unnamed: no queue metrics) and workers that hand the
// handler the cached object itself (no copy). Workers start once the
// registration's HasSyncedChecker says the cache is filled (no polling).
// Two controllers are two informers on one clientset.
type Floor struct{}

// Name implements Impl.
func (Floor) Name() string { return NameFloor }

// Run implements Impl.
func (Floor) Run(ctx context.Context, cfg *rest.Config, handlers []Handler, opts Options) error {
	if opts.Election != nil {
		return ErrNoElection
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("could not create the clientset: %w", err)
	}
	return runEach(ctx, handlers, func(ctx context.Context, _ int, handle Handler) error {
		informer := coreinformers.NewPodInformer(client, metav1.NamespaceAll, opts.Resync, cache.Indexers{})
		return memimpls.RunFloor(ctx, informer, func(obj runtime.Object) { handle(obj.(*corev1.Pod)) })
	})
}
