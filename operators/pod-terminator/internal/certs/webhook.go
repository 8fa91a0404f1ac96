package certs

import (
	"bytes"
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// injectCABundle sets ca as the clientConfig.caBundle of every webhook of the
// ValidatingWebhookConfiguration name. It writes only when a webhook's
// caBundle differs, and retries when the configuration changed since read.
func injectCABundle(ctx context.Context, client kubernetes.Interface, name string, ca []byte) error {
	configs := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := configs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("could not get validatingwebhookconfiguration %s: %w", name, err)
		}
		changed := false
		for i := range cfg.Webhooks {
			if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, ca) {
				cfg.Webhooks[i].ClientConfig.CABundle = ca
				changed = true
			}
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
