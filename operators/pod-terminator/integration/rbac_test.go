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
	{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{"kooper-pod-terminator"}, Verbs: []string{"get", "update"}},
}

// neededInNamespace is what it does in its own namespace: the Role must grant
// exactly this.
var neededInNamespace = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"pod-terminator-webhook-tls"}, Verbs: []string{"get", "update"}},
}

func TestTheRolesGrantExactlyWhatIsNeeded(t *testing.T) {
	for file, want := range map[string][]rbacv1.PolicyRule{"cluster_role.yaml": needed, "role.yaml": neededInNamespace} {
		b, err := os.ReadFile(filepath.Join(rbacDir, file))
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole // a Role's rules read the same
		if err := yaml.UnmarshalStrict(b, &role); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(role.Rules, want) {
			t.Errorf("%s: got rules %+v\nwant exactly %+v", file, role.Rules, want)
		}
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
	can := func(ns, group, resource, sub, verb string, name ...string) bool {
		t.Helper()
		sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kooper-system", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Group: group, Resource: resource, Subresource: sub, Verb: verb,
					Name: strings.Join(name, ""),
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
				if !can("some-namespace", r.APIGroups[0], resource, sub, verb, r.ResourceNames...) {
					t.Errorf("%s may not %s %s %v, want allowed", user, verb, res, r.ResourceNames)
				}
			}
		}
	}
	for _, r := range neededInNamespace {
		for _, verb := range r.Verbs {
			if !can("kooper-system", r.APIGroups[0], r.Resources[0], "", verb, r.ResourceNames...) {
				t.Errorf("%s may not %s %s %v in kooper-system, want allowed", user, verb, r.Resources[0], r.ResourceNames)
			}
		}
	}
	denied := []struct{ ns, group, resource, sub, verb, name string }{
		{"some-namespace", "", "secrets", "", "get", ""},
		{"some-namespace", "", "pods", "", "create", ""},
		{"some-namespace", "", "pods", "", "update", ""},
		{"", "chaos.kooperkit.io", "podterminators", "", "delete", ""},
		{"", "chaos.kooperkit.io", "podterminators", "", "create", ""},
		{"some-namespace", "", "configmaps", "", "list", ""},
		{"some-namespace", "coordination.k8s.io", "leases", "", "update", ""},
		{"some-namespace", "apps", "deployments", "", "delete", ""},
		{"kooper-system", "", "secrets", "", "get", "someone-elses-secret"},
		{"kooper-system", "", "secrets", "", "list", ""},
		{"", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "update", "someone-elses-webhook"},
		{"", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "list", ""},
	}
	for _, d := range denied {
		if can(d.ns, d.group, d.resource, d.sub, d.verb, d.name) {
			t.Errorf("%s may %s %s %q in %q, want denied", user, d.verb, d.resource, d.name, d.ns)
		}
	}
}
