package operator

import (
	"fmt"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/operators/internal/observe"
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
	// crd puts the CA into the CRD's conversion webhook, at the same
	// rates.
	crd apiextensionsclient.Interface
	// lease reads, writes and watches the Lease, and nothing else.
	lease kubernetes.Interface
	// webhook asks the webhook's SubjectAccessReviews.
	webhook kubernetes.Interface
	// metrics asks the TokenReviews and SubjectAccessReviews of /metrics.
	metrics kubernetes.Interface
}

// webhookQPS and webhookBurst are the rate of the webhook's client: one
// review of the largest PodTerminator (every question,
// 1+validation.MaxNamespaces) fits in the burst; a flood is answered 20
// questions a second, and the reviews that cannot finish within their
// deadline are refused (webhook.Config). Leader election and /metrics use
// observe's rates.
const webhookQPS, webhookBurst = 20, 1 + validation.MaxNamespaces

func newClients(cfg *rest.Config) (clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("could not create the Kubernetes client: %w", err)
	}
	chaos, err := versioned.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("could not create the chaos client: %w", err)
	}
	crd, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("could not create the CRD client: %w", err)
	}
	c := clients{kube: kube, chaos: chaos, crd: crd}
	for _, own := range []struct {
		into  *kubernetes.Interface
		qps   float32
		burst int
		what  string
	}{
		{&c.lease, observe.LeaseQPS, observe.LeaseBurst, "leader election"},
		{&c.webhook, webhookQPS, webhookBurst, "the webhook"},
		{&c.metrics, observe.MetricsQPS, observe.MetricsBurst, "the metrics' reviews"},
	} {
		if *own.into, err = kubernetes.NewForConfig(observe.OwnLimiter(cfg, own.qps, own.burst)); err != nil {
			return clients{}, fmt.Errorf("could not create the Kubernetes client of %s: %w", own.what, err)
		}
	}
	return c, nil
}
