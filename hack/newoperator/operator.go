package main

import "strings"

// The operator's internal/operator: Config, and Run, which wires the
// controller and its sources, leader election, metrics and health
// endpoints.

func operatorGo(op operator) *goFile {
	f := newGoFile(op, "operator")
	f.doc = `Package operator wires the $Name operator: the $Kind controller`
	if len(op.Owns) > 0 {
		f.doc += `, with its
handler (internal/handler) and a source for each kind a $Kind owns
(` + strings.Join(knownNames(op.Owns), ", ") + `);`
	} else {
		f.doc += ` and its
handler (internal/handler),`
	}
	f.doc += ` Events, metrics, health endpoints and leader
election. cmd/ turns flags into a Config and calls Run; the integration
tests call Run the same way against a local control plane.`
	if len(op.Owns) > 0 {
		f.doc += `

The domain logic runs in the $Kind controller's workers, one worker per
$Kind at a time. Each owned kind is a source of that controller
(handler.Sources, given to controller.New): a cache of the objects labelled
as the operator's, ` + sourcesWhere(op) + `, with no queue or workers of its own, whose changes and deletions queue
the child's $Kind. The controller starts handling once every source has
synced.`
	}

	f.code(`// Defaults, shared with cmd/ and the manifests in manifests/$Name.
const (
	DefaultName      = "$Name"
	// DefaultNamespace is the operator's own namespace
	// (manifests/rbac/$Name/namespace.yaml): the Lease lives there.
	DefaultNamespace = "$Namespace"
	// DefaultResync is how often every $Kind is handled again anyway, a
	// safety net: changes are seen as they happen.
	DefaultResync = 10 * time.Minute
` + childDefault(op) + `)

// ErrInvalidConfig is wrapped by Run's errors about its Config.
var ErrInvalidConfig = errors.New("invalid $Name config")

// Config configures the operator.
type Config struct {
	// REST reaches the API server, with the QPS and burst to use. Required.
	REST *rest.Config
	// Name is the operator's name: the field manager of what it writes, the
	// Events' source, the Lease's name, the controller's name. Default
	// DefaultName.
	Name string
	// Namespace holds the Lease. Default DefaultNamespace.
	Namespace string
`)
	if op.Cluster && len(op.Owns) > 0 {
		f.code(`	// ChildNamespace holds the children of every $Kind; the operator's
	// RBAC lets it write them there only
	// (manifests/rbac/$Name/children.yaml). Default
	// DefaultChildNamespace.
	ChildNamespace string
`)
	}
	if op.servesNamespaces() {
		f.code(`	// ServedNamespaces are the namespaces whose $Plural get children:
	// the operator reads and writes children there only, with a Role in
	// each (manifests/rbac/$Name/children.yaml). Default
	// DefaultServedNamespaces.
	ServedNamespaces []string
`)
	}
	f.code(`	// Resync is the $Kind controller's resync interval. Default
	// DefaultResync.
	Resync time.Duration
	// HTTPAddr serves /healthz, /readyz and, without SecureMetricsAddr,
	// /metrics. Empty: not served.
	HTTPAddr string
	// SecureMetricsAddr, if set, serves /metrics over HTTPS on this address
	// instead of HTTPAddr, only to the clients the API server lets get it,
	// asked as the operator's account (system:auth-delegator;
	// health.SecureMetrics). Requires HTTPAddr.
	SecureMetricsAddr string
	// EnableProfiling also serves /debug/pprof/ on HTTPAddr.
	EnableProfiling bool
	// DisableLeaderElection runs the controller without holding the Lease:
	// for a single replica only.
	DisableLeaderElection bool
	// TracerProvider, if set, traces each handling and the API calls it
	// makes (kooper/tracing). Default: no tracing.
	TracerProvider trace.TracerProvider
	// Logger receives the operator's logs. Default log.Noop.
	Logger log.Logger
	// Registry receives the metrics. Default: a new registry.
	Registry *prom.Registry
	// +kooper:scaffold:config (make new-version adds the conversion webhook's settings)
}

func (c *Config) defaults() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
`)
	if op.Cluster && len(op.Owns) > 0 {
		f.code(`	if c.ChildNamespace == "" {
		c.ChildNamespace = DefaultChildNamespace
	}
`)
	}
	if op.servesNamespaces() {
		f.code(`	if len(c.ServedNamespaces) == 0 {
		c.ServedNamespaces = []string{DefaultServedNamespaces}
	}
`)
	}
	f.code(`	if c.Resync <= 0 {
		c.Resync = DefaultResync
	}
	if c.Logger == nil {
		c.Logger = log.Noop
	}
	if c.Registry == nil {
		c.Registry = prom.NewRegistry()
	}
}

// A $Kind whose handling fails (a permission missing, say) is retried at
// least this often, for about the resync interval: fixing the cause heals it
// within seconds.
const (
	retryMaxDelay = 15 * time.Second
	maxRetries    = 40
)

// Run runs the operator until ctx is done, then stops everything it started
// and returns. It returns an error if anything fails to start, or
// leaderelection.ErrLeaseLost if the replica lost the Lease: exit, and be
// restarted as a standby.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	if cfg.REST == nil {
		return fmt.Errorf("%w: a REST config is required", ErrInvalidConfig)
	}
	if cfg.SecureMetricsAddr != "" && cfg.HTTPAddr == "" {
		return fmt.Errorf("%w: SecureMetricsAddr needs HTTPAddr, which serves /healthz and /readyz", ErrInvalidConfig)
	}
` + servedCheck(op) + `	obs, err := observe.New(cfg.REST, cfg.Registry, cfg.TracerProvider)
	if err != nil {
		return err
	}
	traced, recorder := obs.Middlewares, obs.Recorder
	kube, err := kubernetes.NewForConfig(obs.REST)
	if err != nil {
		return fmt.Errorf("could not create the Kubernetes client: %w", err)
	}
	client, err := versioned.NewForConfig(obs.REST)
	if err != nil {
		return fmt.Errorf("could not create the $Group client: %w", err)
	}
	// Leader election and the metrics' reviews get rate limiters of their
	// own: no burst of the controller's delays a Lease renewal.
	lease, err := kubernetes.NewForConfig(observe.OwnLimiter(obs.REST, observe.LeaseQPS, observe.LeaseBurst))
	if err != nil {
		return fmt.Errorf("could not create the Kubernetes client of leader election: %w", err)
	}
	reviews, err := kubernetes.NewForConfig(observe.OwnLimiter(obs.REST, observe.MetricsQPS, observe.MetricsBurst))
	if err != nil {
		return fmt.Errorf("could not create the Kubernetes client of the metrics' reviews: %w", err)
	}

	// Events about $Plural: the scheme names their kind.
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), $Alias.AddToScheme(scheme)); err != nil {
		return fmt.Errorf("could not build the scheme: %w", err)
	}
	events, err := event.New(event.Config{Client: kube, Component: cfg.Name, Scheme: scheme})
	if err != nil {
		return err
	}
	// Once the controller has drained, write the Events still queued.
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		events.Shutdown(ctx)
	}()

	h := &handler.Handler{
		Client:       client,
`)
	if len(op.Owns) > 0 {
		f.code("\t\tKube:         kube,\n")
	}
	if op.Cluster && len(op.Owns) > 0 {
		f.code("\t\tChildNamespace: cfg.ChildNamespace,\n")
	}
	if op.servesNamespaces() {
		f.code("\t\tServedNamespaces: cfg.ServedNamespaces,\n")
	}
	list := "client.$GroupGoV1alpha1().$Plural()"
	if !op.Cluster {
		list = `client.$GroupGoV1alpha1().$Plural("") // every namespace`
	}
	f.code(`		FieldManager: cfg.Name,
		Events:       events,
	}
`)
	sourcesArg := "" // the primary controller's sources, if any (controller.New)
	if len(op.Owns) > 0 && op.Cluster {
		f.code(`	sources := h.Sources(cfg.ChildNamespace) // the operator may list children there only
`)
		sourcesArg = ", sources..."
	} else if len(op.Owns) > 0 {
		f.code(`	var sources []controller.Source // in each served namespace: the operator may list children there only
	for _, ns := range cfg.ServedNamespaces {
		sources = append(sources, h.Sources(ns)...)
	}
`)
		sourcesArg = ", sources..."
	}
	f.code(`
	crs := ` + list + `
	primary, err := controller.New(controller.Config{
		Name:            cfg.Name,
		Handler:         controller.Chain(h.New(), traced...),
		Retriever:       controller.NewRetriever(crs.List, crs.Watch),
		ResyncInterval:  cfg.Resync,
		RetryMaxDelay:   retryMaxDelay,
		MaxRetries:      maxRetries,
		Logger:          cfg.Logger,
		MetricsRecorder: recorder,
	}` + sourcesArg + `)
	if err != nil {
		return err
	}
`)
	f.code(`
	// The controller runs while this replica holds the Lease; a standby
	// keeps its caches warm.
	runner, err := leaderelection.New(leaderelection.Config{
		Disabled:  cfg.DisableLeaderElection,
		Name:      cfg.Name,
		Namespace: cfg.Namespace,
		Client:    lease.CoordinationV1(),
		Logger:    cfg.Logger,
		Recorder:  recorder,
	}, primary)
	if err != nil {
		return err
	}
	ready := runner.Ready
	// +kooper:scaffold:serve (make new-version serves the conversion webhook here)
	if cfg.HTTPAddr != "" {
		var secureMetrics *health.SecureMetrics
		if cfg.SecureMetricsAddr != "" {
			secureMetrics = &health.SecureMetrics{Addr: cfg.SecureMetricsAddr, TokenReviews: reviews.AuthenticationV1(), SubjectAccessReviews: reviews.AuthorizationV1()}
		}
		srv, err := health.Start(health.Config{
			Addr: cfg.HTTPAddr, Gatherer: cfg.Registry, EnableProfiling: cfg.EnableProfiling,
			Ready: ready, SecureMetrics: secureMetrics, Logger: cfg.Logger,
		})
		if err != nil {
			return err
		}
		defer srv.Stop()
		cfg.Logger.Info("serving metrics and health", "addr", srv.Addr(), "secureMetricsAddr", srv.SecureAddr())
	}

`)
	if len(op.Owns) > 0 {
		f.code(`	cfg.Logger.Info("$Name operator starting", "sources", len(sources), "leaderElection", !cfg.DisableLeaderElection)
`)
	} else {
		f.code(`	cfg.Logger.Info("$Name operator starting", "leaderElection", !cfg.DisableLeaderElection)
`)
	}
	f.code(`	return runner.Run(ctx)
}
`)
	return f
}

