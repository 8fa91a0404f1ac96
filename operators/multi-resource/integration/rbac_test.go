package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/internal/rbactest"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// Every name in this file starts with rbac (tests with TestRBAC): the
// package's other test files are written separately.
const (
	rbacManifestsDir = "../../../manifests/rbac/multi-resource"
	rbacDeployDir    = "../../../manifests/multi-resource"
	rbacUser         = "system:serviceaccount:" + operator.DefaultNamespace + ":" + operator.DefaultName
	// The ValidatingAdmissionPolicies of rbacManifestsDir: every refusal
	// names its policy.
	rbacTenantPolicy = "kooper-multi-resource-tenant-namespaces"
	// rbacEnforceLabel is the Pod Security label every namespace the
	// account writes must carry, at restricted or baseline.
	rbacEnforceLabel   = "pod-security.kubernetes.io/enforce"
	rbacEnforceMessage = "may write a namespace only with the label pod-security.kubernetes.io/enforce set to restricted or baseline"
	rbacBindingPolicy  = "kooper-multi-resource-admin-bindings"
)

// region: needed

// needed is what the multi-resource operator does, written out by hand: the
// ClusterRole must grant exactly this. Children are written with server-side
// apply: a patch, which needs create too when the child does not exist yet.
var needed = []rbacv1.PolicyRule{
	{APIGroups: []string{"tenancy.kooperkit.io"}, Resources: []string{"tenants"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"tenancy.kooperkit.io"}, Resources: []string{"tenants/status"}, Verbs: []string{"update"}},
	{APIGroups: []string{"tenancy.kooperkit.io"}, Resources: []string{"tenants/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas", "limitranges"}, Verbs: []string{"create"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, ResourceNames: []string{"tenant-quota"}, Verbs: []string{"list", "watch", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"limitranges"}, ResourceNames: []string{"tenant-limits"}, Verbs: []string{"list", "watch", "patch"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, ResourceNames: []string{"tenant-admins"}, Verbs: []string{"list", "watch", "patch"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, ResourceNames: []string{"tenant-default-deny"}, Verbs: []string{"list", "watch", "patch", "delete"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"admin"}, Verbs: []string{"bind"}},
}

// neededInNamespace is what it does in its own namespace (leader election):
// the Role must grant exactly this.
var neededInNamespace = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"multi-resource"}, Verbs: []string{"get", "update", "watch"}},
}

// endregion: needed

func TestRBACRolesGrantExactlyWhatIsNeeded(t *testing.T) {
	for file, want := range map[string][]rbacv1.PolicyRule{"cluster_role.yaml": needed, "role.yaml": neededInNamespace} {
		if got := rbactest.ReadRules(t, filepath.Join(rbacManifestsDir, file)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got rules %+v\nwant exactly %+v", file, got, want)
		}
	}
}

