package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// injectCABundle sets ca as the clientConfig.caBundle of every webhook of the
// ValidatingWebhookConfiguration name. It writes only when a webhook's
// caBundle differs, and retries when the configuration changed since read.
//
// It never writes over a newer bundle: when a caBundle holds a CA, not
// expired at now, issued after every CA of ca, the caller read the Secret
// before another replica changed it, and the newer bundle stays. (Every
// bundle the Secret holds keeps the newest CA, so a bundle that would drop
// one is stale.)
func injectCABundle(ctx context.Context, client kubernetes.Interface, name string, ca []byte, now time.Time) error {
	configs := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	newest := newestIssued(parseCAs(ca))
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := configs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("could not get validatingwebhookconfiguration %s: %w", name, err)
		}
		changed := false
		for i := range cfg.Webhooks {
			held := cfg.Webhooks[i].ClientConfig.CABundle
			if bytes.Equal(held, ca) {
				continue
			}
			for _, c := range unexpired(parseCAs(held), now) {
				if c.NotBefore.After(newest) {
					return nil // a newer bundle: ours is stale
				}
			}
			cfg.Webhooks[i].ClientConfig.CABundle = ca
			changed = true
		}
		if !changed {
			return nil
		}
		if _, err := configs.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
			// Wrapped with %w, a conflict is still seen, and retried, by
			// RetryOnConflict.
			return fmt.Errorf("could not update validatingwebhookconfiguration %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("could not inject ca bundle: %w", err)
	}
	return nil
}

// newestIssued returns the latest NotBefore of cas, zero with none.
func newestIssued(cas []*x509.Certificate) time.Time {
	var newest time.Time
	for _, c := range cas {
		if c.NotBefore.After(newest) {
			newest = c.NotBefore
		}
	}
	return newest
}
