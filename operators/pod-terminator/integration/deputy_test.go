package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	chaosclient "github.com/kooperkit/kooper/apis/client/clientset/versioned/typed/chaos/v1beta1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// The security review's confused deputy: mallory, who may update
// PodTerminators but delete no pod anywhere, turned an admin's dry run into
// dryRun: false, 100%, minimumInstances 0, Delete, and the operator deleted
// every matching pod in her name. An update making a PodTerminator more
// destructive is checked as its writer, as a create is; one making it less
// destructive, or leaving its spec alone, is not.
func TestDeputyUpdatesMakingAPodTerminatorMoreDestructiveAreCheckedAsTheirWriter(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ns, other := createNamespace(t, admin, "deputy-"), createNamespace(t, admin, "deputy-other-")
	pods := watchPods(t, admin, ns)
	createVictims(t, admin, ns, 4)
	e2etest.Eventually(t, 60*time.Second, "4 Ready victims", func() bool { return pods.live() == 4 })
	const user = "mallory"
	grantUpdatesOnly(t, admin, user)

	addr := e2etest.FreeAddr(t)
	registerWebhook(t, admin, addr)
	cfg := operator.Config{
		REST:                  e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100),
		DisableLeaderElection: true,
		Registry:              prom.NewRegistry(),
		Webhook:               operator.Webhook{Addr: addr, Hosts: []string{"127.0.0.1"}},
		Logger:                log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })

	asAdmin := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()
	impersonated := rest.CopyConfig(cluster.Config())
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: user}
	asMallory := versioned.NewForConfigOrDie(impersonated).ChaosV1beta1().PodTerminators()

	// The admin's dry run: 50% of 4 pods, at least 1 left, every 2 seconds.
	// Until the API server has the injected CA the answers are TLS errors:
	// wait for a real one.
	name := ns
	dryRun := chaosv1beta1.PodTerminatorSpec{
		Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
		Namespaces:  []string{ns},
		Period:      &metav1.Duration{Duration: 2 * time.Second},
		Termination: chaosv1beta1.Termination{Percent: 50, MinimumInstances: ptr.To[int32](1), Method: chaosv1beta1.TerminationMethodEviction},
		DryRun:      true,
	}
	waitFor(t, 30*time.Second, "the admin's dry run is created", func() error {
		_, err := asAdmin.Create(ctx, &chaosv1beta1.PodTerminator{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: dryRun}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	t.Cleanup(func() { deleteTerminator(t, asAdmin, name) })
	e2etest.Eventually(t, 30*time.Second, "a dry-run period chose a pod", func() bool {
		return !lastChosen(t, asAdmin, name).IsZero()
	})

	// refused is the refusal of mallory's update: it names the targets and
	// the changes of the request, never where she may or may not delete
	// pods.
	refused := func(targets, changes string) string {
		return fmt.Sprintf(`admission webhook "podterminators.chaos.kooperkit.io" denied the request: user %q may not delete pods in every namespace this PodTerminator targets: %s; a PodTerminator deletes pods in your name, so making one more destructive (%s) needs that permission`, user, targets, changes)
	}
	quoted := fmt.Sprintf("%q", ns)
	tests := []struct {
		name string
		edit func(*chaosv1beta1.PodTerminator)
		want string // the start of the refusal; empty: accepted
	}{
		{
			name: "the review's: dryRun off, 100%, minimumInstances 0, Delete",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.DryRun = false
				pt.Spec.Termination.Percent = 100
				pt.Spec.Termination.MinimumInstances = ptr.To[int32](0)
				pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodDelete
			},
			want: refused(quoted, "spec.dryRun turned off, spec.termination.percent raised, spec.termination.minimumInstances lowered, spec.termination.method changed to Delete"),
		},
		{
			name: "dryRun turned off",
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.DryRun = false },
			want: refused(quoted, "spec.dryRun turned off"),
		},
		{
			name: "a higher percentage",
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.Percent = 51 },
			want: refused(quoted, "spec.termination.percent raised"),
		},
		{
			name: "a lower minimum",
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.MinimumInstances = ptr.To[int32](0) },
			want: refused(quoted, "spec.termination.minimumInstances lowered"),
		},
		{
			name: "Delete instead of Eviction",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Termination.Method = chaosv1beta1.TerminationMethodDelete
			},
			want: refused(quoted, "spec.termination.method changed to Delete"),
		},
		{
			name: "a shorter period",
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Period = &metav1.Duration{Duration: time.Second} },
			want: refused(quoted, "spec.period shortened"),
		},
		{
			name: "another selector",
			edit: func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Selector.MatchLabels = map[string]string{"app": "database"}
			},
			want: refused(quoted, "spec.selector changed"),
		},
		{
			name: "one more namespace",
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = append(pt.Spec.Namespaces, other) },
			want: refused(fmt.Sprintf("%q, %q", ns, other), "spec.namespaces changed"),
		},
		{
			name: "every namespace",
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = nil },
			want: refused("every namespace (spec.namespaces is empty)", "spec.namespaces changed"),
		},
		{name: "a higher minimum", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.MinimumInstances = ptr.To[int32](2) }},
		{name: "a lower percentage", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.Percent = 49 }},
		{name: "a longer period", edit: func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Period = &metav1.Duration{Duration: 3 * time.Second} }},
		{
			name: "a label, the spec unchanged",
			edit: func(pt *chaosv1beta1.PodTerminator) { pt.Labels = map[string]string{"owner": "mallory"} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAnswer(t, tryEdit(ctx, asMallory, name, tt.edit), tt.want)
			// Each case starts from the admin's dry run.
			err := tryEdit(ctx, asAdmin, name, func(pt *chaosv1beta1.PodTerminator) { pt.Spec = *dryRun.DeepCopy() })
			if err != nil {
				t.Fatalf("could not restore the admin's dry run: %v", err)
			}
		})
	}

	// Whatever got through ran for a period before being undone: a dry
	// run's period after the updates, and no pod was deleted.
	before := lastChosen(t, asAdmin, name)
	e2etest.Eventually(t, 30*time.Second, "a dry-run period after the updates chose a pod", func() bool {
		return lastChosen(t, asAdmin, name).After(before)
	})
	if n := pods.deletedCount(); n != 0 {
		t.Errorf("got %d of 4 pods deleted, want none: the PodTerminator is the admin's dry run", n)
	}
}

// grantUpdatesOnly lets user read and update PodTerminators, and nothing
// else (no pod anywhere), until the test ends.
func grantUpdatesOnly(t *testing.T, client kubernetes.Interface, user string) {
	t.Helper()
	ctx := context.Background()
	rbac := client.RbacV1()
	role, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "podterminator-updater-"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{chaosv1beta1.GroupName}, Resources: []string{"podterminators"}, Verbs: []string{"get", "update"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}) })
	binding, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "podterminator-updater-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })
}

// tryEdit edits the PodTerminator name, trying again on a conflict (the
// operator writes its finalizer).
func tryEdit(ctx context.Context, c chaosclient.PodTerminatorInterface, name string, edit func(*chaosv1beta1.PodTerminator)) error {
	for {
		pt, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(pt)
		_, err = c.Update(ctx, pt, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// lastChosen returns when the PodTerminator name last terminated a pod, or
// with dryRun would have (status.lastTerminated, to the second), or zero.
func lastChosen(t *testing.T, c chaosclient.PodTerminatorInterface, name string) time.Time {
	t.Helper()
	pt, err := c.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pt.Status.LastTerminated) == 0 {
		return time.Time{}
	}
	return pt.Status.LastTerminated[0].Time.Time
}
