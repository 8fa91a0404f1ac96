package webhook_test

import (
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

// The dev loop registers the webhook the manifests install, but for its
// clientConfig: the same rules, conditions and failure policy, so a
// PodTerminator is refused there as it is on a cluster.
func TestTheRegistrationIsTheManifests(t *testing.T) {
	const file = "../../../../manifests/pod-terminator/webhook.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(data, &want); err != nil {
		t.Fatalf("could not decode %s: %v", file, err)
	}
	if len(want.Webhooks) != 1 || want.Webhooks[0].ClientConfig.Service == nil {
		t.Fatalf("%s: got %d webhooks, want 1 with a Service", file, len(want.Webhooks))
	}
	if got := want.Webhooks[0].ClientConfig.Service.Path; got == nil || *got != webhook.Path {
		t.Errorf("%s calls path %v, want %s, where the webhook is served", file, got, webhook.Path)
	}
	want.TypeMeta = metav1.TypeMeta{}

	got := webhook.Registration(want.Name, want.Webhooks[0].ClientConfig)
	if !equality.Semantic.DeepEqual(got, &want) {
		g, _ := yaml.Marshal(got)
		w, _ := yaml.Marshal(&want)
		t.Errorf("got registration\n%s\nwant, as in %s,\n%s", g, file, w)
	}
}
