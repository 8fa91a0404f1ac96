package integration_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/internal/rbactest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// vapPolicy is the ValidatingAdmissionPolicy of
// manifests/rbac/pod-terminator/webhook_policy.yaml: every refusal names it.
const vapPolicy = "kooper-pod-terminator-ca-bundle-only"

// As its ServiceAccount, the pod-terminator may put any CA bundle into its
// webhook configuration (one CA, or two while one is rotated out) and
// change nothing else: the RBAC allows update, the admission policy refuses
// every other change. An admin is not restricted.
func TestTheServiceAccountMayChangeOnlyTheCABundle(t *testing.T) {
	ctx := context.Background()
	applyKustomizations(t, rbacDir)
	adminClient := kubernetes.NewForConfigOrDie(cluster.Config())
	// A misspelt field would only be a warning, and behind ?. compare as
	// absent on both sides.
	rbactest.CheckPolicyTypes(t, adminClient, vapPolicy, 60*time.Second)
	admin := adminClient.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	asAccount := kubernetes.NewForConfigOrDie(e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100)).
		AdmissionregistrationV1().ValidatingWebhookConfigurations()

	// The configuration the manifests install, as an admin would.
	var manifest admissionregistrationv1.ValidatingWebhookConfiguration
	readManifest(t, "webhook.yaml", &manifest)
	if manifest.Name != operator.DefaultWebhookConfigName {
		t.Fatalf("webhook.yaml names %q, want %q", manifest.Name, operator.DefaultWebhookConfigName)
	}
	install := func() {
		t.Helper()
		err := admin.Delete(ctx, manifest.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if _, err := admin.Create(ctx, manifest.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	install()
	t.Cleanup(func() {
		if err := admin.Delete(ctx, manifest.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("could not remove the webhook configuration: %v", err)
		}
	})

	// update gets the configuration as the account, edits it and updates it.
	update := func(edit func(*admissionregistrationv1.ValidatingWebhookConfiguration)) error {
		t.Helper()
		vwc, err := asAccount.Get(ctx, manifest.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get as the ServiceAccount: %v", err)
		}
		edit(vwc)
		_, err = asAccount.Update(ctx, vwc, metav1.UpdateOptions{})
		return err
	}
	refusedByPolicy := func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), vapPolicy) &&
			strings.Contains(err.Error(), "may change only webhooks[*].clientConfig.caBundle")
	}

	// A new policy takes a moment to be enforced: until a label change is
	// refused, it may go through (harmlessly; the configuration is
	// re-installed below).
	probe := 0
	e2etest.Eventually(t, 60*time.Second, "the policy refuses a label change", func() bool {
		probe++
		err := update(func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Labels["kooper.kooperkit.io/probe"] = strconv.Itoa(probe)
		})
		if err != nil && !refusedByPolicy(err) {
			t.Fatalf("got %v, want the change allowed (policy not enforced yet) or refused by %s", err, vapPolicy)
		}
		return err != nil
	})
	install()

	oneCA := testCA(t, "one")
	twoCAs := append(testCA(t, "two"), oneCA...)
	for _, bundle := range []struct {
		name string
		pem  []byte
	}{{"one CA", oneCA}, {"two CAs", twoCAs}, {"one CA again", oneCA}} {
		err := update(func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			for i := range v.Webhooks {
				v.Webhooks[i].ClientConfig.CABundle = bundle.pem
			}
		})
		if err != nil {
			t.Fatalf("%s: the ServiceAccount could not set caBundle: %v", bundle.name, err)
		}
		got, err := admin.Get(ctx, manifest.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Webhooks[0].ClientConfig.CABundle) != string(bundle.pem) {
			t.Errorf("%s: got caBundle %q, want it written", bundle.name, got.Webhooks[0].ClientConfig.CABundle)
		}
	}

	url := "https://attacker.example/steal"
	other := manifest.Webhooks[0].DeepCopy()
	other.Name = "secrets.attacker.example"
	for _, tc := range []struct {
		name string
		want string // in the refusal, after the policy's name
		edit func(*admissionregistrationv1.ValidatingWebhookConfiguration)
	}{
		{"rules to every Secret", "not webhooks[*].rules", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].Rules = []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
			}}
		}},
		{"one more rule", "not webhooks[*].rules", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].Rules = append(v.Webhooks[0].Rules, admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			})
		}},
		{"a URL instead of the Service", "not webhooks[*].clientConfig.url", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].ClientConfig.Service, v.Webhooks[0].ClientConfig.URL = nil, &url
		}},
		{"another Service", "not webhooks[*].clientConfig.service", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].ClientConfig.Service.Name = "attacker"
		}},
		{"another path", "not webhooks[*].clientConfig.service", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].ClientConfig.Service.Path = ptr.To("/other")
		}},
		{"failurePolicy Ignore", "not webhooks[*].failurePolicy", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}},
		{"matchPolicy Exact", "not webhooks[*].matchPolicy", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].MatchPolicy = ptr.To(admissionregistrationv1.Exact)
		}},
		{"a namespaceSelector", "not webhooks[*].namespaceSelector", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"nothing": "matches"}}
		}},
		{"an objectSelector", "not webhooks[*].objectSelector", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"nothing": "matches"}}
		}},
		{"sideEffects", "not webhooks[*].sideEffects", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
		}},
		{"timeoutSeconds", "not webhooks[*].timeoutSeconds", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].TimeoutSeconds = ptr.To[int32](30)
		}},
		{"admissionReviewVersions", "not webhooks[*].admissionReviewVersions", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].AdmissionReviewVersions = []string{"v1", "v1beta1"}
		}},
		{"a matchCondition", "not webhooks[*].matchConditions", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "never", Expression: "false"}}
		}},
		{"another webhook", "not add, remove, rename or reorder webhooks", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks = append(v.Webhooks, *other)
		}},
		{"no webhook", "not add, remove, rename or reorder webhooks", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) { v.Webhooks = nil }},
		{"a renamed webhook", "not add, remove, rename or reorder webhooks", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) { v.Webhooks[0].Name = other.Name }},
		{"a label", "not labels or annotations", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) { v.Labels["extra"] = "label" }},
		{"an annotation", "not labels or annotations", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Annotations = map[string]string{"cert-manager.io/inject-ca-from": "attacker/ca"}
		}},
		// Through the garbage collector, an update would be a delete (the
		// owner does not exist).
		{"an owner reference", "not owner references or finalizers", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "00000000-0000-0000-0000-000000000000"}}
		}},
		{"a finalizer", "not owner references or finalizers", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Finalizers = []string{"attacker.example/hold"}
		}},
		{"the caBundle and the rules", "not webhooks[*].rules", func(v *admissionregistrationv1.ValidatingWebhookConfiguration) {
			v.Webhooks[0].ClientConfig.CABundle = twoCAs
			v.Webhooks[0].Rules[0].Operations = append(v.Webhooks[0].Rules[0].Operations, admissionregistrationv1.Delete)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := admin.Get(ctx, manifest.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := update(tc.edit); !refusedByPolicy(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want the update refused by %s: %s", err, vapPolicy, tc.want)
			}
			after, err := admin.Get(ctx, manifest.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != before.ResourceVersion {
				t.Errorf("the configuration changed (resourceVersion %s, was %s)", after.ResourceVersion, before.ResourceVersion)
			}
		})
	}

	// Only the ServiceAccount is restricted: an admin may change anything.
	vwc, err := admin.Get(ctx, manifest.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vwc.Webhooks[0].TimeoutSeconds = ptr.To[int32](10)
	if _, err := admin.Update(ctx, vwc, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an admin could not change timeoutSeconds: %v", err)
	}
}

// The policy compares every field of a webhook but caBundle by name: a field
// that a newer API adds must be added to it, or the account could change it.
func TestThePolicyNamesEveryFieldOfAWebhook(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(rbacDir, "webhook_policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policy := string(b)
	check := func(typ reflect.Type, prefix string) {
		for i := range typ.NumField() {
			field, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			switch field {
			case "caBundle": // the one field it may change
			case "clientConfig": // compared field by field, below
			case "name": // compared as the list of names
				if !strings.Contains(policy, "map(w, w.name)") {
					t.Errorf("%s does not compare the webhooks' names", vapPolicy)
				}
			default:
				if !strings.Contains(policy, "map(w, "+prefix+field+")") {
					t.Errorf("%s does not compare webhooks[*].%s (want map(w, %s%s) on both sides)", vapPolicy, strings.TrimPrefix(prefix+field, "w."), prefix, field)
				}
			}
		}
	}
	check(reflect.TypeFor[admissionregistrationv1.ValidatingWebhook](), "w.?")
	check(reflect.TypeFor[admissionregistrationv1.WebhookClientConfig](), "w.clientConfig.?")
}

// testCA returns a self-signed CA certificate, PEM-encoded.
func testCA(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "kooper test CA " + name},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
