package certs

import (
	"errors"
	"fmt"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/log"
)

// ErrInvalidOptions is wrapped by the error NewRotator returns when its
// Options are incomplete or inconsistent.
var ErrInvalidOptions = errors.New("invalid options")

// Defaults of Options.
const (
	defaultValidity         = 365 * 24 * time.Hour
	defaultSyncInterval     = time.Minute
	defaultPropagationDelay = time.Minute
)

// Options configures a Rotator.
type Options struct {
	// Client talks to the API server. Required.
	Client kubernetes.Interface
	// Namespace of the Secret the certificate is kept in, usually the
	// operator's own namespace. Required.
	Namespace string
	// SecretName names the Secret (type kubernetes.io/tls, keys tls.crt,
	// tls.key and ca.crt) the certificate is kept in. Required.
	SecretName string
	// Hosts are the DNS names and IP addresses the serving certificate
	// covers; an entry that parses as an IP address becomes an IP SAN, e.g.
	// "example-webhook.kooper-example.svc" or "127.0.0.1". The first
	// entry is also the certificate's common name. Required.
	Hosts []string
	// WebhookConfigName names the ValidatingWebhookConfiguration whose every
	// webhook gets the CA as clientConfig.caBundle. Default empty: no
	// injection.
	WebhookConfigName string
	// CRDClient and CRDName name a CustomResourceDefinition whose
	// conversion webhook gets the CA as its caBundle too, when its
	// conversion is by webhook. Default empty: no injection.
	CRDClient apiextensionsclient.Interface
	CRDName   string
	// Validity is the lifetime of a generated CA and serving certificate;
	// the next one is prepared once two thirds of it have passed. Default
	// 365 days.
	Validity time.Duration
	// SyncInterval is how often Run reads the Secret again: to serve the
	// certificate another replica promoted, and to take the next rotation
	// step when it is due. Default 1 minute.
	SyncInterval time.Duration
	// PropagationDelay is how long a new CA stays in the webhook
	// configuration before a certificate it signed is served: the time
	// every API server needs to see the configuration change. Default 1
	// minute.
	PropagationDelay time.Duration
	// Logger receives Run's errors, which it retries. Default log.Noop.
	Logger log.Logger
	// Now tells the time, to check and issue certificates. Default time.Now.
	Now func() time.Time
}

// defaults fills in the optional fields left empty.
func (o *Options) defaults() {
	if o.Validity == 0 {
		o.Validity = defaultValidity
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = defaultSyncInterval
	}
	if o.PropagationDelay == 0 {
		o.PropagationDelay = defaultPropagationDelay
	}
	if o.Logger == nil {
		o.Logger = log.Noop
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// validate reports the first required field missing or value out of range.
func (o Options) validate() error {
	switch {
	case o.Client == nil:
		return fmt.Errorf("%w: client is required", ErrInvalidOptions)
	case o.Namespace == "":
		return fmt.Errorf("%w: namespace is required", ErrInvalidOptions)
	case o.SecretName == "":
		return fmt.Errorf("%w: secret name is required", ErrInvalidOptions)
	case len(o.Hosts) == 0:
		return fmt.Errorf("%w: at least one host is required", ErrInvalidOptions)
	case o.CRDName != "" && o.CRDClient == nil:
		return fmt.Errorf("%w: CRD %s needs a CRD client", ErrInvalidOptions, o.CRDName)
	case o.Validity < 0:
		return fmt.Errorf("%w: validity %s is negative", ErrInvalidOptions, o.Validity)
	case o.SyncInterval < 0:
		return fmt.Errorf("%w: sync interval %s is negative", ErrInvalidOptions, o.SyncInterval)
	case o.PropagationDelay < 0:
		return fmt.Errorf("%w: propagation delay %s is negative", ErrInvalidOptions, o.PropagationDelay)
	case o.PropagationDelay+3*o.SyncInterval >= o.Validity/3:
		// From the time a renewal is due, one interval to stage the next
		// certificate, the delay, one interval to promote it and one for
		// the other replicas to serve it: all before the old one expires.
		return fmt.Errorf("%w: propagation delay %s plus 3 sync intervals of %s leave no time to rotate within the last third of validity %s",
			ErrInvalidOptions, o.PropagationDelay, o.SyncInterval, o.Validity)
	}
	for i, h := range o.Hosts {
		if h == "" {
			return fmt.Errorf("%w: host %d is empty", ErrInvalidOptions, i)
		}
	}
	return nil
}
