// Package operator wires the multi-resource operator: one controller for
// Tenants whose sources are the child kinds (Namespace, ResourceQuota,
// LimitRange, RoleBinding, NetworkPolicy), plus metrics, health endpoints
// and leader election. cmd/ turns flags into a Config and calls Run; tests
// call Run the same way against a local control plane.
//
// The domain logic runs in the Tenant controller's workers: one worker
// per Tenant at a time. Each child kind is a source of that controller
// (controller.Owns): a cache of its own whose changes and deletions queue
// the child's Tenant in the one queue, with no API call, and which the
// handler reads (the Tenant's namespace). The sources list and watch only
// the metadata of the objects labelled as managed by this operator and,
// for the namespaced kinds, named as that child is in every tenant's
// namespace; they never resync (the Tenant controller does). The Tenant
// controller starts handling once every source has synced.
//
// A tenant's admins can create objects in their namespace with any labels
// and annotations, and annotate the children they may edit: what the
// operator caches must not grow with that. The name selects at most one
// object per namespace and kind on the API server, whatever else carries
// the label, and the child retrievers keep of each object only what the
// operator reads (slim): no annotations, no managedFields.
package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
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
	"github.com/kooperkit/kooper/operators/internal/observe"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/handler"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// Defaults, shared with cmd/ and the manifests in manifests/multi-resource.
