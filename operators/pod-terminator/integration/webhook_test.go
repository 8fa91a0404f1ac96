package integration_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	chaosclient "github.com/kooperkit/kooper/apis/client/clientset/versioned/typed/chaos/v1beta1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// The operator deletes pods with its own rights, everywhere: the webhook
// lets a user create or retarget a PodTerminator only where that user may
// delete pods (no confused deputy), and never in a protected namespace.
func TestAPodTerminatorTargetsOnlyPodsItsWriterMayDelete(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())

	// alice may delete pods in mine only; guarded is protected by whoever
	// runs the operator.
	mine, theirs, guarded := createNamespace(t, admin, "mine-"), createNamespace(t, admin, "theirs-"), createNamespace(t, admin, "guarded-")
	const user = "alice"
	grant(t, admin, user, mine)

	addr := e2etest.FreeAddr(t)
	registerWebhook(t, admin, addr)
	cfg := operator.Config{
		REST:                  e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100),
		ProtectedNamespaces:   []string{guarded},
		DisableLeaderElection: true,
		Registry:              prom.NewRegistry(),
		Webhook:               operator.Webhook{Addr: addr, Hosts: []string{"127.0.0.1"}},
		Logger:                log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })

	asAdmin := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()
	impersonated := rest.CopyConfig(cluster.Config())
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: user}
	asAlice := versioned.NewForConfigOrDie(impersonated).ChaosV1beta1().PodTerminators()

	// Until the API server has read the webhook configuration it admits
	// every create, and until it has the injected CA, and the new
	// bindings, the answers are TLS errors or RBAC refusals: wait for the
	// webhook's own answers.
	waitFor(t, 30*time.Second, "the webhook refuses alice a namespace where she may not delete pods", func() error {
		err := tryCreate(ctx, asAlice, theirs)
		switch {
		case err == nil:
			return errors.New("admitted: the API server has not called the webhook")
		case strings.Contains(err.Error(), `admission webhook "podterminators.chaos.kooperkit.io" denied the request`):
			return nil
		}
		return fmt.Errorf("got %w, want the webhook's refusal", err)
	})
	waitFor(t, 30*time.Second, "alice may create a PodTerminator targeting her namespace", func() error {
		return tryCreate(ctx, asAlice, mine)
	})

	// refused is the refusal of alice's create: it names the targets as
	// asked, never which of them she may delete pods in.
	refused := func(targets string) string {
		return fmt.Sprintf(`user "alice" may not delete pods in every namespace this PodTerminator targets: %s; a PodTerminator deletes pods in your name, so creating one needs that permission`, targets)
	}
	tests := []struct {
		name       string
		client     chaosclient.PodTerminatorInterface
		namespaces []string
		want       string // substring of the refusal; empty: accepted
	}{
		{name: "alice, in her namespace", client: asAlice, namespaces: []string{mine}},
		{name: "alice, in a namespace where she may not delete pods", client: asAlice, namespaces: []string{theirs},
			want: `admission webhook "podterminators.chaos.kooperkit.io" denied the request: ` + refused(fmt.Sprintf("%q", theirs))},
		{name: "alice, in hers and another, is refused naming both, as asked", client: asAlice, namespaces: []string{mine, theirs},
			want: refused(fmt.Sprintf("%q, %q", mine, theirs))},
		{name: "alice, in every namespace", client: asAlice,
			want: refused("every namespace (spec.namespaces is empty)")},
		{name: "the admin (system:masters), in any namespace", client: asAdmin, namespaces: []string{theirs}},
		{name: "the admin, in every namespace", client: asAdmin},
		{name: "the admin, in a namespace the operator's runner protects", client: asAdmin, namespaces: []string{guarded},
			want: fmt.Sprintf(`spec.namespaces: %q is protected: the pod-terminator never terminates pods in`, guarded)},
		{name: "alice, in a namespace the operator's runner protects", client: asAlice, namespaces: []string{guarded},
			want: fmt.Sprintf(`spec.namespaces: %q is protected`, guarded)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tryCreate(ctx, tt.client, tt.namespaces...)
			checkAnswer(t, err, tt.want)
		})
	}

	t.Run("an update is checked as its writer when it makes the PodTerminator more destructive", func(t *testing.T) {
		// Created by the admin, targeting a namespace where alice may not
		// delete pods; kept, so that the operator adds its finalizer.
		pt, err := asAdmin.Create(ctx, terminatorIn(theirs), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteTerminator(t, asAdmin, pt.Name) })
		// Less destructive: allowed, nothing to check.
		err = tryUpdate(ctx, asAlice, pt.Name, func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Percent = 5 })
		checkAnswer(t, err, "")
		// More destructive (deputy_test.go tries every way): checked.
		const more = `user "alice" may not delete pods in every namespace this PodTerminator targets: %s; a PodTerminator deletes pods in your name, so making one more destructive (%s) needs that permission`
		err = tryUpdate(ctx, asAlice, pt.Name, func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Percent = 20 })
		checkAnswer(t, err, fmt.Sprintf(more, fmt.Sprintf("%q", theirs), "spec.termination.percent raised"))
		err = tryUpdate(ctx, asAlice, pt.Name, func(s *chaosv1beta1.PodTerminatorSpec) {
			s.Selector.MatchLabels = map[string]string{"app": "someone-elses"}
		})
		checkAnswer(t, err, fmt.Sprintf(more, fmt.Sprintf("%q", theirs), "spec.selector changed"))
		err = tryUpdate(ctx, asAlice, pt.Name, func(s *chaosv1beta1.PodTerminatorSpec) { s.Namespaces = nil })
		checkAnswer(t, err, fmt.Sprintf(more, "every namespace (spec.namespaces is empty)", "spec.namespaces changed"))
		err = tryUpdate(ctx, asAlice, pt.Name, func(s *chaosv1beta1.PodTerminatorSpec) { s.Namespaces = []string{mine} })
		checkAnswer(t, err, "")
	})
}

