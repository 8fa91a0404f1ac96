package certs

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
)

// ErrInvalidOptions is wrapped by the error Ensure returns when its Options
// are incomplete or inconsistent.
var ErrInvalidOptions = errors.New("invalid options")

// defaultValidity is the lifetime of a generated CA and serving certificate.
const defaultValidity = 365 * 24 * time.Hour

// Options configures Ensure.
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
	// "pod-terminator-webhook.kooper-system.svc" or "127.0.0.1". The first
	// entry is also the certificate's common name. Required.
	Hosts []string
	// WebhookConfigName names the ValidatingWebhookConfiguration whose every
	// webhook gets the CA as clientConfig.caBundle. Default empty: no
	// injection.
	WebhookConfigName string
	// Validity is the lifetime of a generated CA and serving certificate.
	// Default 365 days.
	Validity time.Duration
	// Now tells the time, to check and issue certificates. Default time.Now.
	Now func() time.Time
}

// defaults fills in the optional fields left empty.
func (o *Options) defaults() {
	if o.Validity == 0 {
		o.Validity = defaultValidity
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
	case o.Validity < 0:
		return fmt.Errorf("%w: validity %s is negative", ErrInvalidOptions, o.Validity)
	}
	for i, h := range o.Hosts {
		if h == "" {
			return fmt.Errorf("%w: host %d is empty", ErrInvalidOptions, i)
		}
	}
	return nil
}
