// Package operator wires the multi-resource operator: one controller for
// Tenants and one per child kind (Namespace, ResourceQuota, LimitRange,
// RoleBinding, NetworkPolicy), all sharing one handler, plus metrics, health
// endpoints and leader election. cmd/ turns flags into a Config and calls
// Run; tests call Run the same way against a local control plane.
//
// Why split controllers: each watches one type with its own retriever,
// interval and middleware. The child controllers list and watch only the
// objects labelled as managed by this operator, keep no managedFields in
// their caches (the library's default), never resync (nothing they hold can drift unseen), and see
// deletions (controller.Config.HandleDeleted) so that a child deleted by hand
// is made again. Each maps a child to its Tenant (owner.Middleware) and calls
// the same handler the Tenant controller calls.
package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/health"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/kooper/owner"
	"github.com/kooperkit/kooper/operators/internal/observe"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/handler"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// Defaults, shared with cmd/ and the manifests in manifests/multi-resource.
const (
	DefaultName      = "multi-resource"
	DefaultNamespace = "kooper-system"
	// DefaultResync is how often every Tenant is handled again anyway. The
	// child controllers see drift as it happens; this is a safety net.
	DefaultResync = 10 * time.Minute
)

// ErrInvalidConfig is wrapped by Run's errors about its Config.
var ErrInvalidConfig = errors.New("invalid multi-resource config")

// Config configures the operator.
type Config struct {
	// REST reaches the API server, with the QPS and burst to use. Required.
	REST *rest.Config
	// Name is the operator's name: the field manager of what it applies,
	// the Lease's name, the controllers' name prefix. Default DefaultName.
	Name string
	// Namespace holds the Lease. Default DefaultNamespace.
	Namespace string
	// Resync is the Tenant controller's resync interval. Default
	// DefaultResync.
	Resync time.Duration
	// HTTPAddr serves /metrics, /healthz and /readyz. Empty: not served.
	HTTPAddr string
	// EnableProfiling also serves /debug/pprof/ on HTTPAddr.
	EnableProfiling bool
	// DisableLeaderElection runs the controllers without holding the Lease:
	// for a single replica only.
	DisableLeaderElection bool
	// TracerProvider, if set, traces each handling and the API calls it
	// makes (kooper/tracing). Default: no tracing.
	TracerProvider trace.TracerProvider
	// Logger receives the operator's logs. Default log.Noop.
	Logger log.Logger
	// Registry receives the metrics. Default: a new registry.
	Registry *prom.Registry
}

func (c *Config) defaults() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Resync <= 0 {
		c.Resync = DefaultResync
	}
	if c.Logger == nil {
		c.Logger = log.Noop
	}
	if c.Registry == nil {
		c.Registry = prom.NewRegistry()
	}
}

// Run runs the operator until ctx is done, then stops everything it started
// and returns. It returns an error if anything fails to start, or
// leaderelection.ErrLeaseLost if the replica lost the Lease.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	if cfg.REST == nil {
		return fmt.Errorf("%w: a REST config is required", ErrInvalidConfig)
	}
	// region: tenants-source
	metrics := newMetrics()
	var primary *controller.Controller // set below, before /metrics is served
	metrics.tenants = func() ([]runtime.Object, bool) {
		if primary == nil {
			return nil, false
		}
		return primary.List()
	}
	// endregion: tenants-source
	obs, err := observe.New(cfg.REST, cfg.Registry, cfg.TracerProvider, metrics.collectors()...)
	if err != nil {
		return err
	}
	traced, recorder := obs.Middlewares, obs.Recorder
	kube, err := kubernetes.NewForConfig(obs.REST)
	if err != nil {
		return fmt.Errorf("could not create the Kubernetes client: %w", err)
	}
	tenancy, err := versioned.NewForConfig(obs.REST)
	if err != nil {
		return fmt.Errorf("could not create the tenancy client: %w", err)
	}

	// region: primary
	h := &handler.Handler{Kube: kube, Tenancy: tenancy, FieldManager: cfg.Name, Writes: &handler.Writes{}, Metrics: metrics}
	tenants := tenancy.TenancyV1alpha1().Tenants()
	primary, err = controller.New(controller.Config{
		Name:            cfg.Name,
		Handler:         controller.Chain(h.New(), traced...),
		Retriever:       controller.NewRetriever(tenancy, tenants.List, tenants.Watch),
		ResyncInterval:  cfg.Resync,
		Logger:          cfg.Logger,
		MetricsRecorder: recorder,
	})
	if err != nil {
		return err
	}
	ctrls := []*controller.Controller{primary}
	// endregion: primary

	// region: children
	// The owner of a child, read from the API server when a child changed.
	getTenant := func(ctx context.Context, _, name string) (runtime.Object, error) {
		return tenants.Get(ctx, name, metav1.GetOptions{})
	}
	// The child controllers read only names, owners and resourceVersions:
	// they cache metadata only, a fraction of each object.
	md, err := metadata.NewForConfig(obs.REST)
	if err != nil {
		return fmt.Errorf("could not create the metadata client: %w", err)
	}
	children := []struct {
		kind     string
		resource schema.GroupVersionResource
	}{
		{tenant.KindNamespace, corev1.SchemeGroupVersion.WithResource("namespaces")},
		{tenant.KindResourceQuota, corev1.SchemeGroupVersion.WithResource("resourcequotas")},
		{tenant.KindLimitRange, corev1.SchemeGroupVersion.WithResource("limitranges")},
		{tenant.KindRoleBinding, rbacv1.SchemeGroupVersion.WithResource("rolebindings")},
		{tenant.KindNetworkPolicy, networkingv1.SchemeGroupVersion.WithResource("networkpolicies")},
	}
	for _, c := range children {
		ctrl, err := controller.New(controller.Config{
			Name: cfg.Name + "-" + strings.ToLower(c.kind),
			// Outermost first: the span (if tracing), drop echoes of our
			// own writes, map the child to its Tenant, the shared handler.
			Handler: controller.Chain(h.New(), append(traced,
				handler.Children(c.kind, h.Writes), owner.Middleware(tenancyv1alpha1.Kind("Tenant"), getTenant))...),
			Retriever:       managed(md, c.resource),
			DisableResync:   true,
			HandleDeleted:   true,
			Logger:          cfg.Logger,
			MetricsRecorder: recorder,
		})
		if err != nil {
			return err
		}
		ctrls = append(ctrls, ctrl)
	}
	// endregion: children

	leader := health.NewLeader(recorder)
	synced := make([]health.Synced, len(ctrls))
	for i, c := range ctrls {
		synced[i] = c
	}
	if cfg.HTTPAddr != "" {
		var l *health.Leader
		if !cfg.DisableLeaderElection {
			l = leader
		}
		srv, err := health.Start(health.Config{Addr: cfg.HTTPAddr, Gatherer: cfg.Registry, EnableProfiling: cfg.EnableProfiling, Ready: health.Readiness(l, synced...), Logger: cfg.Logger})
		if err != nil {
			return err
		}
		defer srv.Stop()
		cfg.Logger.Info("serving metrics and health", "addr", srv.Addr())
	}

	cfg.Logger.Info("multi-resource operator starting", "controllers", len(ctrls), "leaderElection", !cfg.DisableLeaderElection)
	// region: leaderelection
	if cfg.DisableLeaderElection {
		return runAll(ctx, ctrls)
	}
	runnables := make([]leaderelection.Runnable, len(ctrls))
	for i, c := range ctrls {
		runnables[i] = c
	}
	runner, err := leaderelection.New(leaderelection.Config{
		Name:      cfg.Name,
		Namespace: cfg.Namespace,
		Client:    kube.CoordinationV1(),
		Logger:    cfg.Logger,
		Recorder:  leader,
	}, runnables...)
	if err != nil {
		return err
	}
	return runner.Run(ctx)
	// endregion: leaderelection
}