// The CRD schema bounds spec.namespaces: at most 64 entries, each a
// namespace name. The API server refuses before any webhook is called.
func TestTheSchemaBoundsTheNamespaces(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	terminators := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprintf("team-%d", i)
	}
	tests := []struct {
		name       string
		namespaces []string
		want       string
	}{
		{name: "65 namespaces", namespaces: many, want: "spec.namespaces: Too many: 65: must have at most 64 items"},
		{name: "an entry that is not a namespace name", namespaces: []string{"shop", "Not_A_Namespace"},
			want: "spec.namespaces[1] in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"},
		{name: "an entry longer than a namespace name", namespaces: []string{strings.Repeat("a", 64)},
			want: "spec.namespaces[0]: Too long: may not be more than 63 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tryCreate(ctx, terminators, tt.namespaces...)
			checkAnswer(t, err, tt.want)
			if !apierrors.IsInvalid(err) {
				t.Errorf("got %v, want Invalid (the schema's refusal)", err)
			}
		})
	}
	t.Run("64 namespaces", func(t *testing.T) {
		checkAnswer(t, tryCreate(ctx, terminators, many[:64]...), "")
	})
}

// terminatorIn returns a dry-run PodTerminator whose selector matches no
// pod, targeting namespaces (every one when empty).
func terminatorIn(namespaces ...string) *chaosv1beta1.PodTerminator {
	return &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "access-"},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "no-such-app"}},
			Namespaces:  namespaces,
			Termination: chaosv1beta1.Termination{Percent: 10},
			DryRun:      true,
		},
	}
}

// tryCreate creates terminatorIn(namespaces) as a server-side dry run:
// admission runs in full, nothing is stored.
func tryCreate(ctx context.Context, c chaosclient.PodTerminatorInterface, namespaces ...string) error {
	_, err := c.Create(ctx, terminatorIn(namespaces...), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// tryUpdate edits the spec of the PodTerminator name, trying again on a
// conflict (the operator writes its finalizer).
func tryUpdate(ctx context.Context, c chaosclient.PodTerminatorInterface, name string, edit func(*chaosv1beta1.PodTerminatorSpec)) error {
	for {
		pt, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(&pt.Spec)
		_, err = c.Update(ctx, pt, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// checkAnswer fails the test unless err is nil (want empty) or a refusal
// saying want.
func checkAnswer(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("got %v, want accepted", err)
	case want == "":
	case err == nil:
		t.Errorf("got accepted, want refused with %q", want)
	case !strings.Contains(err.Error(), want):
		t.Errorf("got %v, want a refusal saying %q", err, want)
	case !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) && !apierrors.IsBadRequest(err):
		t.Errorf("got %v, want a refusal (Invalid, Forbidden or BadRequest)", err)
	}
}

// waitFor polls try every 100ms until it returns nil, or fails the test
// after timeout with the last error.
func waitFor(t *testing.T, timeout time.Duration, what string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s: %v", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// grant lets user create, read and update PodTerminators (cluster-scoped: a
// ClusterRoleBinding) and delete pods in namespace only (a RoleBinding), and
// removes that when the test ends.
func grant(t *testing.T, client kubernetes.Interface, user, namespace string) {
	t.Helper()
	ctx := context.Background()
	rbac := client.RbacV1()
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	writer, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "podterminator-writer-"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{chaosv1beta1.GroupName}, Resources: []string{"podterminators"}, Verbs: []string{"create", "get", "update"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(ctx, writer.Name, metav1.DeleteOptions{}) })
	writerBinding, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "podterminator-writer-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: writer.Name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(ctx, writerBinding.Name, metav1.DeleteOptions{}) })
	deleter, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pod-deleter-"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(ctx, deleter.Name, metav1.DeleteOptions{}) })
	if _, err := rbac.RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-deleter"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: deleter.Name},
		Subjects:   subjects,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deleteTerminator deletes the PodTerminator name and waits until the
// operator has removed its finalizer.
func deleteTerminator(t *testing.T, c chaosclient.PodTerminatorInterface, name string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	e2etest.Eventually(t, 30*time.Second, "the PodTerminator is gone", func() bool {
		_, err := c.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
