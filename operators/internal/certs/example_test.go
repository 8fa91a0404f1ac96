package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/operators/internal/certs"
)

// At startup, every replica gets the same serving certificate from the
// Secret, and the webhook configuration trusts its CA. Run keeps it
// rotating, and GetCertificate serves the latest.
func ExampleRotator() {
	ctx := context.Background()
	// In the operator: kubernetes.NewForConfig, and the webhook
	// configuration comes from the manifests.
	client := fake.NewClientset(&admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "example"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "widgets.admission.example.com"}},
	})

	rotator, err := certs.NewRotator(ctx, certs.Options{
		Client:            client,
		Namespace:         "kooper-example",
		SecretName:        "example-webhook-tls",
		Hosts:             []string{"example-webhook.kooper-example.svc"},
		WebhookConfigName: "example",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := &tls.Config{GetCertificate: rotator.GetCertificate, MinVersion: tls.VersionTLS12}
	// cfg goes to the webhook's http.Server.TLSConfig, and the operator
	// runs rotator.Run(ctx) until it stops.

	cert, err := cfg.GetCertificate(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	webhooks, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "example", metav1.GetOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("serving", cert.Leaf.DNSNames)
	fmt.Println("webhook trusts the ca:", bytes.Equal(webhooks.Webhooks[0].ClientConfig.CABundle, rotator.CABundle()))
	// Output:
	// serving [example-webhook.kooper-example.svc]
	// webhook trusts the ca: true
}

// With cert-manager, the Certificate's Secret is mounted as files; every
// handshake gets the current pair, reloaded when cert-manager rotates it.
func ExampleFileLoader() {
	loader, err := certs.NewFileLoader("/tls/tls.crt", "/tls/tls.key")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := &tls.Config{GetCertificate: loader.GetCertificate, MinVersion: tls.VersionTLS12}
	_ = cfg // cfg goes to the webhook's http.Server.TLSConfig.
}
