package integration_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/internal/rbactest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
)

// podPolicy is the ValidatingAdmissionPolicy of
// manifests/rbac/pod-terminator/pod_policy.yaml: every refusal names it.
const podPolicy = "kooper-pod-terminator-protected-pods"

// RBAC lets the pod-terminator's ServiceAccount delete and evict pods in
// every namespace; the admission policy refuses it in the namespaces the
// handler protects by default, so a stolen token cannot stop kube-system.
// Every request is a server-side dry run: admission runs in full, and no
// pod is deleted.
func TestAStolenTokenDeletesNoPodInAProtectedNamespace(t *testing.T) {
	ctx := context.Background()
	applyKustomizations(t, rbacDir)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	rbactest.CheckPolicyTypes(t, admin, podPolicy, 60*time.Second)
	asAccount := kubernetes.NewForConfigOrDie(e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100))

	open := createNamespace(t, admin, "open-")
	protected := append(slices.Clone(validation.SystemNamespaces), operator.DefaultNamespace)
	name := "victim-" + rand.String(5)
	for _, ns := range append([]string{open}, protected...) {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			// Restricted: kooper-system enforces that level.
			Spec: corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{
					RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none", SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			zero := int64(0)
			_ = admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
	}
	dryRun := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	del := func(ns string) error { return asAccount.CoreV1().Pods(ns).Delete(ctx, name, dryRun) }
	evict := func(ns string) error {
		return asAccount.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, DeleteOptions: &dryRun,
		})
	}
	// A new policy takes a moment to be enforced.
	e2etest.Eventually(t, 60*time.Second, "the policy refuses a delete in kube-system", func() bool {
		return del("kube-system") != nil
	})
	for what, act := range map[string]func(string) error{"delete": del, "evict": evict} {
		if err := act(open); err != nil {
			t.Errorf("%s a pod in %s: %v, want it allowed", what, open, err)
		}
		for _, ns := range protected {
			err := act(ns)
			want := "the pod-terminator never deletes or evicts pods in the protected namespace " + ns
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+podPolicy+"'") ||
				!strings.Contains(err.Error(), want) {
				t.Errorf("%s a pod in %s: got %v, want it refused by %s: %s", what, ns, err, podPolicy, want)
			}
		}
	}
}