// Applied with kubectl, the manifests let the ServiceAccount do every needed
// verb and refuse others (checked by SubjectAccessReviews as the account).
func TestRBACServiceAccountMayDoWhatIsNeededAndNothingElse(t *testing.T) {
	rbacKubectl(t, "apply", "-k", rbacManifestsDir)
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	groups := rbactest.ServiceAccountGroups(operator.DefaultNamespace)
	rbactest.CheckAllowed(t, client, rbacUser, groups, "some-tenant", needed)
	rbactest.CheckAllowed(t, client, rbacUser, groups, operator.DefaultNamespace, neededInNamespace)
	denied := []authorizationv1.ResourceAttributes{
		{Namespace: "some-tenant", Resource: "secrets", Verb: "get"},
		// Children are read and changed by their fixed names only.
		{Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verb: "list"},
		{Namespace: "kube-system", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verb: "list"},
		{Namespace: "some-tenant", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verb: "patch", Name: "someone-elses"},
		{Namespace: "some-tenant", Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "delete", Name: "someone-elses"},
		{Resource: "resourcequotas", Verb: "watch"},
		{Namespace: "some-tenant", Resource: "pods", Verb: "create"},
		{Group: "tenancy.kooperkit.io", Resource: "tenants", Verb: "delete"},
		{Group: "tenancy.kooperkit.io", Resource: "tenants", Verb: "update"}, // status only
		{Resource: "namespaces", Verb: "delete"},                             // the garbage collector does it
		{Namespace: "some-tenant", Group: "apps", Resource: "deployments", Verb: "create"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind", Name: "cluster-admin"},
		{Namespace: "some-tenant", Group: "coordination.k8s.io", Resource: "leases", Verb: "update"},
		// Another operator's Lease, in its namespace or in this one.
		{Namespace: "kooper-pod-terminator", Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Name: "pod-terminator"},
		{Namespace: operator.DefaultNamespace, Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Name: "pod-terminator"},
		{Namespace: operator.DefaultNamespace, Group: "coordination.k8s.io", Resource: "leases", Verb: "list"},
		// The operator records no Events.
		{Namespace: "some-tenant", Resource: "events", Verb: "create"},
		{Namespace: "default", Resource: "events", Verb: "create"},
	}
	for _, d := range denied {
		if rbactest.Can(t, client, rbacUser, groups, d) {
			t.Errorf("%s may %s %s/%s %q in %q, want denied", rbacUser, d.Verb, d.Group, d.Resource, d.Name, d.Namespace)
		}
	}
}

// RBAC lets the ServiceAccount write namespaces, and RoleBindings,
// ResourceQuotas, LimitRanges and NetworkPolicies, anywhere; the admission
// policies let it write only tenant namespaces (named tenant-*) and those
// kinds only in them, and bind only the ClusterRole admin.
func TestRBACPoliciesKeepTheAccountInTenantNamespaces(t *testing.T) {
	ctx := context.Background()
	rbacKubectl(t, "apply", "-k", rbacManifestsDir)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	for _, p := range []string{rbacTenantPolicy, rbacBindingPolicy} {
		rbactest.CheckPolicyTypes(t, admin, p, 60*time.Second)
	}
	asAccount := kubernetes.NewForConfigOrDie(e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100))
	suffix := rand.String(5)
	cleanupNamespace := func(name string) {
		t.Cleanup(func() {
			if err := admin.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("could not delete namespace %s: %v", name, err)
			}
		})
	}
	namespace := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{rbacEnforceLabel: "restricted"}}}
	}

	// A new policy takes a moment to be enforced: until a namespace outside
	// tenant-* is refused, one may be created (and is deleted at the end).
	probe := 0
	e2etest.Eventually(t, 60*time.Second, "the policy refuses a namespace kube-*", func() bool {
		probe++
		name := fmt.Sprintf("kube-rbac-%s-%d", suffix, probe)
		_, err := asAccount.CoreV1().Namespaces().Create(ctx, namespace(name), metav1.CreateOptions{})
		if err == nil {
			cleanupNamespace(name)
			return false
		}
		if !rbacRefused(err, rbacTenantPolicy, "may create or change only namespaces named tenant-*, not "+name) {
			t.Fatalf("got %v, want the namespace created (policy not enforced yet) or refused by %s", err, rbacTenantPolicy)
		}
		return true
	})

	// Two Tenants, which no operator serves here: the account writes
	// their children itself, as the operator would.
	_, tenants := securityClients(t)
	tn := securityTenant(t, tenants, "rbac", "")
	other := securityTenant(t, tenants, "rbac-other", "")
	tenantNS := tenancyv1alpha1.NamespacePrefix + tn.Name
	controlledBy := func(tn *tenancyv1alpha1.Tenant) []metav1.OwnerReference {
		return []metav1.OwnerReference{{
			APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Tenant", Name: tn.Name, UID: tn.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}
	}
	// A tenant-* namespace no Tenant controls, made by an admin, with a
	// NetworkPolicy and a LimitRange of its own, and a LimitRange nobody
	// controls in tn's namespace (made below).
	strayNS := tenancyv1alpha1.NamespacePrefix + "rbac-stray-" + suffix
	if _, err := admin.CoreV1().Namespaces().Create(ctx, namespace(strayNS), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cleanupNamespace(strayNS)
	if _, err := admin.NetworkingV1().NetworkPolicies(strayNS).Create(ctx, rbacNetworkPolicy(tenant.NetworkPolicyName), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.RbacV1().ClusterRoles().Delete(ctx, "rbac-test-subset", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	// A ClusterRole granting nothing the account does not hold: RBAC lets
	// it bind this one without the bind verb.
	_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-test-subset"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(ctx, "rbac-test-subset", metav1.DeleteOptions{}) })
	// A NetworkPolicy outside the tenants, which the account may not delete
	// (named as a tenant's: RBAC would refuse any other name first).
	_, err = admin.NetworkingV1().NetworkPolicies("default").Create(ctx, rbacNetworkPolicy(tenant.NetworkPolicyName), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.NetworkingV1().NetworkPolicies("default").Delete(ctx, tenant.NetworkPolicyName, metav1.DeleteOptions{})
	})

	alice := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}
	binding := func(ns, name, role string, owner *tenancyv1alpha1.Tenant, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
		b := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}
		if owner != nil {
			b.OwnerReferences = controlledBy(owner)
		}
		return b
	}
	createBinding := func(b *rbacv1.RoleBinding) error {
		_, err := asAccount.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{})
		return err
	}
	// patchBinding changes the tenant's binding, tenant-admins.
	patchBinding := func(patch string) error {
		_, err := asAccount.RbacV1().RoleBindings(tenantNS).Patch(ctx, "tenant-admins", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	quota := func(ns string, owner *tenancyv1alpha1.Tenant) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "rbac", Namespace: ns, OwnerReferences: controlledBy(owner)},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}},
		}
	}
	limits := func(ns, name string) *corev1.LimitRange {
		return &corev1.LimitRange{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: controlledBy(tn)},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}}},
		}
	}
	ownedNetworkPolicy := func(name string) *networkingv1.NetworkPolicy {
		np := rbacNetworkPolicy(name)
		np.OwnerReferences = controlledBy(tn)
		return np
	}
	labelPatch := []byte(`{"metadata":{"labels":{"rbac-test":"changed"}}}`)
	outside := func(kind string) string {
		return "may write " + kind + " only in namespaces named tenant-*, not in default"
	}
	notControlled := func(kind, name string) string {
		return "writes only " + kind + " a Tenant controls (one controller owner reference, to a Tenant), not " + name
	}
	const subjectsMessage = "binds admin only to users and groups whose names do not start with system:"
	for _, tc := range []struct {
		name   string
		act    func() error
		policy string // the policy that refuses it, or "" when allowed
		want   string // in the refusal
	}{
		{name: "create a tenant namespace its Tenant controls", act: func() error {
			ns := namespace(tenantNS)
			ns.OwnerReferences, ns.Labels[tenant.TenantLabel] = controlledBy(tn), tn.Name
			_, err := asAccount.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			if err == nil {
				cleanupNamespace(tenantNS)
			}
			return err
		}},
		{name: "relabel a tenant namespace", act: func() error {
			_, err := asAccount.CoreV1().Namespaces().Patch(ctx, tenantNS, types.MergePatchType, labelPatch, metav1.PatchOptions{})
			return err
		}},
		{name: "a tenant namespace without a Pod Security level", policy: rbacTenantPolicy, want: rbacEnforceMessage, act: func() error {
			name := tenantNS + "-nolevel"
			_, err := asAccount.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: controlledBy(tn)},
			}, metav1.CreateOptions{})
			if err == nil {
				cleanupNamespace(name)
			}
			return err
		}},
		{name: "lower a tenant namespace to privileged", policy: rbacTenantPolicy, want: rbacEnforceMessage, act: func() error {
			patch := []byte(`{"metadata":{"labels":{"` + rbacEnforceLabel + `":"privileged"}}}`)
			_, err := asAccount.CoreV1().Namespaces().Patch(ctx, tenantNS, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}},
		{name: "relabel namespace default", policy: rbacTenantPolicy, want: "may create or change only namespaces named tenant-*, not default", act: func() error {
			_, err := asAccount.CoreV1().Namespaces().Patch(ctx, "default", types.MergePatchType, labelPatch, metav1.PatchOptions{})
			return err
		}},
		{name: "a tenant-* namespace no Tenant controls", policy: rbacTenantPolicy, want: notControlled("namespaces", tenantNS+"-nobody"), act: func() error {
			name := tenantNS + "-nobody"
			_, err := asAccount.CoreV1().Namespaces().Create(ctx, namespace(name), metav1.CreateOptions{})
			if err == nil {
				cleanupNamespace(name)
			}
			return err
		}},
		{name: "relabel a tenant-* namespace no Tenant controls", policy: rbacTenantPolicy, want: notControlled("namespaces", strayNS), act: func() error {
			_, err := asAccount.CoreV1().Namespaces().Patch(ctx, strayNS, types.MergePatchType, labelPatch, metav1.PatchOptions{})
			return err
		}},
		{name: "a namespace named after another Tenant than its controller", policy: rbacTenantPolicy,
			want: "names the namespace of Tenant " + tn.Name + " " + tenantNS + " and labels it " + tenant.TenantLabel + "=" + tn.Name +
				", not " + tenancyv1alpha1.NamespacePrefix + other.Name, act: func() error {
				name := tenancyv1alpha1.NamespacePrefix + other.Name
				ns := namespace(name)
				ns.OwnerReferences, ns.Labels[tenant.TenantLabel] = controlledBy(tn), tn.Name
				_, err := asAccount.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
				if err == nil {
					cleanupNamespace(name)
				}
				return err
			}},
		// The garbage collector deletes an object whose owner does not
		// exist: this update would delete the tenant's namespace.
		{name: "add an owner reference to a tenant namespace", policy: rbacTenantPolicy, want: "may not change the owner references of namespaces " + tenantNS, act: func() error {
			patch := []byte(`[{"op":"add","path":"/metadata/ownerReferences/-","value":{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"` + string(uuid.NewUUID()) + `"}}]`)
			_, err := asAccount.CoreV1().Namespaces().Patch(ctx, tenantNS, types.JSONPatchType, patch, metav1.PatchOptions{})
			return err
		}},
		{name: "add a finalizer to a tenant namespace", policy: rbacTenantPolicy, want: "may not set finalizers on namespaces " + tenantNS, act: func() error {
			patch := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
			_, err := asAccount.CoreV1().Namespaces().Patch(ctx, tenantNS, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}},
		{name: "bind admin in a tenant namespace", act: func() error {
			return createBinding(binding(tenantNS, "tenant-admins", "admin", tn, alice))
		}},
		{name: "bind admin in default", policy: rbacTenantPolicy, want: outside("rolebindings"), act: func() error {
			return createBinding(binding("default", "tenant-admins", "admin", tn, alice))
		}},
		{name: "bind admin in a tenant-* namespace no Tenant controls", policy: rbacTenantPolicy,
			want: "writes rolebindings only in the namespace of the Tenant controlling them (" + tn.Name + "), not in " + strayNS, act: func() error {
				return createBinding(binding(strayNS, "tenant-admins", "admin", tn, alice))
			}},
		{name: "drop the owner of the tenant's binding", policy: rbacTenantPolicy, want: notControlled("rolebindings", "tenant-admins"), act: func() error {
			return patchBinding(`{"metadata":{"ownerReferences":null}}`)
		}},
		{name: "bind another role in a tenant namespace", policy: rbacBindingPolicy, want: "may bind only the ClusterRole admin, not the ClusterRole rbac-test-subset", act: func() error {
			return createBinding(binding(tenantNS, "tenant-admins", "rbac-test-subset", tn, alice))
		}},
		{name: "a binding of another name", policy: rbacBindingPolicy, want: "names its RoleBinding tenant-admins, not rbac-admin", act: func() error {
			return createBinding(binding(tenantNS, "rbac-admin", "admin", tn, alice))
		}},
		{name: "bind admin to every user", policy: rbacBindingPolicy, want: subjectsMessage, act: func() error {
			return patchBinding(`{"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:authenticated"}]}`)
		}},
		{name: "bind admin to a ServiceAccount", policy: rbacBindingPolicy, want: subjectsMessage, act: func() error {
			return patchBinding(`{"subjects":[{"kind":"ServiceAccount","name":"default","namespace":"` + tenantNS + `"}]}`)
		}},
		{name: "a quota in a tenant namespace", act: func() error {
			_, err := asAccount.CoreV1().ResourceQuotas(tenantNS).Create(ctx, quota(tenantNS, tn), metav1.CreateOptions{})
			return err
		}},
		{name: "a quota in default", policy: rbacTenantPolicy, want: outside("resourcequotas"), act: func() error {
			_, err := asAccount.CoreV1().ResourceQuotas("default").Create(ctx, quota("default", tn), metav1.CreateOptions{})
			return err
		}},
		{name: "a quota in a tenant namespace, controlled by another Tenant", policy: rbacTenantPolicy,
			want: "writes resourcequotas only in the namespace of the Tenant controlling them (" + other.Name + "), not in " + tenantNS, act: func() error {
				q := quota(tenantNS, other)
				q.Name = "rbac-other"
				_, err := asAccount.CoreV1().ResourceQuotas(tenantNS).Create(ctx, q, metav1.CreateOptions{})
				return err
			}},
		{name: "limits in a tenant namespace", act: func() error {
			_, err := asAccount.CoreV1().LimitRanges(tenantNS).Create(ctx, limits(tenantNS, "rbac"), metav1.CreateOptions{})
			return err
		}},
		{name: "limits in default", policy: rbacTenantPolicy, want: outside("limitranges"), act: func() error {
			_, err := asAccount.CoreV1().LimitRanges("default").Create(ctx, limits("default", "rbac"), metav1.CreateOptions{})
			return err
		}},
		// An admin's LimitRange in the tenant's namespace, which the
		// account then tries to adopt.
		{name: "(an admin's limits in a tenant namespace)", act: func() error {
			l := limits(tenantNS, tenant.LimitRangeName)
			l.OwnerReferences = nil
			_, err := admin.CoreV1().LimitRanges(tenantNS).Create(ctx, l, metav1.CreateOptions{})
			return err
		}},
		{name: "adopt limits by adding the Tenant as their controller", policy: rbacTenantPolicy,
			want: "may not change the owner references of limitranges " + tenant.LimitRangeName, act: func() error {
				patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": controlledBy(tn)}})
				if err != nil {
					return err
				}
				_, err = asAccount.CoreV1().LimitRanges(tenantNS).Patch(ctx, tenant.LimitRangeName, types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			}},
		{name: "a network policy in a tenant namespace", act: func() error {
			_, err := asAccount.NetworkingV1().NetworkPolicies(tenantNS).Create(ctx, ownedNetworkPolicy(tenant.NetworkPolicyName), metav1.CreateOptions{})
			return err
		}},
		{name: "a network policy with a finalizer", policy: rbacTenantPolicy, want: "may not set finalizers on networkpolicies held", act: func() error {
			np := ownedNetworkPolicy("held")
			np.Finalizers = []string{"example.com/hold"}
			_, err := asAccount.NetworkingV1().NetworkPolicies(tenantNS).Create(ctx, np, metav1.CreateOptions{})
			return err
		}},
		{name: "delete a network policy in a tenant namespace", act: func() error {
			return asAccount.NetworkingV1().NetworkPolicies(tenantNS).Delete(ctx, tenant.NetworkPolicyName, metav1.DeleteOptions{})
		}},
		{name: "delete a network policy no Tenant controls", policy: rbacTenantPolicy, want: notControlled("networkpolicies", tenant.NetworkPolicyName), act: func() error {
			return asAccount.NetworkingV1().NetworkPolicies(strayNS).Delete(ctx, tenant.NetworkPolicyName, metav1.DeleteOptions{})
		}},
		{name: "a network policy in default", policy: rbacTenantPolicy, want: outside("networkpolicies"), act: func() error {
			_, err := asAccount.NetworkingV1().NetworkPolicies("default").Create(ctx, ownedNetworkPolicy("isolation"), metav1.CreateOptions{})
			return err
		}},
		{name: "delete a network policy in default", policy: rbacTenantPolicy, want: outside("networkpolicies"), act: func() error {
			return asAccount.NetworkingV1().NetworkPolicies("default").Delete(ctx, tenant.NetworkPolicyName, metav1.DeleteOptions{})
		}},
	} {
		// In order: the tenant namespace is created first.
		err := tc.act()
		switch {
		case tc.policy == "" && err != nil:
			t.Errorf("%s: got %v, want it allowed", tc.name, err)
		case tc.policy != "" && !rbacRefused(err, tc.policy, tc.want):
			t.Errorf("%s: got %v, want it refused by %s: %s", tc.name, err, tc.policy, tc.want)
		}
	}
}

// rbacRefused reports whether err is a refusal by the admission policy
// whose message includes want.
func rbacRefused(err error, policy, want string) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'") &&
		strings.Contains(err.Error(), want)
}

