package integration_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/kooper/devcluster"
)

var cluster *devcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(devcluster.RunTests(m, devcluster.Options{}, &cluster))
}

const (
	// root is the repository and manifests its manifests/, relative to this
	// package.
	root      = "../.."
	manifests = ".."
	// deployScript is what make deploy and make undeploy run.
	deployScript = manifests + "/deploy.sh"
)

// namespaceOf is the namespace the operator runs in, its own.
func namespaceOf(operator string) string { return "kooper-" + operator }

// deployable is an operator's directory of manifests/ and what its
// kustomization must render.
type deployable struct {
	name string
	// group is the API group of its custom resources: it installs that
	// group's CRDs and no other's. Empty: the one group its CRDs share,
	// which must be no other operator's.
	group string
	// kinds is what its kustomization renders, sorted, once per object.
	// Nil: at least the kinds of required, and no kind outside allowed.
	kinds []string
	// elsewhere names, as Kind/name, its namespaced objects that are not in
	// its namespace (namespaceOf), with the namespaces they may be in.
	elsewhere map[string][]string
	// namespaces are the Namespaces it may create besides its own.
	namespaces []string
}

// samples are the sample operators, with exactly what they render.
var samples = []deployable{
	{
		name:  "pod-terminator",
		group: "chaos.kooperkit.io",
		// ClusterRoles: its own and the metrics reader's; bindings: those
		// two and system:auth-delegator's.
		kinds: []string{"ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ClusterRoleBinding",
			"CustomResourceDefinition", "Deployment", "Namespace", "NetworkPolicy", "PodDisruptionBudget",
			"Role", "Role", "RoleBinding", "RoleBinding", "Service", "Service", "ServiceAccount",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy",
			"ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding",
			"ValidatingWebhookConfiguration"},
		// Events about PodTerminators (cluster-scoped) are written in default.
		elsewhere: map[string][]string{"Role/kooper-pod-terminator-events": {"default"}, "RoleBinding/kooper-pod-terminator-events": {"default"}},
	},
	{
		name:  "multi-resource",
		group: "tenancy.kooperkit.io",
		kinds: []string{"ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ClusterRoleBinding",
			"CustomResourceDefinition", "Deployment", "Namespace", "NetworkPolicy", "PodDisruptionBudget",
			"Role", "RoleBinding", "Service", "ServiceAccount",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"},
	},
}

// What an operator other than the samples (one make new-operator wrote)
// must render, and may. Secure metrics need the ClusterRoles and bindings
// (the metrics reader's, system:auth-delegator's), which
// TestTheMetricsAreServedToPrometheusOnly checks by name.
var (
	required = []string{"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Namespace", "NetworkPolicy",
		"PodDisruptionBudget", "Service", "ServiceAccount"}
	allowed = []string{"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Namespace", "NetworkPolicy",
		"PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
)

// operators are the deployable operators: the samples, then every other
// directory of manifests/ with a deployment.yaml, such as one make
// new-operator wrote, with the names make new-operator gives its objects
// outside its namespace.
var operators = discover()

func discover() []deployable {
	ops := slices.Clone(samples)
	deployments, _ := filepath.Glob(filepath.Join(manifests, "*", "deployment.yaml"))
	for _, d := range deployments {
		name := filepath.Base(filepath.Dir(d))
		if slices.ContainsFunc(ops, func(op deployable) bool { return op.name == name }) {
			continue
		}
		own, children := namespaceOf(name), namespaceOf(name)+"-children"
		ops = append(ops, deployable{
			name: name,
			// A scaffold's Role for the children of a cluster-scoped kind is
			// in the namespace of their own; for a namespaced kind's, in the
			// namespace it serves, default unless told otherwise.
			elsewhere: map[string][]string{
				"Role/" + own + "-events": {"default"}, "RoleBinding/" + own + "-events": {"default"},
				"Role/" + own + "-children": {children, "default"}, "RoleBinding/" + own + "-children": {children, "default"},
			},
			namespaces: []string{children},
		})
	}
	return ops
}

// Every directory of manifests/ with a deployment.yaml is tested, and the
// samples are among them.
func TestEveryOperatorIsTested(t *testing.T) {
	var names []string
	for _, op := range operators {
		names = append(names, op.name)
	}
	for _, want := range []string{"pod-terminator", "multi-resource"} {
		if !slices.Contains(names, want) {
			t.Errorf("got operators %v, want %s among them", names, want)
		}
	}
	t.Logf("operators: %v", names)
}

// kubectlPath returns the cluster's kubectl. There is always one: without
// the binaries TestMain fails the package before any test runs.
func kubectlPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(cluster.BinDir(), devcluster.BinKubectl)
}

// kubectl runs the cluster's kubectl as admin and returns its output; it
// fails the test if kubectl fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	path := kubectlPath(t)
	args = append([]string{"--kubeconfig", cluster.KubeconfigPath()}, args...)
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %q: %v\n%s", args[2:], err, out)
	}
	return string(out)
}

// kustomize returns what `kubectl kustomize dir` renders.
func kustomize(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command(kubectlPath(t), "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr(err))
	}
	return string(out)
}

// render returns what make deploy applies for the operator with image (the
// kustomization's own image when empty): deploy.sh render, which shares the
// overlay code with deploy.sh deploy.
func render(t *testing.T, operator, image string) string {
	t.Helper()
	cmd := exec.Command(deployScript, "render", operator, image)
	cmd.Env = append(os.Environ(), "KUBECTL="+kubectlPath(t))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy.sh render %s %s: %v\n%s", operator, image, err, stderr(err))
	}
	return string(out)
}

func stderr(err error) []byte {
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		return exit.Stderr
	}
	return nil
}

// objects decodes a multi-document YAML stream.
func objects(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewBufferString(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		objs = append(objs, u)
	}
}

// only returns the one object of kind in objs, as into.
func only(t *testing.T, objs []*unstructured.Unstructured, kind string, into any) {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("got %d %s objects, want 1", len(found), kind)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, into); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every 100ms until it returns nil, or fails the test
// with its last error after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