// region: managed

// managed returns a retriever of the metadata of resource's objects
// labelled as managed by this operator, and only those.
func managed(md metadata.Interface, resource schema.GroupVersionResource) controller.Retriever {
	sel := tenant.ManagedByLabel + "=" + tenant.ManagedBy
	res := md.Resource(resource).Namespace("") // every namespace
	return controller.NewRetriever(md,
		func(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
			opts.LabelSelector = sel
			return res.List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = sel
			return res.Watch(ctx, opts)
		})
}

// endregion: managed

// runAll runs every controller until ctx is done and returns the first
// error, after all have returned.
func runAll(ctx context.Context, ctrls []*controller.Controller) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(ctrls))
	var wg sync.WaitGroup
	for i, c := range ctrls {
		wg.Go(func() {
			errs[i] = c.Run(ctx)
			cancel() // one stopping stops all
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// metrics are the operator's own metrics.
type metrics struct {
	drift *prom.CounterVec
	// tenants lists the Tenant controller's cache (Controller.List).
	tenants     func() ([]runtime.Object, bool)
	tenantsDesc *prom.Desc
}

func newMetrics() *metrics {
	m := &metrics{drift: prom.NewCounterVec(prom.CounterOpts{
		Name: "kooper_tenant_drift_repairs_total",
		Help: "Children of Tenants restored after someone else changed or deleted them, by kind.",
	}, []string{"kind"}),
		tenantsDesc: prom.NewDesc("kooper_tenants", tenantsHelp, []string{"ready"}, nil),
	}
	for _, kind := range []string{tenant.KindNamespace, tenant.KindResourceQuota, tenant.KindLimitRange, tenant.KindRoleBinding, tenant.KindNetworkPolicy} {
		m.drift.WithLabelValues(kind) // every series from the start, at 0
	}
	return m
}

func (m *metrics) collectors() []prom.Collector {
	return []prom.Collector{m.drift, tenantsCollector{m}}
}

const tenantsHelp = "Tenants by their Ready condition (false: False or Unknown), counted at scrape time in the Tenant controller's cache; only the replica running the controllers (the leader) reports it."

// region: gauge

// tenantsCollector counts Tenants by readiness when scraped, from the
// cache: no API call, and nothing to keep in step as Tenants come and go.
type tenantsCollector struct{ m *metrics }

func (c tenantsCollector) Describe(ch chan<- *prom.Desc) { ch <- c.m.tenantsDesc }

func (c tenantsCollector) Collect(ch chan<- prom.Metric) {
	if c.m.tenants == nil {
		return
	}
	objs, ok := c.m.tenants()
	if !ok {
		return // not synced, or not leading: another replica reports
	}
	ready, notReady := tenantsByReadiness(objs)
	ch <- prom.MustNewConstMetric(c.m.tenantsDesc, prom.GaugeValue, float64(ready), "true")
	ch <- prom.MustNewConstMetric(c.m.tenantsDesc, prom.GaugeValue, float64(notReady), "false")
}

// endregion: gauge

// tenantsByReadiness counts Tenants whose Ready condition is True, and the
// others.
func tenantsByReadiness(objs []runtime.Object) (ready, notReady int) {
	for _, o := range objs {
		t, ok := o.(*tenancyv1alpha1.Tenant)
		if !ok {
			continue
		}
		if meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.ConditionReady) {
			ready++
		} else {
			notReady++
		}
	}
	return ready, notReady
}

// DriftRepaired implements handler.Metrics.
func (m *metrics) DriftRepaired(kind string) { m.drift.WithLabelValues(kind).Inc() }
