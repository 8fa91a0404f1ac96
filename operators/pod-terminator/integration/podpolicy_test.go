package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
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
			// Restricted: kooper-pod-terminator enforces that level.
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

// secretPolicy is the ValidatingAdmissionPolicy of
// manifests/rbac/pod-terminator/secret_policy.yaml.
const secretPolicy = "kooper-pod-terminator-webhook-secret"

// The pod-terminator's token may create Secrets in its namespace (for its
// webhook's certificate), but only that one, as a TLS Secret: not a
// ServiceAccount token Secret, which would have the token controller mint
// a token for another account of the namespace. And it may read and write
// its own Lease only, not another operator's. Real requests as the
// account; the Secrets are server-side dry runs.
func TestAStolenTokenMintsNoTokenAndTakesNoOtherLease(t *testing.T) {
	ctx := context.Background()
	applyKustomizations(t, rbacDir)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	rbactest.CheckPolicyTypes(t, admin, secretPolicy, 60*time.Second)
	asAccount := kubernetes.NewForConfigOrDie(e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100))
	ns := operator.DefaultNamespace
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	create := func(name string, typ corev1.SecretType, annotations map[string]string, data map[string][]byte) error {
		_, err := asAccount.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations}, Type: typ, Data: data,
		}, dryRun)
		return err
	}
	tls := map[string][]byte{corev1.TLSCertKey: nil, corev1.TLSPrivateKeyKey: nil}
	token := map[string]string{corev1.ServiceAccountNameKey: "multi-resource"}
	e2etest.Eventually(t, 60*time.Second, "the policy refuses a token Secret", func() bool {
		return create(operator.DefaultWebhookSecret, corev1.SecretTypeServiceAccountToken, token, nil) != nil
	})
	refusal := func(name string, typ corev1.SecretType) string {
		return fmt.Sprintf("the pod-terminator writes one Secret, %s of type kubernetes.io/tls, not %s of type %s", operator.DefaultWebhookSecret, name, typ)
	}
	for _, tc := range []struct {
		name        string
		secret      string
		typ         corev1.SecretType
		annotations map[string]string
		data        map[string][]byte
		want        string // in the refusal; "": allowed
	}{
		{name: "its certificate", secret: operator.DefaultWebhookSecret, typ: corev1.SecretTypeTLS, data: tls},
		{name: "a token Secret under its certificate's name", secret: operator.DefaultWebhookSecret, typ: corev1.SecretTypeServiceAccountToken,
			annotations: token, want: refusal(operator.DefaultWebhookSecret, corev1.SecretTypeServiceAccountToken)},
		{name: "a token Secret", secret: "minted", typ: corev1.SecretTypeServiceAccountToken,
			annotations: token, want: refusal("minted", corev1.SecretTypeServiceAccountToken)},
		{name: "a TLS Secret of another name", secret: "other-tls", typ: corev1.SecretTypeTLS, data: tls,
			want: refusal("other-tls", corev1.SecretTypeTLS)},
	} {
		err := create(tc.secret, tc.typ, tc.annotations, tc.data)
		switch {
		case tc.want == "" && err != nil && !apierrors.IsAlreadyExists(err):
			// AlreadyExists: a test before this one ran the operator,
			// which made the Secret; the check comes after admission.
			t.Errorf("%s: %v, want it allowed", tc.name, err)
		case tc.want != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+secretPolicy+"'") ||
			!strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want it refused by %s: %s", tc.name, err, secretPolicy, tc.want)
		}
	}

	// A Lease in its namespace that is not its own (its Role names its
	// Lease only).
	leases := admin.CoordinationV1().Leases(ns)
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "other-operator-" + rand.String(5)}}
	if _, err := leases.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leases.Delete(ctx, other.Name, metav1.DeleteOptions{}) })
	if _, err := asAccount.CoordinationV1().Leases(ns).Get(ctx, other.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("get a Lease not its own: got %v, want forbidden", err)
	}
	if _, err := asAccount.CoordinationV1().Leases(ns).Update(ctx, other, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("update a Lease not its own: got %v, want forbidden", err)
	}
	if _, err := asAccount.CoordinationV1().Leases(ns).Get(ctx, operator.DefaultName, metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("get its own Lease: got %v, want it found or not found", err)
	}
}
