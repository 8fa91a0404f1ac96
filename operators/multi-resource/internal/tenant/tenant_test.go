package tenant_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

func acme(isolated bool) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "acme-uid"},
		Spec: tenancyv1alpha1.TenantSpec{
			Admins:           []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "devs"}},
			Quota:            &tenancyv1alpha1.Quota{CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), Pods: 20},
			DefaultLimits:    &tenancyv1alpha1.ContainerDefaults{CPU: resource.MustParse("500m"), Memory: resource.MustParse("256Mi")},
			NetworkIsolation: isolated,
		},
	}
}

func TestDesired(t *testing.T) {
	c := tenant.Desired(acme(true))
	if *c.Namespace.Name != "tenant-acme" {
		t.Errorf("got namespace %q, want tenant-acme", *c.Namespace.Name)
	}
	// Every child: labels and a blocking controller reference to the Tenant.
	for _, ch := range []struct {
		kind      string
		namespace *string
		labels    map[string]string
		owner     func() (uid string, controller, block *bool)
	}{
		{"Namespace", nil, c.Namespace.Labels, func() (string, *bool, *bool) {
			r := c.Namespace.OwnerReferences[0]
			return string(*r.UID), r.Controller, r.BlockOwnerDeletion
		}},
		{"ResourceQuota", c.Quota.Namespace, c.Quota.Labels, func() (string, *bool, *bool) {
			r := c.Quota.OwnerReferences[0]
			return string(*r.UID), r.Controller, r.BlockOwnerDeletion
		}},
		{"LimitRange", c.LimitRange.Namespace, c.LimitRange.Labels, func() (string, *bool, *bool) {
			r := c.LimitRange.OwnerReferences[0]
			return string(*r.UID), r.Controller, r.BlockOwnerDeletion
		}},
		{"RoleBinding", c.RoleBinding.Namespace, c.RoleBinding.Labels, func() (string, *bool, *bool) {
			r := c.RoleBinding.OwnerReferences[0]
			return string(*r.UID), r.Controller, r.BlockOwnerDeletion
		}},
		{"NetworkPolicy", c.NetworkPolicy.Namespace, c.NetworkPolicy.Labels, func() (string, *bool, *bool) {
			r := c.NetworkPolicy.OwnerReferences[0]
			return string(*r.UID), r.Controller, r.BlockOwnerDeletion
		}},
	} {
		if ch.namespace != nil && *ch.namespace != "tenant-acme" {
			t.Errorf("%s: got namespace %q, want tenant-acme", ch.kind, *ch.namespace)
		}
		if ch.labels[tenant.ManagedByLabel] != tenant.ManagedBy || ch.labels[tenant.TenantLabel] != "acme" {
			t.Errorf("%s: got labels %v", ch.kind, ch.labels)
		}
		uid, ctrl, block := ch.owner()
		if uid != "acme-uid" || ctrl == nil || !*ctrl || block == nil || !*block {
			t.Errorf("%s: got owner %s controller %v block %v, want acme-uid, true, true", ch.kind, uid, ctrl, block)
		}
	}
	hard := *c.Quota.Spec.Hard
	for _, r := range []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU} {
		if q := hard[r]; q.String() != "2" {
			t.Errorf("got %s %s, want 2", r, q.String())
		}
	}
	if q := hard[corev1.ResourcePods]; q.String() != "20" {
		t.Errorf("got pods %s, want 20", q.String())
	}
	if d := c.LimitRange.Spec.Limits[0].Default; d.Cpu().String() != "500m" || d.Memory().String() != "256Mi" {
		t.Errorf("got default limits %v", d)
	}
	if s := c.RoleBinding.Subjects; len(s) != 2 || *s[0].Kind != "User" || *s[1].Name != "devs" || *c.RoleBinding.RoleRef.Name != "admin" {
		t.Errorf("got binding %+v", c.RoleBinding)
	}
	if len(c.NetworkPolicy.Spec.PolicyTypes) != 1 || len(c.NetworkPolicy.Spec.Ingress) != 0 {
		t.Errorf("got policy %+v, want ingress denied to every pod", c.NetworkPolicy.Spec)
	}
}

// Besides CPU, memory and pods, the quota caps the number of objects of
// each kind a tenant's admins can create: what they make is stored in
// etcd and cached by every controller of its kind, the operator's
// included.
func TestTheQuotaCapsTheObjectsOfEachKind(t *testing.T) {
	tests := []struct {
		name    string
		objects int32
		want    int64
	}{
		{name: "unset: the default", objects: 0, want: tenant.DefaultObjects},
		{name: "set", objects: 30, want: 30},
		{name: "one", objects: 1, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := acme(true)
			tn.Spec.Quota.Objects = tt.objects
			hard := *tenant.Desired(tn).Quota.Spec.Hard
			for _, r := range []corev1.ResourceName{
				"count/rolebindings.rbac.authorization.k8s.io", "count/networkpolicies.networking.k8s.io",
				"count/roles.rbac.authorization.k8s.io", "count/configmaps", "count/secrets", "count/services",
				"count/persistentvolumeclaims", "count/serviceaccounts", "count/deployments.apps", "count/jobs.batch",
			} {
				if q, ok := hard[r]; !ok || q.Value() != tt.want {
					t.Errorf("got %s %v (set: %v), want %d", r, q.String(), ok, tt.want)
				}
			}
			counts := 0
			for r, q := range hard {
				if !strings.HasPrefix(string(r), "count/") {
					continue
				}
				counts++
				if q.Value() != tt.want {
					t.Errorf("got %s %s, want %d", r, q.String(), tt.want)
				}
			}
			if _, ok := hard["count/replicasets.apps"]; ok {
				t.Errorf("got ReplicaSets counted, want them left to their Deployments")
			}
			if _, ok := hard["count/pods"]; ok {
				t.Errorf("got count/pods, want pods capped by quota.pods only")
			}
			if counts != 17 {
				t.Errorf("got %d object counts, want 17", counts)
			}
			if q := hard[corev1.ResourcePods]; q.Value() != 20 {
				t.Errorf("got pods %s, want 20", q.String())
			}
		})
	}
}

