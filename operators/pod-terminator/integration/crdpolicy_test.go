package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/internal/rbactest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

// crdPolicy is the ValidatingAdmissionPolicy of
// manifests/rbac/pod-terminator/crd_policy.yaml: every refusal names it.
const crdPolicy = "kooper-pod-terminator-crd-ca-bundle-only"

// As its ServiceAccount, the pod-terminator may put any CA bundle into the
// conversion webhook of the PodTerminator CRD and change nothing else: a
// stolen token rewrites no schema and sends no read elsewhere. An admin is
// not restricted.
func TestTheServiceAccountMayChangeOnlyTheConversionCABundle(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	rbactest.CheckPolicyTypes(t, kubernetes.NewForConfigOrDie(cluster.Config()), crdPolicy, 60*time.Second)
	admin := apiextensionsclient.NewForConfigOrDie(cluster.Config()).ApiextensionsV1().CustomResourceDefinitions()
	asAccount := apiextensionsclient.NewForConfigOrDie(e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100)).
		ApiextensionsV1().CustomResourceDefinitions()
	original, err := admin.Get(ctx, webhook.CRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What the manifests installed comes back at the end, as an admin
	// writes it.
	t.Cleanup(func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := admin.Get(ctx, webhook.CRDName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Labels, cur.Spec = original.Labels, original.Spec
			_, err = admin.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("could not restore the CRD: %v", err)
		}
	})

	update := func(edit func(*apiextensionsv1.CustomResourceDefinition)) error {
		t.Helper()
		crd, err := asAccount.Get(ctx, webhook.CRDName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get as the ServiceAccount: %v", err)
		}
		edit(crd)
		_, err = asAccount.Update(ctx, crd, metav1.UpdateOptions{})
		return err
	}
	refusedByPolicy := func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), crdPolicy) &&
			strings.Contains(err.Error(), "may change only spec.conversion.webhook.clientConfig.caBundle")
	}
	probe := 0
	e2etest.Eventually(t, 60*time.Second, "the policy refuses a label change", func() bool {
		probe++
		err := update(func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Labels["kooper.kooperkit.io/probe"] = strconv.Itoa(probe)
		})
		if err != nil && !refusedByPolicy(err) {
			t.Fatalf("got %v, want the change allowed (policy not enforced yet) or refused by %s", err, crdPolicy)
		}
		return err != nil
	})

	oneCA := testCA(t, "one")
	for _, bundle := range []struct {
		name string
		pem  []byte
	}{{"one CA", oneCA}, {"two CAs", append(testCA(t, "two"), oneCA...)}} {
		if err := update(func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.CABundle = bundle.pem
		}); err != nil {
			t.Fatalf("%s: the ServiceAccount could not set the conversion webhook's caBundle: %v", bundle.name, err)
		}
	}

	url := "https://attacker.example/convert"
	for _, tc := range []struct {
		name string
		want string // in the refusal
		edit func(*apiextensionsv1.CustomResourceDefinition)
	}{
		{"a URL instead of the Service", "not its url or service", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.Service, c.Spec.Conversion.Webhook.ClientConfig.URL = nil, &url
		}},
		{"another Service", "not its url or service", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.Service.Name = "attacker"
		}},
		{"another path", "not its url or service", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion.Webhook.ClientConfig.Service.Path = ptr.To("/other")
		}},
		{"no conversion webhook", "not spec.conversion.strategy", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		}},
		{"a looser schema", "not spec.versions", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.XPreserveUnknownFields = ptr.To(true)
		}},
		{"another storage version", "not spec.versions", func(c *apiextensionsv1.CustomResourceDefinition) {
			for i := range c.Spec.Versions {
				c.Spec.Versions[i].Storage = !c.Spec.Versions[i].Storage
			}
		}},
		{"another short name", "not spec.group, spec.names or spec.scope", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Names.ShortNames = append(c.Spec.Names.ShortNames, "po")
		}},
		{"an annotation", "not labels or annotations", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Annotations = map[string]string{"cert-manager.io/inject-ca-from": "attacker/ca"}
		}},
		// Through the garbage collector, an update would delete the CRD,
		// and every PodTerminator with it.
		{"an owner reference", "not owner references or finalizers", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "gone", UID: "00000000-0000-0000-0000-000000000000"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := admin.Get(ctx, webhook.CRDName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := update(tc.edit); !refusedByPolicy(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want the update refused by %s: %s", err, crdPolicy, tc.want)
			}
			after, err := admin.Get(ctx, webhook.CRDName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != before.ResourceVersion {
				t.Errorf("the CRD changed (resourceVersion %s, was %s)", after.ResourceVersion, before.ResourceVersion)
			}
		})
	}

	// Only the ServiceAccount is restricted.
	crd, err := admin.Get(ctx, webhook.CRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Spec.Names.Categories = append(crd.Spec.Names.Categories, "kooper")
	if _, err := admin.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an admin could not add a category: %v", err)
	}
}

// The CRD policy compares the spec field by field: a field a later
// Kubernetes adds to a CustomResourceDefinition's spec, its conversion or
// the webhook's client config must be added to it too, or the operator's
// ServiceAccount may change it. This fails the upgrade that brings one.
func TestTheCRDPolicyNamesEveryFieldOfTheSpec(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(rbacDir, "crd_policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policy := string(b)
	check := func(typ reflect.Type, path string, skip ...string) {
		for i := range typ.NumField() {
			field, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if slices.Contains(skip, field) {
				continue
			}
			// Compared on both sides, as a field or an optional one.
			for _, side := range []string{"object", "oldObject"} {
				if !strings.Contains(policy, side+path+"."+field) && !strings.Contains(policy, side+path+".?"+field) {
					t.Errorf("crd_policy.yaml does not compare %s%s.%s", side, path, field)
				}
			}
		}
	}
	// conversion is compared field by field, below.
	check(reflect.TypeFor[apiextensionsv1.CustomResourceDefinitionSpec](), ".spec", "conversion")
	check(reflect.TypeFor[apiextensionsv1.CustomResourceConversion](), ".spec.?conversion", "webhook")
	check(reflect.TypeFor[apiextensionsv1.WebhookConversion](), ".spec.?conversion.?webhook", "clientConfig")
	// caBundle is the one field it may change.
	check(reflect.TypeFor[apiextensionsv1.WebhookClientConfig](), ".spec.?conversion.?webhook.?clientConfig", "caBundle")
}
