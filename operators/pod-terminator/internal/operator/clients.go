package operator

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
)

// clients are the operator's API clients. Each clientset has a client-side
// rate limiter of its own, so that no caller waits behind another's
// requests: a flood of AdmissionReviews (each asking up to
// 1+validation.MaxNamespaces SubjectAccessReviews) or of bearer tokens at
// /metrics (each a TokenReview) uses up the webhook's or the metrics'
// limiter, never the one the Lease is renewed through. A replica that
// cannot renew within RenewDeadline stops leading and exits.
type clients struct {
	// kube and chaos serve the controller, its Events and the webhook's
	// certificate, at the QPS and burst of Config.REST (or with its
	// RateLimiter, shared by both).
	kube  kubernetes.Interface
	chaos versioned.Interface
	// lease reads, writes and watches the Lease, and nothing else.
	lease kubernetes.Interface
	// webhook asks the webhook's SubjectAccessReviews.
	webhook kubernetes.Interface
	// metrics asks the TokenReviews and SubjectAccessReviews of /metrics.
	metrics kubernetes.Interface
}

// The rates of the clients with a limiter of their own, in requests per
// second and burst.
const (
	// Leader election makes a Get and an Update per RetryPeriod (2s), and
	// a watch: client-go's default limits, never reached.
	leaseQPS, leaseBurst = 5, 10
	// The webhook: one review of the largest PodTerminator (every
	// question, 1+validation.MaxNamespaces) fits in the burst; a flood is
	// answered 20 questions a second, and the reviews that cannot finish
	// within their deadline are refused (webhook.Config).
	webhookQPS, webhookBurst = 20, 1 + validation.MaxNamespaces
	// /metrics: a TokenReview and a SubjectAccessReview per new token;
	// Prometheus's decisions are kept for a minute (health.SecureMetrics).
	metricsQPS, metricsBurst = 5, 10
)

func newClients(cfg *rest.Config) (clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("could not create the Kubernetes client: %w", err)
	}
	chaos, err := versioned.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("could not create the chaos client: %w", err)
	}
	c := clients{kube: kube, chaos: chaos}
	for _, own := range []struct {
		into  *kubernetes.Interface
		qps   float32
		burst int
		what  string
	}{
		{&c.lease, leaseQPS, leaseBurst, "leader election"},
		{&c.webhook, webhookQPS, webhookBurst, "the webhook"},
		{&c.metrics, metricsQPS, metricsBurst, "the metrics' reviews"},
	} {
		if *own.into, err = kubernetes.NewForConfig(ownLimiter(cfg, own.qps, own.burst)); err != nil {
			return clients{}, fmt.Errorf("could not create the Kubernetes client of %s: %w", own.what, err)
		}
	}
	return c, nil
}

// ownLimiter returns a copy of cfg from which kubernetes.NewForConfig makes
// a rate limiter of qps and burst for that clientset alone: it makes one
// only when the config carries none, and would otherwise share cfg's.
func ownLimiter(cfg *rest.Config, qps float32, burst int) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = nil
	c.QPS, c.Burst = qps, burst
	return c
}