const (
	DefaultName      = "multi-resource"
	DefaultNamespace = "kooper-multi-resource"
	// DefaultResync is how often every Tenant is handled again anyway. The
	// child sources see drift as it happens; this is a safety net.
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
	// HTTPAddr serves /healthz, /readyz and, without SecureMetricsAddr,
	// /metrics. Empty: not served.
	HTTPAddr string
	// SecureMetricsAddr, if set, serves /metrics over HTTPS on this address
	// instead of HTTPAddr, only to clients the API server authenticates and
	// authorizes (get on the non-resource URL /metrics), reviewed as the
	// operator's own account: it needs the ClusterRole system:auth-delegator
	// (health.SecureMetrics). Requires HTTPAddr. Default: /metrics on
	// HTTPAddr, open to anyone who can reach it.
	SecureMetricsAddr string
	// EnableProfiling also serves /debug/pprof/ on HTTPAddr.
	EnableProfiling bool
	// DisableLeaderElection runs the controllers without holding the Lease:
	// for a single replica only.
	DisableLeaderElection bool
	// LeaseDuration, RenewDeadline and RetryPeriod are leader election's
	// timings (leaderelection.Config). Zero: its defaults, 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// TracerProvider, if set, traces each handling and the API calls it
	// makes (kooper/tracing). Default: no tracing.
	TracerProvider trace.TracerProvider
	// Logger receives the operator's logs. Default log.Noop.
	Logger log.Logger
	// Registry receives the metrics. Default: a new registry.
	Registry *prom.Registry
	// ChildObjects, if set, records the child objects the operator's
	// caches are given, as Registry is given the metrics: what the
	// operator keeps in memory can then be read (the integration tests
	// check it). Default nil.
	ChildObjects *ChildObjects
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

// Tenant controller retries: a Tenant whose children fail (a child kind the
// operator may no longer write, say) is retried at least this often, and
// for about as long as the resync interval, so that fixing the cause heals
// it within seconds.
const (
	tenantRetryMaxDelay = 15 * time.Second
	tenantMaxRetries    = 40
)

// Run runs the operator until ctx is done, then stops everything it started
// and returns. It returns an error if anything fails to start, or
// leaderelection.ErrLeaseLost if the replica lost the Lease.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	if cfg.REST == nil {
		return fmt.Errorf("%w: a REST config is required", ErrInvalidConfig)
	}
	if cfg.SecureMetricsAddr != "" && cfg.HTTPAddr == "" {
		return fmt.Errorf("%w: SecureMetricsAddr needs HTTPAddr, which serves /healthz and /readyz", ErrInvalidConfig)
	}
	obs, err := observe.New(cfg.REST, cfg.Registry, cfg.TracerProvider)
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
	// Leader election and the metrics' reviews get clients with rate
	// limiters of their own: a flood of tokens at /metrics, or the
	// controllers' own bursts, never delay a Lease renewal.
	lease, err := kubernetes.NewForConfig(observe.OwnLimiter(obs.REST, observe.LeaseQPS, observe.LeaseBurst))
	if err != nil {
		return fmt.Errorf("could not create the Kubernetes client of leader election: %w", err)
	}
	reviews, err := kubernetes.NewForConfig(observe.OwnLimiter(obs.REST, observe.MetricsQPS, observe.MetricsBurst))
	if err != nil {
		return fmt.Errorf("could not create the Kubernetes client of the metrics' reviews: %w", err)
	}
	// The child sources read only names, owners and resourceVersions:
	// they cache metadata only, a fraction of each object.
	md, err := metadata.NewForConfig(obs.REST)
	if err != nil {
		return fmt.Errorf("could not create the metadata client: %w", err)
	}

	// region: children
	// Every child kind is a source of the Tenant controller: a cache whose
	// changes and deletions queue the child's Tenant.
	c := &caches{}
	sources := make([]controller.Source, 0, len(children))
	for _, child := range children {
		owned := controller.Owns[*metav1.PartialObjectMetadata](managed(md, child, cfg.ChildObjects))
		if child.kind == tenant.KindNamespace {
			c.namespaces = owned
		}
		sources = append(sources, owned)
	}
	// endregion: children

	// region: primary
	drift := newDrift()
	h := &handler.Handler{Kube: kube, Tenancy: tenancy, FieldManager: cfg.Name, Cache: c, Metrics: drift}
	tenants := tenancy.TenancyV1alpha1().Tenants()
	primary, err := controller.New(controller.Config{
		Name:            cfg.Name,
		Handler:         controller.Chain(h.New(), traced...),
		Retriever:       controller.NewRetriever(tenants.List, tenants.Watch),
		ResyncInterval:  cfg.Resync,
		RetryMaxDelay:   tenantRetryMaxDelay,
		MaxRetries:      tenantMaxRetries,
		Logger:          cfg.Logger,
		MetricsRecorder: recorder,
	}, sources...)
	if err != nil {
		return err
	}
	c.tenants = primary
	// endregion: primary

	// region: leaderelection
	runner, err := leaderelection.New(leaderelection.Config{
		Disabled:      cfg.DisableLeaderElection,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Name:      cfg.Name,
		Namespace: cfg.Namespace,
		Client:    lease.CoordinationV1(),
		Logger:    cfg.Logger,
		Recorder:  recorder,
	}, primary)
	if err != nil {
		return err
	}
	// endregion: leaderelection
	// region: gauge-register
	// The operator's own metrics, once what they read exists. A warm
	// standby's cache is filled too: a standby does not report the gauge.
	leaderCache := func() ([]runtime.Object, bool) {
		if runner.Standby() {
			return nil, false
		}
		return primary.List()
	}
	for _, m := range []prom.Collector{drift.counter, tenantsCollector{list: leaderCache}} {
		if err := cfg.Registry.Register(m); err != nil {
			return fmt.Errorf("could not register metrics: %w", err)
		}
	}
	// endregion: gauge-register
	if cfg.HTTPAddr != "" {
		// With SecureMetricsAddr, /metrics is served over HTTPS to the
		// clients the API server lets get it, asked with the operator's own
		// client.
		var secureMetrics *health.SecureMetrics
		if cfg.SecureMetricsAddr != "" {
			secureMetrics = &health.SecureMetrics{Addr: cfg.SecureMetricsAddr, TokenReviews: reviews.AuthenticationV1(), SubjectAccessReviews: reviews.AuthorizationV1()}
		}
		srv, err := health.Start(health.Config{
			Addr: cfg.HTTPAddr, Gatherer: cfg.Registry, EnableProfiling: cfg.EnableProfiling,
			Ready: runner.Ready, SecureMetrics: secureMetrics, Logger: cfg.Logger,
		})
		if err != nil {
			return err
		}
		defer srv.Stop()
		cfg.Logger.Info("serving metrics and health", "addr", srv.Addr(), "secureMetricsAddr", srv.SecureAddr())
	}

	cfg.Logger.Info("multi-resource operator starting", "sources", len(sources), "leaderElection", !cfg.DisableLeaderElection)
	return runner.Run(ctx)
}

// caches is the handler's view of the controller's caches.
type caches struct {
	tenants    *controller.Controller
	namespaces *controller.Watched[*metav1.PartialObjectMetadata]
}

var _ handler.Cache = (*caches)(nil)

func (c *caches) Tenant(name string) (metav1.Object, bool) {
	obj, ok := c.tenants.Get(name)
	if !ok {
		return nil, false
	}
	m, err := meta.Accessor(obj)
	return m, err == nil
}

func (c *caches) Namespaces(t *tenancyv1alpha1.Tenant) []*metav1.PartialObjectMetadata {
	return c.namespaces.Of(t)
}

// region: managed

