package integration_test

import (
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/devcluster"
	"github.com/kooperkit/kooper/operators/internal/rbactest"
)

const rbacDir = "../../../manifests/rbac/pod-terminator"

// region: needed

// needed is what the pod-terminator does, written out by hand: the
// ClusterRole must grant exactly this.
var needed = []rbacv1.PolicyRule{
	{APIGroups: []string{"chaos.kooperkit.io"}, Resources: []string{"podterminators"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	{APIGroups: []string{"chaos.kooperkit.io"}, Resources: []string{"podterminators/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"chaos.kooperkit.io"}, Resources: []string{"podterminators/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
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

// endregion: needed

func TestTheRolesGrantExactlyWhatIsNeeded(t *testing.T) {
	for file, want := range map[string][]rbacv1.PolicyRule{"cluster_role.yaml": needed, "role.yaml": neededInNamespace} {
		if got := rbactest.ReadRules(t, filepath.Join(rbacDir, file)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got rules %+v\nwant exactly %+v", file, got, want)
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
		"apply", "-k", rbacDir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	const user = "system:serviceaccount:kooper-system:pod-terminator"
	groups := rbactest.ServiceAccountGroups("kooper-system")
	// region: check
	rbactest.CheckAllowed(t, client, user, groups, "some-namespace", needed)
	rbactest.CheckAllowed(t, client, user, groups, "kooper-system", neededInNamespace)
	denied := []authorizationv1.ResourceAttributes{
		{Namespace: "some-namespace", Resource: "secrets", Verb: "get"},
		{Namespace: "some-namespace", Resource: "pods", Verb: "create"},
		{Namespace: "some-namespace", Resource: "pods", Verb: "update"},
		{Group: "chaos.kooperkit.io", Resource: "podterminators", Verb: "delete"},
		{Group: "chaos.kooperkit.io", Resource: "podterminators", Verb: "create"},
		{Namespace: "some-namespace", Resource: "configmaps", Verb: "list"},
		{Namespace: "some-namespace", Group: "coordination.k8s.io", Resource: "leases", Verb: "update"},
		{Namespace: "some-namespace", Group: "apps", Resource: "deployments", Verb: "delete"},
		{Namespace: "kooper-system", Resource: "secrets", Verb: "get", Name: "someone-elses-secret"},
		{Namespace: "kooper-system", Resource: "secrets", Verb: "list"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "update", Name: "someone-elses-webhook"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "list"},
	}
	for _, d := range denied {
		if rbactest.Can(t, client, user, groups, d) {
			t.Errorf("%s may %s %s %q in %q, want denied", user, d.Verb, d.Resource, d.Name, d.Namespace)
		}
	}
	// endregion: check
}
