package integration_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kooperkit/kooper/hack/internal/worktree"
	"github.com/kooperkit/kooper/kooper/devcluster"
)

// The three operators scaffolded: every shape the generator writes is one
// of a cluster-scoped or namespaced kind, owning some kinds or none, and
// every kind it knows is owned by one of them.
var (
	clustered  = []string{"-name", "demo-cluster", "-group", "democluster.example.com", "-kind", "Widget", "-scope", "Cluster", "-owns", "ConfigMap,ServiceAccount"}
	namespaced = []string{"-name", "demo-namespaced", "-group", "demonamespaced.example.com", "-kind", "Gadget", "-scope", "Namespaced"}
	owner      = []string{"-name", "demo-owner", "-group", "demoowner.example.com", "-kind", "Vault", "-scope", "Namespaced",
		"-owns", "ConfigMap,Secret,ServiceAccount,Role,RoleBinding,Service,Deployment"}
)

// What make new-operator writes builds, vets and passes its own tests, unit
// and integration, in a copy of the repository (this one is never
// written).
func TestNewOperatorsBuildAndPassTheirTests(t *testing.T) {
	if testing.Short() {
		t.Skip("scaffolds two operators and runs their tests: minutes")
	}
	root := worktree.Copy(t)
	// The copy has no bin/: the control plane is this repository's, unless
	// the environment names one.
	env := os.Environ()
	if os.Getenv(devcluster.EnvBinDir) == "" {
		bin := filepath.Join(worktree.Root(t), "bin")
		if _, err := os.Stat(filepath.Join(bin, devcluster.BinAPIServer)); err == nil {
			env = append(env, devcluster.EnvBinDir+"="+bin)
		}
	}
	steps := []struct {
		name string
		args []string
		want []string // lines of output it must print
		// noSkip: a test of its -v output that skipped fails the step, so
		// a check cannot go quiet.
		noSkip bool
	}{
		{name: "scaffold a cluster-scoped operator owning a ConfigMap and a ServiceAccount", args: append([]string{"go", "run", "./hack/newoperator"}, clustered...)},
		{name: "scaffold a namespaced operator owning nothing", args: append([]string{"go", "run", "./hack/newoperator"}, namespaced...)},
		{name: "scaffold a namespaced operator owning every kind", args: append([]string{"go", "run", "./hack/newoperator"}, owner...)},
		{name: "gofmt", args: []string{"gofmt", "-l", "apis/democluster", "apis/demonamespaced", "apis/demoowner",
			"operators/demo-cluster", "operators/demo-namespaced", "operators/demo-owner"}},
		{name: "build everything", args: []string{"go", "build", "./..."}},
		{name: "vet the operators", args: []string{"go", "vet", "./operators/demo-cluster/...", "./operators/demo-namespaced/...", "./operators/demo-owner/..."}},
		{name: "their unit tests", args: []string{"go", "test", "-race", "-count=1",
			"./operators/demo-cluster/cmd/...", "./operators/demo-cluster/internal/...",
			"./operators/demo-namespaced/cmd/...", "./operators/demo-namespaced/internal/...",
			"./operators/demo-owner/cmd/...", "./operators/demo-owner/internal/..."}},
		// promtool, which their metrics checks run, linked into the copy's
		// bin/ from the per-user cache (built there by make test).
		{name: "link promtool and prometheus", args: []string{"make", "--no-print-directory", "prometheus"}},
		{name: "their integration tests", noSkip: true, args: []string{"go", "test", "-race", "-count=1", "-v",
			"./operators/demo-cluster/integration", "./operators/demo-namespaced/integration", "./operators/demo-owner/integration"}},
		// What make test checks of every operator holds for them too.
		{name: "generated code, CRDs, dashboards and docs are up to date", args: []string{"make", "--no-print-directory", "verify-generate"}},
		{name: "lint", args: []string{"make", "--no-print-directory", "lint-packages",
			"LINT_PACKAGES=./apis/democluster/... ./apis/demonamespaced/... ./apis/demoowner/... ./operators/demo-cluster/... ./operators/demo-namespaced/... ./operators/demo-owner/..."}},
		{name: "every operator is complete", args: []string{"go", "test", "-count=1", "./operators/"}},
		// Less the two tests that deploy and run every operator (make
		// deploy, and their pods), minutes each: make test runs them in this
		// repository.
		{name: "the manifests tests cover them", args: []string{"go", "test", "-count=1",
			"-skip", "^(TestMakeDeployAndUndeploy|TestTheOperatorsRunAsTheirDeploymentsSay)$", "-v", "./manifests/integration"}},
		// make run: the control plane linked into the copy's bin/, every
		// operator built, each scaffold's example Ready.
		{name: "link the control plane", args: []string{"make", "--no-print-directory", "controlplane", "WITH_KWOK=1"}},
		{name: "make build", args: []string{"make", "--no-print-directory", "build"}},
		{name: "make run starts them and their examples become Ready", args: []string{"go", "run", "./hack/run", "-duration", "60s"},
			want: []string{
				"demo-cluster: the example operators/demo-cluster/example.yaml is Ready",
				"demo-namespaced: the example operators/demo-namespaced/example.yaml is Ready",
				"demo-owner: the example operators/demo-owner/example.yaml is Ready",
			}},
	}
	for _, step := range steps {
		began := time.Now()
		cmd := exec.Command(step.args[0], step.args[1:]...)
		cmd.Dir = root
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		t.Logf("%s: %s (%s)", step.name, strings.Join(step.args, " "), time.Since(began).Round(100*time.Millisecond))
		if err != nil {
			t.Fatalf("%s: %v\n%s", step.name, err, out.String())
		}
		if step.args[0] == "gofmt" && out.Len() > 0 {
			t.Fatalf("gofmt -l lists files:\n%s", out.String())
		}
		for _, want := range step.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: the output does not say %q:\n%s", step.name, want, out.String())
			}
		}
		if step.args[0] == "go" && slices.Contains(step.args, "-v") {
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.Contains(line, "operators: [") || strings.HasPrefix(strings.TrimSpace(line), "--- ") {
					t.Log(strings.TrimSpace(line))
				}
				if step.noSkip && strings.HasPrefix(strings.TrimSpace(line), "--- SKIP") {
					t.Errorf("%s: a test skipped: %s", step.name, strings.TrimSpace(line))
				}
			}
		}
	}
}
