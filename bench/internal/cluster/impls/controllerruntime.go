package impls

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerRuntime is sigs.k8s.io/controller-runtime (the version
// bench/go.mod pins) the way its users run it: a manager (no metrics server, no health probes, leader
// election only in the failover scenario) and builder.ControllerManagedBy(mgr).For(&corev1.Pod{}) with 3
// concurrent reconciles; the reconciler reads the pod with
// mgr.GetClient().Get, which deep-copies it out of the manager's cache.
//
// It uses the classic client-go workqueue (UsePriorityQueue false) unless
// PriorityQueue, as the recorded results did: v0.24.1's default priority
// queue could deadlock on shutdown (see bench/README.md; fixed in v0.25.2).
// Two controllers are two controllers in one manager: they share the
// manager's cache (one informer) by design, and each has its own queue.
//
// Under an election the manager elects on a Lease with the given timings
// and LeaderElectionReleaseOnCancel (so a clean stop frees the Lease, as
// Kooper's runner does by default).
type ControllerRuntime struct {
	// Warmup sets EnableWarmup: a standby starts its controllers' sources
	// (informers) before it leads.
	Warmup bool
	// PriorityQueue sets UsePriorityQueue: events from the initial list and
	// from resyncs of unchanged objects wait behind the others.
	PriorityQueue bool
}

// Name implements Impl.
func (c ControllerRuntime) Name() string {
	switch {
	case c.Warmup:
		return NameControllerRuntimeWarmup
	case c.PriorityQueue:
		return NameControllerRuntimePQ
	}
	return NameControllerRuntime
}

// Run implements Impl.
func (c ControllerRuntime) Run(ctx context.Context, cfg *rest.Config, handlers []Handler, opts Options) error {
	mo := manager.Options{
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller: config.Controller{
			SkipNameValidation: ptr.To(true),
			UsePriorityQueue:   ptr.To(c.PriorityQueue),
			EnableWarmup:       ptr.To(c.Warmup),
		},
	}
	if opts.Resync > 0 {
		mo.Cache = cache.Options{SyncPeriod: ptr.To(opts.Resync)}
	}
	if e := opts.Election; e != nil {
		mo.LeaderElection = true
		mo.LeaderElectionID = e.Name
		mo.LeaderElectionNamespace = e.Namespace
		mo.LeaderElectionReleaseOnCancel = true
		mo.LeaseDuration = ptr.To(e.LeaseDuration)
		mo.RenewDeadline = ptr.To(e.RenewDeadline)
		mo.RetryPeriod = ptr.To(e.RetryPeriod)
	}
	mgr, err := manager.New(cfg, mo)
	if err != nil {
		return fmt.Errorf("could not create the manager: %w", err)
	}
	for i, handle := range handlers {
		reader := mgr.GetClient()
		err := builder.ControllerManagedBy(mgr).
			Named(fmt.Sprintf("bench-%d", i)).
			For(&corev1.Pod{}).
			WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				var pod corev1.Pod
				if err := reader.Get(ctx, req.NamespacedName, &pod); err != nil {
					return reconcile.Result{}, client.IgnoreNotFound(err)
				}
				handle(&pod)
				return reconcile.Result{}, nil
			}))
		if err != nil {
			return fmt.Errorf("could not build controller %d: %w", i, err)
		}
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("the manager failed: %w", err)
	}
	return nil
}