// sourcesWhere says where the sources watch the children, for the package
// doc.
func sourcesWhere(op operator) string {
	if op.Cluster {
		return "one per kind, in the\nchildren's namespace (the operator may list them there only)"
	}
	return "one per kind and\nserved namespace (the operator may list children there only)"
}

// childDefault declares DefaultChildNamespace, for a cluster-scoped kind
// owning others, or DefaultServedNamespaces, for a namespaced one.
func childDefault(op operator) string {
	if op.servesNamespaces() {
		return `	// DefaultServedNamespaces is the namespace whose $Plural get children
	// unless told otherwise (manifests/rbac/$Name/children.yaml gives
	// the operator a Role there).
	DefaultServedNamespaces = "` + servedNamespace + `"
`
	}
	if !op.Cluster || len(op.Owns) == 0 {
		return ""
	}
	return `	// DefaultChildNamespace holds the children of every $Kind: a namespace
	// of their own (manifests/rbac/$Name/children_namespace.yaml), so that
	// the operator may write there and not where other workloads live.
	DefaultChildNamespace = "` + op.childNamespace() + `"
`
}

// servedCheck is Run's check of the served namespaces: "" would be every
// namespace.
func servedCheck(op operator) string {
	if !op.servesNamespaces() {
		return ""
	}
	return `	for _, ns := range cfg.ServedNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("%w: served namespace %q: %s", ErrInvalidConfig, ns, strings.Join(errs, "; "))
		}
	}
`
}
