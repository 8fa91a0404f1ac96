package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
)

// The multi-resource operator under Prometheus: two Tenants that become
// Ready and one whose namespace is taken; a child deleted by hand (a drift
// repair); a burst of 30 Tenants for the picture.
func init() {
	register(workload{
		name: "multi-resource",
		work: func(ctx context.Context, t *testing.T, c clients) {
			if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.NamespacePrefix + "taken"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			tenants := c.kooper.TenancyV1alpha1().Tenants()
			for _, name := range []string{"team-a", "team-b", "taken"} {
				if _, err := tenants.Create(ctx, &tenancyv1alpha1.Tenant{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: name + "-admin"}}},
				}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, 30*time.Second, "team-a is Ready", func() error {
				tn, err := tenants.Get(ctx, "team-a", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if !apimeta.IsStatusConditionTrue(tn.Status.Conditions, tenancyv1alpha1.ConditionReady) {
					return fmt.Errorf("conditions %+v", tn.Status.Conditions)
				}
				return nil
			})
			// Drift is counted from managedFields times, at one-second
			// resolution: change the child in a later second than the
			// operator made it.
			time.Sleep(1100 * time.Millisecond)
			if err := c.kube.CoreV1().ResourceQuotas(tenancyv1alpha1.NamespacePrefix+"team-a").Delete(ctx, "tenant-quota", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		answered: []string{
			`kooper_tenants{ready="true"} == 2`,
			`kooper_tenants{ready="false"} == 1`,
			`sum(kooper_tenant_drift_repairs_total{kind="ResourceQuota"}) >= 1`,
			// The child kinds' sources queue their Tenant's key with
			// Enqueue: the routed-keys panel has data, not only zeros.
			`sum(kooper_controller_queued_events_total{controller="multi-resource", source="enqueue"}) >= 1`,
		},
		checks: map[string]func(ctx context.Context, t *testing.T, c clients){
			"the tenants gauge agrees with the API server": func(ctx context.Context, t *testing.T, c clients) {
				list, err := c.kooper.TenancyV1alpha1().Tenants().List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ready := 0
				for _, tn := range list.Items {
					if apimeta.IsStatusConditionTrue(tn.Status.Conditions, tenancyv1alpha1.ConditionReady) {
						ready++
					}
				}
				for label, want := range map[string]int{"true": ready, "false": len(list.Items) - ready} {
					if got, err := c.prom.value(ctx, `sum(kooper_tenants{ready="`+label+`"})`); err != nil || got != float64(want) {
						t.Errorf("kooper_tenants{ready=%q} = %v (%v), want %d", label, got, err, want)
					}
				}
			},
		},
		load: func(ctx context.Context, t *testing.T, c clients) {
			const burst = 30
			for i := range burst {
				if _, err := c.kooper.TenancyV1alpha1().Tenants().Create(ctx, &tenancyv1alpha1.Tenant{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%02d", i)},
					Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "owner"}}},
				}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, 60*time.Second, "Prometheus sees the burst Ready", func() error {
				n, err := c.prom.value(ctx, `sum(kooper_tenants{ready="true"})`)
				if err == nil && n < 2+burst {
					return fmt.Errorf("%v ready", n)
				}
				return err
			})
		},
	})
}
