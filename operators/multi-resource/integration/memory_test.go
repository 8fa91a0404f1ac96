package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// Every name in this file starts with memory (tests with TestMemory): the
// package's other test files are written separately. The Tenant gets a
// random suffix, so that -count=3 against one control plane works, and is
// deleted when the test ends: the end-to-end test expects every Tenant it
// lists to be Ready.

const (
	// memoryObjects is the Tenant's quota.objects: its admins may hold
	// this many RoleBindings in the namespace, the operator's included.
	memoryObjects = 30
	// memoryExtra is how many RoleBindings the admin tries to create.
	memoryExtra = 50
	// memoryAnnotation is the annotation the admin writes, of
	// memoryBallast bytes: the annotations of an object may total 256 KiB.
	memoryAnnotation = "memory.kooperkit.io/ballast"
	memoryBallast    = 100 << 10
	// memoryMarker is an annotation the admin changes last on the
	// operator's RoleBinding: once the operator's cache holds that version,
	// its watch has delivered every earlier change (a watch delivers the
	// changes in order).
	memoryMarker = "memory.kooperkit.io/marker"
)

// A Tenant's admins can create, in their namespace, objects labelled as
// the operator's children, and annotate the children they may edit (the
// RoleBinding tenant-admins, the NetworkPolicy tenant-default-deny): none
// of it may grow what the operator keeps in memory. Each child source
// lists and watches, in every namespace, only the child's fixed name (one
// object per namespace whatever tenants create), and caches only what the
// operator reads of it: no annotations, no managedFields. The namespace's
// quota also caps how many RoleBindings (and other objects) the admins
// may create.
func TestMemoryTenantAdminsCannotGrowTheOperatorsCaches(t *testing.T) {
	ctx := context.Background()
	e2eManifests(t)
	kube := kubernetes.NewForConfigOrDie(cluster.Config())
	tenants := versioned.NewForConfigOrDie(cluster.Config()).TenancyV1alpha1().Tenants()

	// Without leader election, as the security tests: it runs alone, and
	// need not wait for the Lease of the operator of a previous test.
	caches := &operator.ChildObjects{}
	cfg := operator.Config{
		REST:                  e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 100, 200),
		DisableLeaderElection: true,
		ChildObjects:          caches,
		Logger:                log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })

	name := fmt.Sprintf("memory-%08x", rand.Uint32())
	adminName := "alice-" + name
	tn, err := tenants.Create(ctx, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Admins:           []tenancyv1alpha1.Admin{{Kind: "User", Name: adminName}},
			NetworkIsolation: true,
			Quota: &tenancyv1alpha1.Quota{
				CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), Pods: 20, Objects: memoryObjects,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tenants.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("could not delete Tenant %s: %v", name, err)
		}
	})
	ns := tenant.Namespace(tn)
	e2etest.Eventually(t, 30*time.Second, name+" is Ready", func() bool { return ready(t, tenants, name, 5) })

	adminCfg := rest.CopyConfig(cluster.Config())
	adminCfg.Impersonate = rest.ImpersonationConfig{UserName: adminName, Groups: []string{"system:authenticated"}}
	adminCfg.QPS, adminCfg.Burst = 100, 200
	asAdmin := kubernetes.NewForConfigOrDie(adminCfg)
	ballast := strings.Repeat("x", memoryBallast)
	annotate := func(key, value string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, key, value)
	}

	t.Run("the admin annotates the operator's RoleBinding and NetworkPolicy", func(t *testing.T) {
		if _, err := asAdmin.RbacV1().RoleBindings(ns).Patch(ctx, tenant.RoleBindingName, types.MergePatchType, annotate(memoryAnnotation, ballast), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := asAdmin.NetworkingV1().NetworkPolicies(ns).Patch(ctx, tenant.NetworkPolicyName, types.MergePatchType, annotate(memoryAnnotation, ballast), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	countRoleBindings := corev1.ResourceName("count/rolebindings.rbac.authorization.k8s.io")
	t.Run("the namespace's quota counts RoleBindings", func(t *testing.T) {
		// Admission enforces a quota's limits once the quota controller has
		// counted them.
		e2etest.Eventually(t, 30*time.Second, "the quota controller has counted the RoleBindings of "+ns, func() bool {
			q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, tenant.QuotaName, metav1.GetOptions{})
			if err != nil {
				return false
			}
			_, used := q.Status.Used[countRoleBindings]
			return used && q.Status.Hard.Name(countRoleBindings, resource.DecimalSI).Value() == memoryObjects
		})
	})

	t.Run("the admin's RoleBindings beyond the quota are refused", func(t *testing.T) {
		created, refused := 0, 0
		for i := range memoryExtra {
			_, err := asAdmin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("extra-%02d", i),
					// Labelled as the operator's own.
					Labels:      map[string]string{tenant.ManagedByLabel: tenant.ManagedBy, tenant.TenantLabel: name},
					Annotations: map[string]string{memoryAnnotation: ballast},
				},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob-" + name}},
			}, metav1.CreateOptions{})
			switch {
			case err == nil:
				created++
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
				refused++
			default:
				t.Fatalf("extra-%02d: got %v, want it created or refused by the quota", i, err)
			}
		}
		t.Logf("the admin created %d RoleBindings; the quota refused %d", created, refused)
		// The operator's RoleBinding counts too, unless the quota
		// controller counted before it was made (it counts it at its next
		// full recount).
		if created != memoryObjects-1 && created != memoryObjects {
			t.Errorf("got %d RoleBindings created, want %d (quota.objects %d, less the operator's)", created, memoryObjects-1, memoryObjects)
		}
	})

	t.Run("the operator caches none of them, and no annotations", func(t *testing.T) {
		marked, err := asAdmin.RbacV1().RoleBindings(ns).Patch(ctx, tenant.RoleBindingName, types.MergePatchType, annotate(memoryMarker, "last"), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		policy, err := kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, tenant.NetworkPolicyName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cached := func(kind, name, rv string) func() bool {
			return func() bool {
				objs, ok := caches.List(kind)
				return ok && slices.ContainsFunc(objs, func(m *metav1.PartialObjectMetadata) bool {
					return m.Namespace == ns && m.Name == name && m.ResourceVersion == rv
				})
			}
		}
		e2etest.Eventually(t, 30*time.Second, "the operator's cache holds the marked RoleBinding", cached(tenant.KindRoleBinding, tenant.RoleBindingName, marked.ResourceVersion))
		e2etest.Eventually(t, 30*time.Second, "the operator's cache holds the annotated NetworkPolicy", cached(tenant.KindNetworkPolicy, tenant.NetworkPolicyName, policy.ResourceVersion))

		names := map[string]string{
			tenant.KindResourceQuota: tenant.QuotaName, tenant.KindLimitRange: tenant.LimitRangeName,
			tenant.KindRoleBinding: tenant.RoleBindingName, tenant.KindNetworkPolicy: tenant.NetworkPolicyName,
		}
		for _, kind := range []string{tenant.KindNamespace, tenant.KindResourceQuota, tenant.KindLimitRange, tenant.KindRoleBinding, tenant.KindNetworkPolicy} {
			objs, ok := caches.List(kind)
			if !ok {
				t.Errorf("%s: the cache has not synced", kind)
				continue
			}
			var inNamespace, foreign, annotated []string
			for _, m := range objs {
				key := m.Namespace + "/" + m.Name
				if kind != tenant.KindNamespace && m.Name != names[kind] {
					foreign = append(foreign, key)
				}
				if m.Namespace == ns {
					inNamespace = append(inNamespace, m.Name)
				}
				if len(m.Annotations) > 0 || len(m.ManagedFields) > 0 {
					annotated = append(annotated, fmt.Sprintf("%s (%d annotation bytes, %d managedFields entries)", key, memoryAnnotationBytes(m.Annotations), len(m.ManagedFields)))
				}
				ours := m.Namespace == ns && (kind == tenant.KindNamespace || m.Name == names[kind]) || kind == tenant.KindNamespace && m.Name == ns
				if ref := metav1.GetControllerOfNoCopy(m); ours && (ref == nil || ref.UID != tn.UID) {
					t.Errorf("%s %s: got controller %+v cached, want Tenant %s", kind, key, ref, tn.UID)
				}
			}
			if len(foreign) > 0 {
				t.Errorf("%s: got %d cached objects not named %s: %s; want none", kind, len(foreign), names[kind], memoryNames(foreign, 3))
			}
			if len(annotated) > 0 {
				t.Errorf("%s: got %d cached objects with annotations or managedFields: %s; want none", kind, len(annotated), memoryNames(annotated, 3))
			}
			if kind != tenant.KindNamespace && len(inNamespace) != 1 {
				t.Errorf("%s: got %d cached in %s, want 1, %s", kind, len(inNamespace), ns, names[kind])
			}
		}
	})

	t.Run("the Tenant is still Ready", func(t *testing.T) {
		e2etest.Eventually(t, 30*time.Second, name+" is Ready", func() bool { return ready(t, tenants, name, 5) })
	})
}

func memoryAnnotationBytes(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

// memoryNames returns at most n of names, and how many more there are.
func memoryNames(names []string, n int) string {
	slices.Sort(names)
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
