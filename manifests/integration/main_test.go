package integration_test

import (
	"bufio"
	"bytes"
	"context"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/hack/envtest"
)

var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	operators = discover()
	os.Exit(envtest.RunTests(m, envtest.Options{}, &cluster))
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

	// examples, if set, applies the examples of its README and docs once
	// it runs on the node of TestTheOperatorsRunAsTheirDeploymentsSay, and
	// checks what they do.
	examples func(t *testing.T, p *podsTest)
	// refused, if set, asks the API server to create an object that its
	// validating webhook must refuse, and returns the text the refusal
	// says and the API server's answer (nil if it took the object, which
	// it then deletes). Needed if it renders a
	// ValidatingWebhookConfiguration.
	refused func(ctx context.Context, p *podsTest) (want string, answer error)
	// customResource, if set, returns a valid object of its own custom
	// resources, with the resource it is of: TestMakeDeployAndUndeploy
	// gives it a finalizer that make undeploy must wait for.
	customResource func() (schema.GroupVersionResource, *unstructured.Unstructured)
}

// own are the deployables the operators' test files register, one file
// each, named after its operator (register): exactly what each renders,
// and what the runs check of it. An operator without one, such as one make
// new-operator wrote, renders what required and allowed say.
var own = map[string]deployable{}

// register adds d to own; each operator's file calls it from init.
func register(d deployable) { own[d.name] = d }

// What an operator without a deployable of its own (one make new-operator
// wrote) must render, and may. Secure metrics need the ClusterRoles and
// bindings (the metrics reader's, system:auth-delegator's), which
// TestTheMetricsAreServedToPrometheusOnly checks by name.
var (
	required = []string{"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Namespace", "NetworkPolicy",
		"PodDisruptionBudget", "Service", "ServiceAccount"}
	allowed = []string{"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Namespace", "NetworkPolicy",
		"PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
)

// operators are the deployable operators: every directory of manifests/
// with a deployment.yaml, sorted, as its file registered it, or with the
// names make new-operator gives its objects outside its namespace. TestMain
// finds them, once every file's init has registered its own.
var operators []deployable

func discover() []deployable {
	var ops []deployable
	deployments, _ := filepath.Glob(filepath.Join(manifests, "*", "deployment.yaml")) // sorted
	for _, d := range deployments {
		name := filepath.Base(filepath.Dir(d))
		if op, ok := own[name]; ok {
			ops = append(ops, op)
			continue
		}
		ns, children := namespaceOf(name), namespaceOf(name)+"-children"
		ops = append(ops, deployable{
			name: name,
			// A scaffold's Role for the children of a cluster-scoped kind is
			// in the namespace of their own; for a namespaced kind's, in the
			// namespace it serves, default unless told otherwise.
			elsewhere: map[string][]string{
				"Role/" + ns + "-events": {"default"}, "RoleBinding/" + ns + "-events": {"default"},
				"Role/" + ns + "-children": {children, "default"}, "RoleBinding/" + ns + "-children": {children, "default"},
			},
			namespaces: []string{children},
		})
	}
	return ops
}

// Every directory of manifests/ with a deployment.yaml is tested, and every
// deployable registered is one of them: the file of an operator that is
// gone goes with it.
func TestEveryOperatorIsTested(t *testing.T) {
	var names []string
	for _, op := range operators {
		names = append(names, op.name)
	}
	if len(names) == 0 {
		t.Error("no directory of manifests/ has a deployment.yaml")
	}
	for name := range own {
		if !slices.Contains(names, name) {
			t.Errorf("a test file registers operator %s, which manifests/%s/deployment.yaml is not there for", name, name)
		}
	}
	t.Logf("operators: %v", names)
}

// kubectlPath returns the cluster's kubectl. There is always one: without
// the binaries TestMain fails the package before any test runs.
func kubectlPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(cluster.BinDir(), envtest.BinKubectl)
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
	return renderWith(t, deployScript, operator, image)
}

// renderWith is render with another tree's deploy.sh.
func renderWith(t *testing.T, script, operator, image string) string {
	t.Helper()
	cmd := exec.Command(script, "render", operator, image)
	cmd.Env = append(os.Environ(), "KUBECTL="+kubectlPath(t))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s render %s %s: %v\n%s", script, operator, image, err, stderr(err))
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
