package certs_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const crdName = "widgets.example.com"

// crd returns the CRD, its conversion by webhook with caBundle held, or by
// none if strategy is None.
func crd(strategy apiextensionsv1.ConversionStrategyType, held []byte) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}}
	c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: strategy}
	if strategy == apiextensionsv1.WebhookConverter {
		c.Spec.Conversion.Webhook = &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443/convert"), CABundle: held},
			ConversionReviewVersions: []string{"v1"},
		}
	}
	return c
}

// The CA goes into the CRD's conversion webhook as into the admission
// webhooks: only when it differs, retried on conflicts, never over a newer
// bundle, and not at all when the CRD converts by no webhook.
func TestTheConversionWebhookGetsTheCA(t *testing.T) {
	stale := ensureSecret(t) // its CA issued at t0
	later := fake.NewClientset()
	opts := options(later)
	opts.Now = at(t0.Add(time.Hour))
	if _, _, err := ensure(context.Background(), opts); err != nil {
		t.Fatalf("NewRotator: %v", err)
	}
	ca := stale.Data["ca.crt"]
	newer := append(append([]byte{}, ca...), getSecret(t, later).Data["ca.crt"]...)

	tests := []struct {
		name        string
		crd         *apiextensionsv1.CustomResourceDefinition
		conflicts   int
		wantBundle  []byte
		wantUpdates int
	}{
		{name: "an empty caBundle gets the CA", crd: crd(apiextensionsv1.WebhookConverter, nil), wantBundle: ca, wantUpdates: 1},
		{name: "the CA already there is not written", crd: crd(apiextensionsv1.WebhookConverter, ca), wantBundle: ca},
		{name: "a conflicting update is retried", crd: crd(apiextensionsv1.WebhookConverter, []byte("stale")), conflicts: 2, wantBundle: ca, wantUpdates: 3},
		{name: "a bundle with a newer CA is kept", crd: crd(apiextensionsv1.WebhookConverter, newer), wantBundle: newer},
		{name: "a CRD converting by no webhook is left alone", crd: crd(apiextensionsv1.NoneConverter, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crds := apiextensionsfake.NewClientset(tt.crd)
			conflicts := tt.conflicts
			crds.PrependReactor("update", "customresourcedefinitions", func(k8stesting.Action) (bool, runtime.Object, error) {
				if conflicts == 0 {
					return false, nil, nil
				}
				conflicts--
				return true, nil, apierrors.NewConflict(apiextensionsv1.Resource("customresourcedefinitions"), crdName, errors.New("modified"))
			})
			opts := options(fake.NewClientset(stale.DeepCopy()))
			opts.CRDClient, opts.CRDName = crds, crdName
			if _, _, err := ensure(context.Background(), opts); err != nil {
				t.Fatalf("NewRotator: %v", err)
			}
			updates := 0
			for _, a := range crds.Actions() {
				if a.GetVerb() == "update" {
					updates++
				}
			}
			if updates != tt.wantUpdates {
				t.Errorf("got %d CRD updates, want %d", updates, tt.wantUpdates)
			}
			got, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crdName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var held []byte
			if w := got.Spec.Conversion.Webhook; w != nil {
				held = w.ClientConfig.CABundle
			}
			if !bytes.Equal(held, tt.wantBundle) {
				t.Errorf("got caBundle with %d CAs, want %d", len(certsIn(t, held)), len(certsIn(t, tt.wantBundle)))
			}
		})
	}
}
