package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
)

// demoTenant is the Tenant the multi-resource operator's demo creates.
const demoTenant = "demo"

// The multi-resource operator's demo: a Tenant, awaited until Ready, whose
// children make run prints.
func init() {
	register("multi-resource", demo{
		port: 8082,
		args: []string{"-leader-elect=false"},
		start: func(ctx context.Context, c demoClients, say func(string, ...any)) error {
			tenants := c.kooper.TenancyV1alpha1().Tenants()
			tn := &tenancyv1alpha1.Tenant{
				ObjectMeta: metav1.ObjectMeta{Name: demoTenant},
				Spec: tenancyv1alpha1.TenantSpec{
					Admins:           []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "demo-devs"}},
					NetworkIsolation: true,
				},
			}
			if _, err := tenants.Create(ctx, tn, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("could not create the demo Tenant: %w", err)
			}
			say("created Tenant %s: the multi-resource operator makes namespace tenant-%s with a quota, limits, a RoleBinding and a NetworkPolicy", demoTenant, demoTenant)
			for {
				tn, err := tenants.Get(ctx, demoTenant, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("could not read the demo Tenant: %w", err)
				}
				for _, cond := range tn.Status.Conditions {
					if cond.Type == tenancyv1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == tn.Generation {
						var names []string
						for _, ch := range tn.Status.Children {
							names = append(names, ch.Kind+" "+ch.Name)
						}
						say("Tenant %s is Ready: %s", demoTenant, strings.Join(names, ", "))
						return nil
					}
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(200 * time.Millisecond):
				}
			}
		},
		// The Tenant has no finalizer: the garbage collector deletes its
		// namespace after it, with or without the operator.
		stop: func(ctx context.Context, c demoClients) error {
			_ = c.kooper.TenancyV1alpha1().Tenants().Delete(ctx, demoTenant, metav1.DeleteOptions{})
			return nil
		},
		resources: []string{"tenants"},
		shows: []*regexp.Regexp{
			regexp.MustCompile(`Tenant demo is Ready: Namespace tenant-demo, ResourceQuota tenant-quota, LimitRange tenant-limits, RoleBinding tenant-admins, NetworkPolicy tenant-default-deny`),
		},
	})
}
