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

	"github.com/kooperkit/kooper/hack/newoperator/internal/worktree"
	"github.com/kooperkit/kooper/kooper/devcluster"
)

// The two operators scaffolded: every shape the generator writes is one of
// a cluster-scoped or namespaced kind, owning some kinds or none.
var (
	clustered  = []string{"-name", "demo-cluster", "-group", "democluster.example.com", "-kind", "Widget", "-scope", "Cluster", "-owns", "ConfigMap,ServiceAccount"}
	namespaced = []string{"-name", "demo-namespaced", "-group", "demonamespaced.example.com", "-kind", "Gadget", "-scope", "Namespaced"}
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
		env  []string
	}{
		{name: "scaffold a cluster-scoped operator owning a ConfigMap and a ServiceAccount", args: append([]string{"go", "run", "./hack/newoperator"}, clustered...)},
		{name: "scaffold a namespaced operator owning nothing", args: append([]string{"go", "run", "./hack/newoperator"}, namespaced...)},
		{name: "gofmt", args: []string{"gofmt", "-l", "apis/democluster", "apis/demonamespaced", "operators/demo-cluster", "operators/demo-namespaced"}},
		{name: "build everything", args: []string{"go", "build", "./..."}},
		{name: "vet the operators", args: []string{"go", "vet", "./operators/demo-cluster/...", "./operators/demo-namespaced/..."}},
		{name: "their unit tests", args: []string{"go", "test", "-race", "-count=1",
			"./operators/demo-cluster/cmd/...", "./operators/demo-cluster/internal/...",
			"./operators/demo-namespaced/cmd/...", "./operators/demo-namespaced/internal/..."}},
		// CI=true: a missing control plane fails rather than skips.
		{name: "their integration tests", env: []string{"CI=true"}, args: []string{"go", "test", "-race", "-count=1",
			"./operators/demo-cluster/integration", "./operators/demo-namespaced/integration"}},
	}
	for _, step := range steps {
		began := time.Now()
		cmd := exec.Command(step.args[0], step.args[1:]...)
		cmd.Dir = root
		cmd.Env = slices.Concat(env, step.env)
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
	}
}
