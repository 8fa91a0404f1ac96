package integration_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/event"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
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
	{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"}, ResourceNames: []string{"kooper-pod-terminator"}, Verbs: []string{"get", "update"}},
	{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: []string{"podterminators.chaos.kooperkit.io"}, Verbs: []string{"get", "update"}},
}

// neededInNamespace is what it does in its own namespace: the Role must grant
// exactly this.
var neededInNamespace = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"pod-terminator"}, Verbs: []string{"get", "update", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"pod-terminator-webhook-tls"}, Verbs: []string{"get", "update"}},
}

// neededInEventsNamespace is what it does in eventsNamespace: write Events
// about PodTerminators, which client-go's recorder puts there because a
// PodTerminator has no namespace. The events Role must grant exactly this.
var neededInEventsNamespace = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

// endregion: needed

// eventsNamespace is where the Events of cluster-scoped objects are written.
const eventsNamespace = metav1.NamespaceDefault

func TestTheRolesGrantExactlyWhatIsNeeded(t *testing.T) {
	for file, want := range map[string][]rbacv1.PolicyRule{
		"cluster_role.yaml": needed, "role.yaml": neededInNamespace, "events_role.yaml": neededInEventsNamespace,
	} {
		if got := rbactest.ReadRules(t, filepath.Join(rbacDir, file)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got rules %+v\nwant exactly %+v", file, got, want)
		}
	}
}

// Applied with kubectl, the manifests let the ServiceAccount do every needed
// verb and refuse others (checked by SubjectAccessReviews as the account).
func TestTheServiceAccountMayDoWhatIsNeededAndNothingElse(t *testing.T) {
	out, err := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), "--kubeconfig", cluster.KubeconfigPath(),
		"apply", "-k", rbacDir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	const user = "system:serviceaccount:kooper-pod-terminator:pod-terminator"
	groups := rbactest.ServiceAccountGroups("kooper-pod-terminator")
	// region: check
	rbactest.CheckAllowed(t, client, user, groups, "some-namespace", needed)
	rbactest.CheckAllowed(t, client, user, groups, "kooper-pod-terminator", neededInNamespace)
	rbactest.CheckAllowed(t, client, user, groups, eventsNamespace, neededInEventsNamespace)
	denied := []authorizationv1.ResourceAttributes{
		{Namespace: "some-namespace", Resource: "secrets", Verb: "get"},
		{Namespace: "some-namespace", Resource: "pods", Verb: "create"},
		{Namespace: "some-namespace", Resource: "pods", Verb: "update"},
		{Group: "chaos.kooperkit.io", Resource: "podterminators", Verb: "delete"},
		{Group: "chaos.kooperkit.io", Resource: "podterminators", Verb: "create"},
		{Namespace: "some-namespace", Resource: "configmaps", Verb: "list"},
		{Namespace: "some-namespace", Group: "coordination.k8s.io", Resource: "leases", Verb: "update"},
		{Namespace: "some-namespace", Group: "apps", Resource: "deployments", Verb: "delete"},
		{Namespace: "kooper-pod-terminator", Resource: "secrets", Verb: "get", Name: "someone-elses-secret"},
		{Namespace: "kooper-pod-terminator", Resource: "secrets", Verb: "list"},
		// Another operator's Lease, in its namespace or ours: releasing it
		// would give that operator two leaders.
		{Namespace: "kooper-multi-resource", Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Name: "multi-resource"},
		{Namespace: "kooper-multi-resource", Resource: "secrets", Verb: "create"},
		{Namespace: "kooper-pod-terminator", Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Name: "multi-resource"},
		{Namespace: "kooper-pod-terminator", Group: "coordination.k8s.io", Resource: "leases", Verb: "get", Name: "pod-sharding-0"},
		{Namespace: "kooper-pod-terminator", Group: "coordination.k8s.io", Resource: "leases", Verb: "list"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "update", Name: "someone-elses-webhook"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "list"},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: "update", Name: "tenants.tenancy.kooperkit.io"},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: "list"},
		{Namespace: "some-namespace", Resource: "events", Verb: "create"},
		{Namespace: "kooper-pod-terminator", Resource: "events", Verb: "patch"},
		{Namespace: eventsNamespace, Resource: "events", Verb: "delete"},
	}
	for _, d := range denied {
		if rbactest.Can(t, client, user, groups, d) {
			t.Errorf("%s may %s %s %q in %q, want denied", user, d.Verb, d.Resource, d.Name, d.Namespace)
		}
	}
	// endregion: check
}

// The Events about a PodTerminator, written as the operator writes them
// (kooper/event, client-go's recorder) and as its ServiceAccount, land in
// eventsNamespace: client-go puts the Events of an object without a
// namespace there, and the events Role lets the account write them there.
// A refused write is only logged by the recorder, so the Event would be
// missing.
func TestTheEventsOfAPodTerminatorAreWrittenWhereTheAccountMay(t *testing.T) {
	applyKustomizations(t, rbacDir)
	scheme := runtime.NewScheme()
	if err := chaosv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	asAccount := kubernetes.NewForConfigOrDie(e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100))
	recorder, err := event.New(event.Config{Client: asAccount, Component: "rbac-test", Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	name := "rbac-events-" + rand.String(5)
	recorder.Normal(&chaosv1beta1.PodTerminator{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}},
		"RBACTest", "written by the ServiceAccount")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recorder.Shutdown(ctx) // writes the queued Event

	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	events, err := admin.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Namespace != eventsNamespace || events.Items[0].Reason != "RBACTest" {
		t.Fatalf("got events %+v, want one, RBACTest, in namespace %s", events.Items, eventsNamespace)
	}
}

// metricsReader is what Prometheus needs to scrape /metrics over HTTPS
// (-metrics-secure-addr): metrics_reader_role.yaml must grant exactly this.
var metricsReader = []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}

// With -metrics-secure-addr the operator has the API server review each
// scraper's token: its ServiceAccount may create TokenReviews and
// SubjectAccessReviews (system:auth-delegator, auth_delegator_binding.yaml),
// and Prometheus's ServiceAccount (metrics_reader_role_binding.yaml) may
// get /metrics and read nothing.
func TestTheMetricsBindingsLetTheOperatorReviewAndPrometheusScrape(t *testing.T) {
	if got := rbactest.ReadRules(t, filepath.Join(rbacDir, "metrics_reader_role.yaml")); !reflect.DeepEqual(got, metricsReader) {
		t.Errorf("metrics_reader_role.yaml: got rules %+v\nwant exactly %+v", got, metricsReader)
	}
	applyKustomizations(t, rbacDir)
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	const user = "system:serviceaccount:kooper-pod-terminator:pod-terminator"
	rbactest.CheckAllowed(t, client, user, rbactest.ServiceAccountGroups("kooper-pod-terminator"), "", []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	})
	const prometheus = "system:serviceaccount:" + e2etest.PrometheusNamespace + ":" + e2etest.PrometheusAccount
	groups := rbactest.ServiceAccountGroups(e2etest.PrometheusNamespace)
	rbactest.CheckAllowed(t, client, prometheus, groups, "", metricsReader)
	for _, d := range []authorizationv1.ResourceAttributes{
		{Group: "chaos.kooperkit.io", Resource: "podterminators", Verb: "list"},
		{Namespace: "kooper-pod-terminator", Resource: "secrets", Verb: "get"},
		{Namespace: "kooper-pod-terminator", Resource: "pods", Verb: "list"},
	} {
		if rbactest.Can(t, client, prometheus, groups, d) {
			t.Errorf("%s may %s %s in %q, want denied", prometheus, d.Verb, d.Resource, d.Namespace)
		}
	}
}
