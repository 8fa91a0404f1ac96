// Package operator wires the pod-terminator together: clients, the
// PodTerminator controller and its handler, Events, metrics, the health and
// metrics endpoints, the admission webhook and leader election. cmd/ turns
// flags into a Config and calls Run; tests call Run the same way against a
// local control plane.
package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/event"
	"github.com/kooperkit/kooper/kooper/health"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/certs"
	"github.com/kooperkit/kooper/operators/internal/conversion"
	"github.com/kooperkit/kooper/operators/internal/devloop"
	"github.com/kooperkit/kooper/operators/internal/observe"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/handler"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/kube"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

// Defaults, shared with cmd/ and the manifests in manifests/pod-terminator.
const (
	DefaultName              = "pod-terminator"
	DefaultNamespace         = "kooper-pod-terminator"
	DefaultWebhookService    = "pod-terminator-webhook"
	DefaultWebhookSecret     = "pod-terminator-webhook-tls"
	DefaultWebhookConfigName = "kooper-pod-terminator"
)

// DefaultPodLabels are the labels of the operator's own pods in the
// Deployment manifest.
var DefaultPodLabels = map[string]string{"app.kubernetes.io/name": "pod-terminator"}

// ErrInvalidConfig is wrapped by Run's errors about its Config.
var ErrInvalidConfig = errors.New("invalid pod-terminator config")

// Config configures the operator.
type Config struct {
	// REST reaches the API server, with the QPS and burst (or RateLimiter)
	// of the controller's clients. Required. Leader election, the webhook's
	// access checks and the metrics' token reviews have clients and rate
	// limits of their own (clients.go), so that none waits behind another.
	REST *rest.Config
	// Name is the operator's name: the Events' source, the Lease's name,
	// the controller's name in logs and metrics. Default DefaultName.
	Name string
	// Namespace is the operator's own: it holds the Lease and the webhook's
	// certificate Secret, and no PodTerminator may target it. Default
	// DefaultNamespace.
	Namespace string
	// ProtectedNamespaces are more namespaces no PodTerminator may target
	// (the webhook refuses them, the handler never terminates pods there),
	// besides kube-system, kube-public, kube-node-lease and Namespace.
	// Default: none.
	ProtectedNamespaces []string
	// PodLabels are the labels of the operator's pods: a PodTerminator
	// selecting them is refused. Default DefaultPodLabels.
	PodLabels map[string]string

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
	// DisableLeaderElection runs the controller without holding the Lease:
	// for a single replica only.
	DisableLeaderElection bool
	// LeaseDuration, RenewDeadline and RetryPeriod are leader election's
	// timings (leaderelection.Config). Zero: its defaults, 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// DryRunAll makes every PodTerminator a dry run.
	DryRunAll bool
	// Webhook configures the admission webhook server.
	Webhook Webhook

	// TracerProvider, if set, traces each handling and the API calls it
	// makes (kooper/tracing). Default: no tracing.
	TracerProvider trace.TracerProvider
	// Logger receives the operator's logs. Default log.Noop.
	Logger log.Logger
	// Registry receives the metrics. Default: a new registry.
	Registry *prom.Registry
}

// Webhook configures the admission webhook server. It runs in every replica,
// leader or not: the Service spreads the API server's calls over them.
type Webhook struct {
	// Addr is the HTTPS address, e.g. ":9443". Empty: no webhook server.
	Addr string
	// CertDir holds tls.crt and tls.key, e.g. a cert-manager Secret mounted
	// as files; they are reloaded when they change. Empty: a self-signed
	// certificate kept in the Secret SecretName, whose CA is injected into
	// the ValidatingWebhookConfiguration ConfigName.
	CertDir string
	// Register makes Run register the webhook itself, for an API server
	// that no Service leads to this process: the dev loop, where CertDir
	// is the directory make devcluster writes next to its kubeconfig
	// (operators/internal/devloop). Run then serves on a loopback address
	// (an Addr without host gets 127.0.0.1), creates or replaces the
	// ValidatingWebhookConfiguration ConfigName with a URL to it and the CA
	// bundle CertDir/ca.crt, and deletes it before it returns. Requires
	// CertDir. Default false: the manifests register the webhook, behind a
	// Service.
	Register bool
	// Hosts the self-signed certificate covers. Default the Service's name
	// "<DefaultWebhookService>.<Namespace>.svc".
	Hosts []string
	// SecretName holds the self-signed certificate. Default
	// DefaultWebhookSecret.
	SecretName string
	// ConfigName is the ValidatingWebhookConfiguration that gets the
	// self-signed CA. Default DefaultWebhookConfigName.
	ConfigName string
	// CertValidity is the lifetime of a self-signed certificate; the next
	// one is prepared after two thirds of it. Default 365 days.
	CertValidity time.Duration
	// CertSyncInterval is how often each replica reads the Secret again,
	// to serve a renewed certificate and renew it when due. Default 1
	// minute.
	CertSyncInterval time.Duration
	// CertPropagationDelay is how long a new CA is trusted by the webhook
	// configuration before a certificate it signed is served. Default 1
	// minute.
	CertPropagationDelay time.Duration
}