// rbacNetworkPolicy returns a NetworkPolicy denying all ingress, as the
// operator writes for an isolated Tenant.
func rbacNetworkPolicy(name string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
	}
}

// The Deployment runs two leader-elected replicas, locked down, as the
// ServiceAccount the roles are bound to.
func TestRBACDeploymentIsHardened(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(rbacDeployDir, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		t.Fatalf("deployment.yaml: %v", err)
	}
	if d.Namespace != operator.DefaultNamespace {
		t.Errorf("got namespace %q, want %q (the Role for the Lease is there)", d.Namespace, operator.DefaultNamespace)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("got replicas %v, want 2", d.Spec.Replicas)
	}
	if d.Spec.Selector == nil || d.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "multi-resource" ||
		d.Spec.Template.Labels["app.kubernetes.io/name"] != "multi-resource" {
		t.Errorf("got selector %v and pod labels %v, want app.kubernetes.io/name=multi-resource in both", d.Spec.Selector, d.Spec.Template.Labels)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != operator.DefaultName {
		t.Errorf("got service account %q, want %s", pod.ServiceAccountName, operator.DefaultName)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("got pod security context %+v, want runAsNonRoot as 65532 and RuntimeDefault seccomp", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("got %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "kooper/multi-resource" {
		t.Errorf("got image %q, want kooper/multi-resource (the kustomization's images: sets it)", c.Image)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("got container security context %+v, want a read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("got resources %+v, want cpu and memory requests and a memory limit", c.Resources)
	}
	if slices.Contains(c.Args, "-leader-elect=false") {
		t.Error("leader election is off in a 2-replica Deployment")
	}
	for _, arg := range []string{"-http-addr=:8080", "-metrics-secure-addr=:8443", "-log-format=json"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("got args %q, want %s", c.Args, arg)
		}
	}
	if !slices.Contains(c.Ports, corev1.ContainerPort{Name: "http", ContainerPort: 8080}) ||
		!slices.Contains(c.Ports, corev1.ContainerPort{Name: "https-metrics", ContainerPort: 8443}) {
		t.Errorf("got ports %+v, want http on 8080 (-http-addr) and https-metrics on 8443 (-metrics-secure-addr)", c.Ports)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port.String() != "http" ||
		c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port.String() != "http" {
		t.Errorf("got probes %+v %+v, want /readyz and /healthz on port http", c.ReadinessProbe, c.LivenessProbe)
	}
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAMESPACE" })
	if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("got env %+v, want POD_NAMESPACE from metadata.namespace (where the Lease lives)", c.Env)
	}
}

// The API server accepts the Deployment (server-side dry run: nothing runs)
// once the namespace and ServiceAccount exist.
func TestRBACDeployManifestsApply(t *testing.T) {
	rbacKubectl(t, "apply", "-k", rbacManifestsDir)
	rbacKubectl(t, "apply", "--dry-run=server", "-k", rbacDeployDir)
}

// rbacMetricsReader is what Prometheus needs to scrape /metrics over HTTPS
// (-metrics-secure-addr): metrics_reader_role.yaml must grant exactly this.
var rbacMetricsReader = []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}

// With -metrics-secure-addr the operator has the API server review each
// scraper's token: its ServiceAccount may create TokenReviews and
// SubjectAccessReviews (system:auth-delegator, auth_delegator_binding.yaml),
// and Prometheus's ServiceAccount (metrics_reader_role_binding.yaml) may
// get /metrics and read nothing.
func TestRBACMetricsBindingsLetTheOperatorReviewAndPrometheusScrape(t *testing.T) {
	if got := rbactest.ReadRules(t, filepath.Join(rbacManifestsDir, "metrics_reader_role.yaml")); !reflect.DeepEqual(got, rbacMetricsReader) {
		t.Errorf("metrics_reader_role.yaml: got rules %+v\nwant exactly %+v", got, rbacMetricsReader)
	}
	rbacKubectl(t, "apply", "-k", rbacManifestsDir)
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	rbactest.CheckAllowed(t, client, rbacUser, rbactest.ServiceAccountGroups(operator.DefaultNamespace), "", []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	})
	const prometheus = "system:serviceaccount:" + e2etest.PrometheusNamespace + ":" + e2etest.PrometheusAccount
	groups := rbactest.ServiceAccountGroups(e2etest.PrometheusNamespace)
	rbactest.CheckAllowed(t, client, prometheus, groups, "", rbacMetricsReader)
	for _, d := range []authorizationv1.ResourceAttributes{
		{Group: "tenancy.kooperkit.io", Resource: "tenants", Verb: "list"},
		{Namespace: operator.DefaultNamespace, Resource: "secrets", Verb: "get"},
		{Namespace: "some-tenant", Resource: "pods", Verb: "list"},
	} {
		if rbactest.Can(t, client, prometheus, groups, d) {
			t.Errorf("%s may %s %s/%s in %q, want denied", prometheus, d.Verb, d.Group, d.Resource, d.Namespace)
		}
	}
}

// rbacKubectl runs the cluster's kubectl as admin and fails the test, with
// kubectl's output, if it fails.
func rbacKubectl(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"--kubeconfig", cluster.KubeconfigPath()}, args...)
	out, err := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args[2:], err, out)
	}
}
