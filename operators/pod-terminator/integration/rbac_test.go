package integration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/kooper/devcluster"
)

const rbacDir = "../../../manifests/rbac/pod-terminator"

// needed is what the pod-terminator does, written out by hand: the
// ClusterRole must grant exactly this.
var needed = []rbacv1.PolicyRule{
	{APIGroups: []string{"chaos.kooperkit.io"}, Resources: []string{"podterminators"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	{APIGroups: []string{"chaos.kooperkit.io"}, Resources: []string{"podterminators/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"chaos.kooperkit.io"}, Resources: []string{"podterminators/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

func TestTheClusterRoleGrantsExactlyWhatIsNeeded(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(rbacDir, "cluster_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &role); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(role.Rules, needed) {
		t.Errorf("got rules %+v\nwant exactly %+v", role.Rules, needed)
	}
}

// Applied with kubectl, the manifests let the ServiceAccount do every needed
// verb and refuse others (checked by SubjectAccessReviews as the account).
func TestTheServiceAccountMayDoWhatIsNeededAndNothingElse(t *testing.T) {
	if cluster == nil {
		t.Skip(devcluster.SkipHint)
	}
	out, err := exec.Command(filepath.Join(cluster.BinDir(), devcluster.BinKubectl), "--kubeconfig", cluster.KubeconfigPath(),
		"apply", "-R", "-f", rbacDir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	const user = "system:serviceaccount:kooper-system:pod-terminator"
	can := func(ns, group, resource, sub, verb string) bool {
		t.Helper()
		sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kooper-system", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Group: group, Resource: resource, Subresource: sub, Verb: verb,
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	for _, r := range needed {
		for _, res := range r.Resources {
			resource, sub, _ := strings.Cut(res, "/")
			for _, verb := range r.Verbs {
				if !can("some-namespace", r.APIGroups[0], resource, sub, verb) {
					t.Errorf("%s may not %s %s, want allowed", user, verb, res)
				}
			}
		}
	}
	for _, verb := range []string{"get", "create", "update"} {
		if !can("kooper-system", "coordination.k8s.io", "leases", "", verb) {
			t.Errorf("%s may not %s leases in kooper-system, want allowed", user, verb)
		}
	}
	denied := []struct{ ns, group, resource, sub, verb string }{
		{"some-namespace", "", "secrets", "", "get"},
		{"some-namespace", "", "pods", "", "create"},
		{"some-namespace", "", "pods", "", "update"},
		{"", "chaos.kooperkit.io", "podterminators", "", "delete"},
		{"", "chaos.kooperkit.io", "podterminators", "", "create"},
		{"some-namespace", "", "configmaps", "", "list"},
		{"some-namespace", "coordination.k8s.io", "leases", "", "update"},
		{"some-namespace", "apps", "deployments", "", "delete"},
	}
	for _, d := range denied {
		if can(d.ns, d.group, d.resource, d.sub, d.verb) {
			t.Errorf("%s may %s %s in %q, want denied", user, d.verb, d.resource, d.ns)
		}
	}
}
