package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/kooper/devcluster"
	"github.com/kooperkit/kooper/operators/internal/rbactest"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
)

// Every name in this file starts with rbac (tests with TestRBAC): the
// package's other test files are written separately.
const (
	rbacManifestsDir = "../../../manifests/rbac/multi-resource"
	rbacDeployDir    = "../../../manifests/multi-resource"
	rbacUser         = "system:serviceaccount:" + operator.DefaultNamespace + ":" + operator.DefaultName
)

// needed is what the multi-resource operator does, written out by hand: the
// ClusterRole must grant exactly this. Children are written with server-side
// apply: a patch, which needs create too when the child does not exist yet.
var needed = []rbacv1.PolicyRule{
	{APIGroups: []string{"tenancy.kooperkit.io"}, Resources: []string{"tenants"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"tenancy.kooperkit.io"}, Resources: []string{"tenants/status"}, Verbs: []string{"update"}},
	{APIGroups: []string{"tenancy.kooperkit.io"}, Resources: []string{"tenants/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas", "limitranges"}, Verbs: []string{"list", "watch", "create", "patch"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"list", "watch", "create", "patch"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"list", "watch", "create", "patch", "delete"}},
	{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"admin"}, Verbs: []string{"bind"}},
}

// neededInNamespace is what it does in its own namespace (leader election):
// the Role must grant exactly this.
var neededInNamespace = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
}

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
	if cluster == nil {
		t.Skip(devcluster.SkipHint)
	}
	rbacKubectl(t, "apply", "-k", rbacManifestsDir)
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	groups := rbactest.ServiceAccountGroups(operator.DefaultNamespace)
	rbactest.CheckAllowed(t, client, rbacUser, groups, "some-tenant", needed)
	rbactest.CheckAllowed(t, client, rbacUser, groups, operator.DefaultNamespace, neededInNamespace)
	denied := []authorizationv1.ResourceAttributes{
		{Namespace: "some-tenant", Resource: "secrets", Verb: "get"},
		{Namespace: "some-tenant", Resource: "pods", Verb: "create"},
		{Group: "tenancy.kooperkit.io", Resource: "tenants", Verb: "delete"},
		{Group: "tenancy.kooperkit.io", Resource: "tenants", Verb: "update"}, // status only
		{Resource: "namespaces", Verb: "delete"},                             // the garbage collector does it
		{Namespace: "some-tenant", Group: "apps", Resource: "deployments", Verb: "create"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind", Name: "cluster-admin"},
		{Namespace: "some-tenant", Group: "coordination.k8s.io", Resource: "leases", Verb: "update"},
	}
	for _, d := range denied {
		if rbactest.Can(t, client, rbacUser, groups, d) {
			t.Errorf("%s may %s %s/%s %q in %q, want denied", rbacUser, d.Verb, d.Group, d.Resource, d.Name, d.Namespace)
		}
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
	for _, arg := range []string{"-http-addr=:8080", "-log-format=json"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("got args %q, want %s", c.Args, arg)
		}
	}
	if !slices.Contains(c.Ports, corev1.ContainerPort{Name: "http", ContainerPort: 8080}) {
		t.Errorf("got ports %+v, want http on 8080 (-http-addr)", c.Ports)
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
	if cluster == nil {
		t.Skip(devcluster.SkipHint)
	}
	rbacKubectl(t, "apply", "-k", rbacManifestsDir)
	rbacKubectl(t, "apply", "--dry-run=server", "-k", rbacDeployDir)
}

// rbacKubectl runs the cluster's kubectl as admin and fails the test, with
// kubectl's output, if it fails.
func rbacKubectl(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"--kubeconfig", cluster.KubeconfigPath()}, args...)
	out, err := exec.Command(filepath.Join(cluster.BinDir(), devcluster.BinKubectl), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args[2:], err, out)
	}
}
