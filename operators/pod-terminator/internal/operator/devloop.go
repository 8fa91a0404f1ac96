package operator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kooperkit/kooper/operators/internal/devloop"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

// unregisterTimeout bounds the deletion of the webhook's registration when
// Run returns.
const unregisterTimeout = 10 * time.Second

// registerWebhook registers the webhook served at addr with a URL and the
// CA of Webhook.CertDir, for an API server that no Service leads here
// (Webhook.Register), and returns what deletes the registration again:
// call it before the server stops. A failed deletion is logged: the next
// run replaces what it left.
func registerWebhook(ctx context.Context, cfg Config, cs clients, addr string) (unregister func(), _ error) {
	caFile := filepath.Join(cfg.Webhook.CertDir, devloop.CAFile)
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("could not read the webhook's CA bundle %s: %w", caFile, err)
	}
	url := devloop.URL(addr, webhook.Path)
	vwc := webhook.Registration(cfg.Webhook.ConfigName, admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca})
	remove, err := devloop.Register(ctx, cs.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(), vwc)
	if err != nil {
		return nil, err
	}
	cfg.Logger.Info("registered the admission webhook", "config", cfg.Webhook.ConfigName, "url", url)
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unregisterTimeout)
		defer cancel()
		if err := remove(ctx); err != nil {
			cfg.Logger.Warn("could not unregister the admission webhook", "err", err)
			return
		}
		cfg.Logger.Info("unregistered the admission webhook", "config", cfg.Webhook.ConfigName)
	}, nil
}