func (c *Config) defaults() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.PodLabels == nil {
		c.PodLabels = DefaultPodLabels
	}
	if c.Logger == nil {
		c.Logger = log.Noop
	}
	if c.Registry == nil {
		c.Registry = prom.NewRegistry()
	}
	w := &c.Webhook
	if w.Register && w.Addr != "" {
		// In the dev loop the API server calls the webhook on this
		// machine, and nothing else should reach it; validate refuses
		// any other host.
		if addr, err := devloop.LoopbackAddr(w.Addr); err == nil {
			w.Addr = addr
		}
	}
	if len(w.Hosts) == 0 {
		w.Hosts = []string{DefaultWebhookService + "." + c.Namespace + ".svc"}
	}
	if w.SecretName == "" {
		w.SecretName = DefaultWebhookSecret
	}
	if w.ConfigName == "" {
		w.ConfigName = DefaultWebhookConfigName
	}
}

// validate reports the first setting missing or at odds with another.
func (c Config) validate() error {
	if c.REST == nil {
		return fmt.Errorf("%w: a REST config is required", ErrInvalidConfig)
	}
	if c.SecureMetricsAddr != "" && c.HTTPAddr == "" {
		return fmt.Errorf("%w: SecureMetricsAddr needs HTTPAddr, which serves /healthz and /readyz", ErrInvalidConfig)
	}
	if w := c.Webhook; w.Addr != "" && w.Register {
		if w.CertDir == "" {
			return fmt.Errorf("%w: Webhook.Register needs CertDir, with the CA the webhook's certificate is checked against", ErrInvalidConfig)
		}
		if _, err := devloop.LoopbackAddr(w.Addr); err != nil {
			return fmt.Errorf("%w: Webhook.Register: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

// Run runs the operator until ctx is done, then stops everything it started
// and returns. It returns an error if anything fails to start, or
// leaderelection.ErrLeaseLost if the replica lost the Lease: exit, and be
// restarted as a standby.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	metrics := newMetrics()
	obs, err := observe.New(cfg.REST, cfg.Registry, cfg.TracerProvider, metrics.collectors()...)
	if err != nil {
		return err
	}
	traced, recorder := obs.Middlewares, obs.Recorder
	cs, err := newClients(obs.REST)
	if err != nil {
		return err
	}
	kubeClient, chaosClient := cs.kube, cs.chaos
	logger := cfg.Logger

	// region: events
	// Events about PodTerminators, one per period: allow one per second per
	// object, and never fold them, so each keeps the pods it names.
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), chaosv1beta1.AddToScheme(scheme)); err != nil {
		return fmt.Errorf("could not build the scheme: %w", err)
	}
	events, err := event.New(event.Config{
		Client: kubeClient, Component: cfg.Name, Scheme: scheme,
		Correlator: record.CorrelatorOptions{BurstSize: 60, QPS: 1, MaxEvents: 1 << 30},
	})
	if err != nil {
		return err
	}
	// Once the controller has drained, write the Events still queued (a
	// period just finished names its pods), within a shutdown budget of its
	// own (2s): a replica that stops cleanly loses none.
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		events.Shutdown(ctx)
	}()
	// endregion: events

	// region: controller
	rules := validation.Rules{Namespace: cfg.Namespace, ProtectedNamespaces: cfg.ProtectedNamespaces, PodLabels: cfg.PodLabels}
	pods := kube.Pods{Client: kubeClient}
	h := &handler.Handler{
		Client:     chaosClient,
		Terminator: &chaos.Terminator{Pods: pods, Deleter: pods},
		Events:     events,
		Metrics:    metrics,
		Rules:      rules,
		DryRunAll:  cfg.DryRunAll,
	}
	terminators := chaosClient.ChaosV1beta1().PodTerminators()
	ctrl, err := controller.New(controller.Config{
		Name:            cfg.Name,
		Handler:         controller.Chain(h.New(), traced...),
		Retriever:       controller.NewRetriever(terminators.List, terminators.Watch),
		Logger:          logger,
		MetricsRecorder: recorder,
	})
	if err != nil {
		return err
	}
	// endregion: controller

	// region: leaderelection
	// The controller runs only while this replica holds the Lease, or at
	// once with leader election disabled (a single replica). The Lease has
	// a client of its own: no other request waits in front of a renewal.
	runner, err := leaderelection.New(leaderelection.Config{
		Disabled:      cfg.DisableLeaderElection,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Name:      cfg.Name,
		Namespace: cfg.Namespace,
		Client:    cs.lease.CoordinationV1(),
		Logger:    logger,
		Recorder:  recorder,
	}, ctrl)
	if err != nil {
		return err
	}
	// endregion: leaderelection

	// Servers run until the controller returns, then are shut down.
	var servers []*health.Server
	defer func() {
		for _, s := range servers {
			s.Stop()
		}
	}()
	if cfg.Webhook.Addr != "" {
		s, stopCerts, err := startWebhook(ctx, cfg, cs, rules)
		if err != nil {
			return err
		}
		defer stopCerts()
		servers = append(servers, s)
		logger.Info("serving the admission and conversion webhooks", "addr", s.Addr(), "paths", []string{webhook.Path, conversion.Path})
		if cfg.Webhook.Register {
			// Unregistered before the server stops: the API server
			// never calls a webhook that is gone.
			unregister, err := registerWebhook(ctx, cfg, cs, s.Addr())
			if err != nil {
				return err
			}
			defer unregister()
			restore, err := conversion.Register(ctx, cs.crd, webhook.CRDName, cfg.Webhook.CertDir, s.Addr(), cfg.Logger)
			if err != nil {
				return err
			}
			defer restore()
		}
	}
	// With SecureMetricsAddr, /metrics is served over HTTPS to the clients
	// the API server lets get it, asked with a client of its own.
	var secureMetrics *health.SecureMetrics
	if cfg.SecureMetricsAddr != "" {
		secureMetrics = &health.SecureMetrics{Addr: cfg.SecureMetricsAddr, TokenReviews: cs.metrics.AuthenticationV1(), SubjectAccessReviews: cs.metrics.AuthorizationV1()}
	}
	// region: readiness
	if cfg.HTTPAddr != "" {
		// The runner says whether this replica leads, stands by, or runs
		// without leader election, and whether its controller has synced.
		ready := runner.Ready
		if cfg.Webhook.Addr != "" {
			// One that serves the webhooks is ready, synced or not: its
			// own controller's list may need its conversion.
			ready = conversion.ReadyWhileServing(ready)
		}
		s, err := health.Start(health.Config{Addr: cfg.HTTPAddr, Gatherer: cfg.Registry, EnableProfiling: cfg.EnableProfiling, Ready: ready, SecureMetrics: secureMetrics, Logger: logger})
		if err != nil {
			return err
		}
		servers = append(servers, s)
		logger.Info("serving metrics and health", "addr", s.Addr(), "secureMetricsAddr", s.SecureAddr())
	}
	// endregion: readiness

	logger.Info("pod-terminator starting", "namespace", cfg.Namespace, "leaderElection", !cfg.DisableLeaderElection, "dryRunAll", cfg.DryRunAll)
	return runner.Run(ctx)
}

