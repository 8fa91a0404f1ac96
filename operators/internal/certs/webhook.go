package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
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
			if newer(held, newest, now) {
				return nil // ours is stale
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

// injectConversionCABundle sets ca as the caBundle of the conversion
// webhook of the CustomResourceDefinition name, as injectCABundle does for
// the admission webhooks: only when it differs, never over a newer bundle,
// retrying conflicts. A CRD whose conversion is not by webhook is left
// alone.
func injectConversionCABundle(ctx context.Context, client apiextensionsclient.Interface, name string, ca []byte, now time.Time) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	newest := newestIssued(parseCAs(ca))
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("could not get customresourcedefinition %s: %w", name, err)
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			return nil
		}
		held := conv.Webhook.ClientConfig.CABundle
		if bytes.Equal(held, ca) || newer(held, newest, now) {
			return nil
		}
		conv.Webhook.ClientConfig.CABundle = ca
		if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("could not update customresourcedefinition %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("could not inject the conversion webhook's ca bundle: %w", err)
	}
	return nil
}

// newer reports whether the bundle held has a CA, not expired at now,
// issued after newest: a bundle newer than the one at hand.
func newer(held []byte, newest, now time.Time) bool {
	for _, c := range unexpired(parseCAs(held), now) {
		if c.NotBefore.After(newest) {
			return true
		}
	}
	return false
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
