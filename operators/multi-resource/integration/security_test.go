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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// Every name in this file starts with security (tests with TestSecurity):
// the package's other test files are written separately. Tenants get a
// random suffix, so that -count=2 against one control plane works, and are
// deleted when the test ends: the end-to-end test expects every Tenant it
// lists to be Ready.

// A Tenant's admins get admin in its namespace: its Pod Security level is
// what keeps them from running privileged or hostPath pods (and so from
// taking over a node). The API server's PodSecurity admission enforces it.
func TestSecurityTenantNamespacesEnforcePodSecurity(t *testing.T) {
	ctx := context.Background()
	kube, tenants := securityClients(t)
	securityOperator(t)

	restricted := securityTenant(t, tenants, "psa-r", "")
	baseline := securityTenant(t, tenants, "psa-b", tenancyv1alpha1.PodSecurityBaseline)
	if restricted.Spec.PodSecurity != tenancyv1alpha1.PodSecurityRestricted {
		t.Errorf("got podSecurity %q, want the schema's default restricted", restricted.Spec.PodSecurity)
	}

	for _, tn := range []*tenancyv1alpha1.Tenant{restricted, baseline} {
		t.Run("the namespace of a "+string(tn.Spec.PodSecurity)+" Tenant has its Pod Security labels", func(t *testing.T) {
			securityReady(t, tenants, tn.Name)
			ns, err := kube.CoreV1().Namespaces().Get(ctx, tenant.Namespace(tn), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			level := string(tn.Spec.PodSecurity)
			for label, want := range map[string]string{
				"pod-security.kubernetes.io/enforce": level, "pod-security.kubernetes.io/enforce-version": "latest",
				"pod-security.kubernetes.io/warn": level, "pod-security.kubernetes.io/audit": level,
			} {
				if got := ns.Labels[label]; got != want {
					t.Errorf("got label %s=%q, want %q", label, got, want)
				}
			}
		})
	}

	t.Run("in a restricted namespace the admin may create only restricted pods", func(t *testing.T) {
		pods := securityAdminPods(t, kube, restricted)
		for _, p := range []struct {
			name string
			pod  *corev1.Pod
		}{
			{"privileged", securityPod("privileged", func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			})},
			{"hostPath", securityPod("hostpath", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			})},
			{"meeting baseline only", securityPod("baseline", nil)},
		} {
			_, err := pods.Create(ctx, p.pod, metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
				t.Errorf("%s pod: got %v, want it refused by PodSecurity restricted", p.name, err)
			}
		}
		if _, err := pods.Create(ctx, securityPod("restricted", securityRestricted), metav1.CreateOptions{}); err != nil {
			t.Errorf("restricted pod: got %v, want it created", err)
		}
	})

	t.Run("in a baseline namespace a pod meeting baseline is accepted, a privileged one is not", func(t *testing.T) {
		pods := securityAdminPods(t, kube, baseline)
		if _, err := pods.Create(ctx, securityPod("baseline", nil), metav1.CreateOptions{}); err != nil {
			t.Errorf("baseline pod: got %v, want it created", err)
		}
		_, err := pods.Create(ctx, securityPod("privileged", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`) {
			t.Errorf("privileged pod: got %v, want it refused by PodSecurity baseline", err)
		}
	})

	t.Run("a hand edit of the enforce label is undone", func(t *testing.T) {
		name := tenant.Namespace(restricted)
		patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`)
		if _, err := kube.CoreV1().Namespaces().Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		e2etest.Eventually(t, 30*time.Second, "the enforce label is restricted again", func() bool {
			ns, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return err == nil && ns.Labels["pod-security.kubernetes.io/enforce"] == "restricted"
		})
	})
}