// child is a kind of object the operator makes for every Tenant.
type child struct {
	kind     string
	resource schema.GroupVersionResource
	// name is the object's name in every tenant's namespace; "" for the
	// namespace itself, named after its Tenant.
	name string
}

// children are the kinds the Tenant controller owns.
var children = []child{
	{tenant.KindNamespace, corev1.SchemeGroupVersion.WithResource("namespaces"), ""},
	{tenant.KindResourceQuota, corev1.SchemeGroupVersion.WithResource("resourcequotas"), tenant.QuotaName},
	{tenant.KindLimitRange, corev1.SchemeGroupVersion.WithResource("limitranges"), tenant.LimitRangeName},
	{tenant.KindRoleBinding, rbacv1.SchemeGroupVersion.WithResource("rolebindings"), tenant.RoleBindingName},
	{tenant.KindNetworkPolicy, networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), tenant.NetworkPolicyName},
}

// managed returns a retriever of the metadata of c's objects in every
// namespace, selected on the API server by selectors: only those can
// reach the cache, slimmed first. seen, if not nil, records them.
func managed(md metadata.Interface, c child, seen *ChildObjects) controller.Retriever {
	label, field := selectors(c)
	res := md.Resource(c.resource).Namespace("") // every namespace
	return controller.NewRetriever(
		func(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
			opts.LabelSelector, opts.FieldSelector = label, field
			list, err := res.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				list.Items[i] = *slim(&list.Items[i])
			}
			seen.listed(c.kind, list.Items)
			return list, nil
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector, opts.FieldSelector = label, field
			w, err := res.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return newSlimWatch(w, func(ev watch.Event) { seen.watched(c.kind, ev) }), nil
		})
}

// selectors returns the label and field selectors of c's list and watch.
// Anyone who may write objects in a namespace may label them as managed by
// this operator, a tenant's admins included: the label alone would let
// them fill the cache. A namespaced child also has its fixed name, which
// the field selector metadata.name (every resource supports it) requires:
// at most one object per namespace and kind, whatever tenants create. The
// API server authorizes such a list or watch as one of that name (a
// refusal reads `limitranges "tenant-limits" is forbidden`). Namespaces
// keep the label alone: their names only share a prefix, which no field
// selector matches, and tenants can neither create nor label namespaces
// (the admin ClusterRole only reads its own).
func selectors(c child) (label, field string) {
	label = labels.SelectorFromSet(labels.Set{tenant.ManagedByLabel: tenant.ManagedBy}).String()
	if c.name != "" {
		field = fields.OneTermEqualSelector("metadata.name", c.name).String()
	}
	return label, field
}

// endregion: managed

// drift counts the children restored after someone else changed or
// deleted them.
type drift struct{ counter *prom.CounterVec }

var _ handler.Metrics = drift{}

func newDrift() drift {
	d := drift{counter: prom.NewCounterVec(prom.CounterOpts{
		Name: "kooper_tenant_drift_repairs_total",
		Help: "Children of Tenants restored after someone else changed or deleted them, by kind.",
	}, []string{"kind"})}
	for _, kind := range []string{tenant.KindNamespace, tenant.KindResourceQuota, tenant.KindLimitRange, tenant.KindRoleBinding, tenant.KindNetworkPolicy} {
		d.counter.WithLabelValues(kind) // every series from the start, at 0
	}
	return d
}

// DriftRepaired implements handler.Metrics.
func (d drift) DriftRepaired(kind string) { d.counter.WithLabelValues(kind).Inc() }

const tenantsHelp = "Tenants by their Ready condition (false: False or Unknown), counted at scrape time in the Tenant controller's cache; only the replica running the controllers (the leader) reports it."

var tenantsDesc = prom.NewDesc("kooper_tenants", tenantsHelp, []string{"ready"}, nil)

// region: gauge

// tenantsCollector counts Tenants by readiness when scraped, from the
// cache (list is the Tenant controller's List): no API call, and nothing to
// keep in step as Tenants come and go.
type tenantsCollector struct {
	list func() ([]runtime.Object, bool)
}

func (c tenantsCollector) Describe(ch chan<- *prom.Desc) { ch <- tenantsDesc }

func (c tenantsCollector) Collect(ch chan<- prom.Metric) {
	objs, ok := c.list()
	if !ok {
		return // not synced, or not leading: another replica reports
	}
	ready, notReady := tenantsByReadiness(objs)
	ch <- prom.MustNewConstMetric(tenantsDesc, prom.GaugeValue, float64(ready), "true")
	ch <- prom.MustNewConstMetric(tenantsDesc, prom.GaugeValue, float64(notReady), "false")
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
