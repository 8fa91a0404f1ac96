package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
)

// The multi-resource operator renders exactly these objects; on the node,
// the Tenants of its README become Ready with their children; make
// undeploy waits while a Tenant has a finalizer.
func init() {
	register(deployable{
		name:  "multi-resource",
		group: "tenancy.kooperkit.io",
		kinds: []string{"ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ClusterRoleBinding",
			"CustomResourceDefinition", "Deployment", "Namespace", "NetworkPolicy", "PodDisruptionBudget",
			"Role", "RoleBinding", "Service", "ServiceAccount",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"},
		examples: tenantExamples,
		customResource: func() (schema.GroupVersionResource, *unstructured.Unstructured) {
			return tenancyv1alpha1.SchemeGroupVersion.WithResource("tenants"), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": tenancyv1alpha1.SchemeGroupVersion.String(),
				"kind":       "Tenant",
				"spec":       map[string]any{"admins": []any{map[string]any{"kind": "User", "name": "alice"}}},
			}}
		},
	})
}

// The multi-resource operator's examples: each Tenant of the README
// becomes Ready with its namespace and children.
func tenantExamples(t *testing.T, p *podsTest) {
	ctx := context.Background()
	for where, doc := range docExamples(t, "tenancy.kooperkit.io", "Tenant") {
		var tn tenancyv1alpha1.Tenant
		if err := yaml.UnmarshalStrict([]byte(doc), &tn); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if err := p.apply(doc); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		eventually(t, 30*time.Second, "Tenant "+tn.Name+" is Ready with its children", func() error {
			got, err := p.crs.TenancyV1alpha1().Tenants().Get(ctx, tn.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !metaReady(got.Status.Conditions) {
				return fmt.Errorf("conditions %+v", got.Status.Conditions)
			}
			ns := "tenant-" + tn.Name
			if _, err := p.kube.CoreV1().ResourceQuotas(ns).Get(ctx, "tenant-quota", metav1.GetOptions{}); err != nil {
				return err
			}
			if _, err := p.kube.RbacV1().RoleBindings(ns).Get(ctx, "tenant-admins", metav1.GetOptions{}); err != nil {
				return err
			}
			return nil
		})
		if err := p.crs.TenancyV1alpha1().Tenants().Delete(ctx, tn.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "Tenant "+tn.Name+" is gone", func() error {
			_, err := p.crs.TenancyV1alpha1().Tenants().Get(ctx, tn.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%w)", err)
		})
	}
}