// The schema keeps a Tenant from granting more than admin in its own
// namespace to people: no Kubernetes identities or groups as admins
// (system:authenticated is every user), no privileged Pod Security level.
func TestSecurityTheAPIServerRefusesEscalatingTenants(t *testing.T) {
	ctx := context.Background()
	_, tenants := securityClients(t)
	const systemMsg = "admins must not name a system: user or group"
	for _, tt := range []struct {
		name string
		spec tenancyv1alpha1.TenantSpec
		want string
	}{
		{"every authenticated user as admin", tenancyv1alpha1.TenantSpec{
			Admins: []tenancyv1alpha1.Admin{{Kind: "Group", Name: "system:authenticated"}},
		}, systemMsg},
		{"every workload as admin", tenancyv1alpha1.TenantSpec{
			Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "system:serviceaccounts"}},
		}, systemMsg},
		{"a node as admin", tenancyv1alpha1.TenantSpec{
			Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "system:node:worker-1"}},
		}, systemMsg},
		{"the privileged Pod Security level", tenancyv1alpha1.TenantSpec{
			Admins:      []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}},
			PodSecurity: "privileged",
		}, `spec.podSecurity: Unsupported value: "privileged": supported values: "restricted", "baseline"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			name := securityName("refused")
			_, err := tenants.Create(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tt.spec}, metav1.CreateOptions{})
			if err == nil {
				_ = tenants.Delete(ctx, name, metav1.DeleteOptions{})
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want Invalid with %q", err, tt.want)
			}
		})
	}
}

// A Tenant deleted with orphan propagation leaves its namespace, with
// everything in it, and no owner. A new Tenant of the same name is another
// Tenant (another UID): the operator, which made the namespace and still
// remembers it, must not hand it over nor bind the new admins in it.
func TestSecurityANewTenantOfTheSameNameNeverTakesOverTheNamespace(t *testing.T) {
	ctx := context.Background()
	kube, tenants := securityClients(t)
	securityOperator(t)

	old := securityTenant(t, tenants, "orphan", "")
	name, ns := old.Name, tenant.Namespace(old)
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	securityReady(t, tenants, name)
	// Give the garbage collector's watches time to see the children, so
	// that it orphans them rather than collecting them (see below): not
	// needed to pass, only to check the RoleBinding more often.
	time.Sleep(2 * time.Second)

	if err := tenants.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	// The garbage collector removes the owner references, then the Tenant.
	e2etest.Eventually(t, 120*time.Second, "the Tenant is gone and its namespace orphaned", func() bool {
		_, err := tenants.Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false
		}
		got, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.DeletionTimestamp == nil && len(got.OwnerReferences) == 0
	})

	again, err := tenants.Create(ctx, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "mallory-" + name}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.UID == old.UID {
		t.Fatalf("got the same UID %s for the new Tenant", again.UID)
	}
	var ready metav1.Condition
	e2etest.Eventually(t, 30*time.Second, "the new Tenant has a Ready condition", func() bool {
		got, err := tenants.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == tenancyv1alpha1.ConditionReady && c.ObservedGeneration == got.Generation {
				ready = c
				return true
			}
		}
		return false
	})
	if ready.Status != metav1.ConditionFalse || ready.Reason != tenancyv1alpha1.ReasonNamespaceConflict {
		t.Errorf("got Ready %s %s %q, want False NamespaceConflict", ready.Status, ready.Reason, ready.Message)
	}
	// The garbage collector orphans the dependents it knows of; one made an
	// instant before the deletion may not be in its graph yet, and is then
	// collected instead (its owner is gone). Either way, the new admins
	// must not be bound.
	binding, err := kube.RbacV1().RoleBindings(ns).Get(ctx, tenant.RoleBindingName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		t.Logf("the garbage collector deleted the old RoleBinding instead of orphaning it, and none was made")
	case err != nil:
		t.Fatal(err)
	default:
		want := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice-" + name}}
		if !slices.Equal(binding.Subjects, want) {
			t.Errorf("got binding subjects %+v, want the old admins %+v only", binding.Subjects, want)
		}
	}
	got, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 0 {
		t.Errorf("got namespace owners %+v, want none: the namespace was adopted", got.OwnerReferences)
	}
}

// A Tenant deleted and made again at once under the same name finds its
// namespace still there, owned by the earlier Tenant until the garbage
// collector deletes it: the new Tenant waits for that (NamespaceDeleting),
// never adopts it, and gets a namespace of its own once it is gone.
func TestSecurityATenantMadeAgainAtOnceWaitsForItsOldNamespace(t *testing.T) {
	ctx := context.Background()
	kube, tenants := securityClients(t)
	securityOperator(t)

	old := securityTenant(t, tenants, "again", "")
	name, ns := old.Name, tenant.Namespace(old)
	securityReady(t, tenants, name)
	if err := tenants.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2etest.Eventually(t, 30*time.Second, "the old Tenant is gone", func() bool {
		_, err := tenants.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	again, err := tenants.Create(ctx, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice-" + name}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Deleting a namespace takes the namespace controller a while, longer
	// than the default 30 s on a loaded machine: wait for it.
	e2etest.Eventually(t, 120*time.Second, "the new Tenant is Ready", func() bool { return ready(t, tenants, name, 4) })
	got, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !tenant.OwnedBy(got, again) {
		t.Errorf("got namespace owners %+v, want the new Tenant %s", got.OwnerReferences, again.UID)
	}
	if got.UID == "" || got.CreationTimestamp.Before(&again.CreationTimestamp) {
		t.Errorf("got a namespace made at %s, before the new Tenant (%s): the old one was adopted", got.CreationTimestamp, again.CreationTimestamp)
	}
}

// securityClients returns admin clients of the cluster, with the CRD and the
// operator's RBAC installed.
func securityClients(t *testing.T) (*kubernetes.Clientset, securityTenants) {
	t.Helper()
	e2eManifests(t)
	cfg := rest.CopyConfig(cluster.Config())
	return kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg).TenancyV1alpha1().Tenants()
}

type securityTenants = interface {
	Create(context.Context, *tenancyv1alpha1.Tenant, metav1.CreateOptions) (*tenancyv1alpha1.Tenant, error)
	Get(context.Context, string, metav1.GetOptions) (*tenancyv1alpha1.Tenant, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// securityOperator runs the operator as its ServiceAccount until the test
// ends. Without leader election: it runs alone, and need not wait for the
// Lease of the operator of a previous test.
func securityOperator(t *testing.T) {
	t.Helper()
	cfg := operator.Config{
		REST:                  e2etest.AsServiceAccount(cluster.Config(), "kooper-multi-resource", "multi-resource", 100, 200),
		DisableLeaderElection: true,
		Logger:                log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
}

// securityName returns prefix with a random suffix.
func securityName(prefix string) string { return fmt.Sprintf("%s-%08x", prefix, rand.Uint32()) }

// securityTenant creates a Tenant named prefix with a random suffix, whose
// admin is the user alice-<name>, and deletes it when the test ends.
func securityTenant(t *testing.T, tenants securityTenants, prefix string, level tenancyv1alpha1.PodSecurityLevel) *tenancyv1alpha1.Tenant {
	t.Helper()
	name := securityName(prefix)
	tn, err := tenants.Create(context.Background(), &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Admins:      []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice-" + name}},
			PodSecurity: level,
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
	return tn
}

// securityReady waits until the Tenant name is Ready.
func securityReady(t *testing.T, tenants securityTenants, name string) {
	t.Helper()
	e2etest.Eventually(t, 30*time.Second, name+" is Ready", func() bool { return ready(t, tenants, name, 4) })
}

// securityAdminPods returns the pods of tn's namespace as its admin, once
// pods can be admitted there at all: the default ServiceAccount exists and
// the quota controller has counted the quota.
func securityAdminPods(t *testing.T, kube *kubernetes.Clientset, tn *tenancyv1alpha1.Tenant) interface {
	Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
} {
	t.Helper()
	ctx, ns := context.Background(), tenant.Namespace(tn)
	e2etest.Eventually(t, 60*time.Second, "the namespace "+ns+" can admit pods", func() bool {
		if _, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false
		}
		q, err := kube.CoreV1().ResourceQuotas(ns).Get(ctx, tenant.QuotaName, metav1.GetOptions{})
		return err == nil && len(q.Status.Hard) > 0
	})
	cfg := rest.CopyConfig(cluster.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tn.Spec.Admins[0].Name, Groups: []string{"system:authenticated"}}
	return kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(ns)
}

// securityPod returns a pod with one container, changed by edit.
func securityPod(name string, edit func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if edit != nil {
		edit(p)
	}
	return p
}

// securityRestricted makes p meet the restricted standard.
func securityRestricted(p *corev1.Pod) {
	p.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