func TestNoNetworkPolicyWithoutIsolation(t *testing.T) {
	if c := tenant.Desired(acme(false)); c.NetworkPolicy != nil {
		t.Errorf("got a NetworkPolicy for a tenant that is not isolated")
	}
}

func TestOwnedBy(t *testing.T) {
	tn := acme(false)
	yes := true
	tests := []struct {
		name string
		refs []metav1.OwnerReference
		want bool
	}{
		{"no owner", nil, false},
		{"the tenant", []metav1.OwnerReference{{APIVersion: "tenancy.kooperkit.io/v1alpha1", Kind: "Tenant", Name: "acme", UID: "acme-uid", Controller: &yes}}, true},
		{"the tenant, at another version", []metav1.OwnerReference{{APIVersion: "tenancy.kooperkit.io/v1", Kind: "Tenant", Name: "acme", UID: "acme-uid", Controller: &yes}}, true},
		{"a re-created tenant", []metav1.OwnerReference{{APIVersion: "tenancy.kooperkit.io/v1alpha1", Kind: "Tenant", Name: "acme", UID: "old-uid", Controller: &yes}}, false},
		{"not as controller", []metav1.OwnerReference{{APIVersion: "tenancy.kooperkit.io/v1alpha1", Kind: "Tenant", Name: "acme", UID: "acme-uid"}}, false},
		{"another kind with the tenant's UID", []metav1.OwnerReference{{APIVersion: "tenancy.kooperkit.io/v1alpha1", Kind: "Team", Name: "acme", UID: "acme-uid", Controller: &yes}}, false},
		{"a Tenant of another group with the tenant's UID", []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Tenant", Name: "acme", UID: "acme-uid", Controller: &yes}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tt.refs}}
			if got := tenant.OwnedBy(obj, tn); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUnusable(t *testing.T) {
	tests := []struct {
		name           string
		quotaCPU       string
		quotaMem       string
		limCPU, limMem string
		want           string // substring; "" means usable
	}{
		{name: "limits within the quota", quotaCPU: "2", quotaMem: "4Gi", limCPU: "500m", limMem: "256Mi"},
		{name: "limits equal to the quota", quotaCPU: "2", quotaMem: "4Gi", limCPU: "2", limMem: "4Gi"},
		{name: "cpu above", quotaCPU: "2", quotaMem: "4Gi", limCPU: "2500m", limMem: "256Mi", want: "defaultLimits.cpu 2500m exceeds quota.cpu 2: a container"},
		{name: "memory above", quotaCPU: "2", quotaMem: "1Gi", limCPU: "1", limMem: "2Gi", want: "defaultLimits.memory 2Gi exceeds quota.memory 1Gi"},
		{name: "both above", quotaCPU: "1", quotaMem: "1Gi", limCPU: "2", limMem: "2Gi", want: "cpu 2 exceeds quota.cpu 1 and defaultLimits.memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := &tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{
				Quota:         &tenancyv1alpha1.Quota{CPU: resource.MustParse(tt.quotaCPU), Memory: resource.MustParse(tt.quotaMem), Pods: 5},
				DefaultLimits: &tenancyv1alpha1.ContainerDefaults{CPU: resource.MustParse(tt.limCPU), Memory: resource.MustParse(tt.limMem)},
			}}
			got := tenant.Unusable(tn)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The namespace enforces the Tenant's Pod Security level, restricted unless
// baseline is asked for, never privileged; warn and audit say the same.
func TestThePodSecurityLevelIsEnforcedInTheNamespace(t *testing.T) {
	tests := []struct {
		name  string
		level tenancyv1alpha1.PodSecurityLevel
		want  string
	}{
		{"unset means restricted", "", "restricted"},
		{"restricted", tenancyv1alpha1.PodSecurityRestricted, "restricted"},
		{"baseline", tenancyv1alpha1.PodSecurityBaseline, "baseline"},
		{"privileged, which the schema refuses, means restricted", "privileged", "restricted"},
		{"an unknown level means restricted", "Baseline", "restricted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := acme(false)
			tn.Spec.PodSecurity = tt.level
			if got := tenant.PodSecurity(tn); string(got) != tt.want {
				t.Errorf("got level %q, want %q", got, tt.want)
			}
			labels := tenant.Desired(tn).Namespace.Labels
			for label, want := range map[string]string{
				"pod-security.kubernetes.io/enforce":         tt.want,
				"pod-security.kubernetes.io/enforce-version": "latest",
				"pod-security.kubernetes.io/warn":            tt.want,
				"pod-security.kubernetes.io/warn-version":    "latest",
				"pod-security.kubernetes.io/audit":           tt.want,
				"pod-security.kubernetes.io/audit-version":   "latest",
				tenant.ManagedByLabel:                        tenant.ManagedBy,
				tenant.TenantLabel:                           "acme",
			} {
				if labels[label] != want {
					t.Errorf("got label %s=%q, want %q", label, labels[label], want)
				}
			}
		})
	}
}
