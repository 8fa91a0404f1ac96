package certs_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestNewRotatorInjectsCABundleOnlyWhenItDiffers(t *testing.T) {
	tests := []struct {
		name        string
		bundles     func(ca []byte) [][]byte
		conflicts   int
		wantUpdates int
	}{
		{
			name:    "every webhook already trusting the ca is not updated",
			bundles: func(ca []byte) [][]byte { return [][]byte{ca, ca} },
		},
		{
			name:        "one stale webhook updates the configuration",
			bundles:     func(ca []byte) [][]byte { return [][]byte{ca, []byte("stale")} },
			wantUpdates: 1,
		},
		{
			name:        "a conflicting update is retried",
			bundles:     func([]byte) [][]byte { return [][]byte{nil, nil} },
			conflicts:   2,
			wantUpdates: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := ensureSecret(t)
			ca := secret.Data["ca.crt"]
			client := fake.NewClientset(secret, webhookConfig(tt.bundles(ca)...))
			conflicts := tt.conflicts
			client.PrependReactor("update", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
				if conflicts == 0 {
					return false, nil, nil
				}
				conflicts--
				return true, nil, apierrors.NewConflict(admissionregistrationv1.Resource("validatingwebhookconfigurations"), configName, errors.New("modified"))
			})
			opts := options(client)
			opts.WebhookConfigName = configName

			_, gotCA, err := ensure(context.Background(), opts)
			if err != nil {
				t.Fatalf("NewRotator: %v", err)
			}
			if !bytes.Equal(gotCA, ca) {
				t.Fatal("got a new ca, want the secret's reused")
			}
			if got := countActions(client, "update", "validatingwebhookconfigurations"); got != tt.wantUpdates {
				t.Errorf("got %d webhook configuration updates, want %d", got, tt.wantUpdates)
			}
			cfg, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), configName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("could not get webhook configuration: %v", err)
			}
			for _, w := range cfg.Webhooks {
				if !bytes.Equal(w.ClientConfig.CABundle, ca) {
					t.Errorf("got webhook %s caBundle %q, want the ca", w.Name, w.ClientConfig.CABundle)
				}
			}
		})
	}
}