// region: webhook

// startWebhook serves the webhook over TLS, with a certificate from files or
// a self-signed one shared through a Secret and rotated in the background
// until stop is called.
func startWebhook(ctx context.Context, cfg Config, cs clients, rules validation.Rules) (*health.Server, func(), error) {
	wh, err := webhook.New(webhook.Config{
		Rules:  rules,
		Access: webhook.SubjectAccessReviews{Client: cs.webhook.AuthorizationV1()},
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, nil, err
	}
	tlsConfig, stop, err := certs.Serving(ctx, cfg.Webhook.CertDir, certs.Options{
		Client:            cs.kube,
		Namespace:         cfg.Namespace,
		SecretName:        cfg.Webhook.SecretName,
		Hosts:             cfg.Webhook.Hosts,
		WebhookConfigName: cfg.Webhook.ConfigName,
		CRDClient:         cs.crd,
		CRDName:           webhook.CRDName,
		Validity:          cfg.Webhook.CertValidity,
		SyncInterval:      cfg.Webhook.CertSyncInterval,
		PropagationDelay:  cfg.Webhook.CertPropagationDelay,
		Logger:            cfg.Logger,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("could not set up the webhook's certificate: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(webhook.Path, wh)
	mux.Handle(conversion.Path, conversion.Handler(podTerminators, cfg.Logger))
	s, err := health.ServeTLS(cfg.Webhook.Addr, mux, tlsConfig, cfg.Logger)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return s, stop, nil
}

// podTerminators converts PodTerminators between the versions served:
// v1alpha1, deprecated, and v1beta1, stored.
var podTerminators = conversion.Between[chaosv1alpha1.PodTerminator, chaosv1beta1.PodTerminator](
	chaosv1alpha1.SchemeGroupVersion, chaosv1beta1.SchemeGroupVersion)

// endregion: webhook

// region: metrics

// metrics are the operator's own metrics.
type metrics struct {
	terminated *prom.CounterVec
}

func newMetrics() *metrics {
	return &metrics{terminated: prom.NewCounterVec(prom.CounterOpts{
		Name: "kooper_pod_terminator_terminated_pods_total",
		Help: "Pods terminated (dry_run=\"false\") or chosen in a dry run (dry_run=\"true\"), by PodTerminator.",
	}, []string{"terminator", "dry_run"})}
}

func (m *metrics) collectors() []prom.Collector { return []prom.Collector{m.terminated} }

// AddTerminated implements handler.Metrics.
func (m *metrics) AddTerminated(terminator string, dryRun bool, n int) {
	m.terminated.WithLabelValues(terminator, fmt.Sprint(dryRun)).Add(float64(n))
}

// Forget implements handler.Metrics: it deletes both dry_run series of a
// deleted PodTerminator.
func (m *metrics) Forget(terminator string) {
	m.terminated.DeletePartialMatch(prom.Labels{"terminator": terminator})
}

// endregion: metrics
