package integration_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kooperkit/kooper/hack/internal/inventory"
	"github.com/kooperkit/kooper/hack/internal/worktree"
	"github.com/kooperkit/kooper/kooper/devcluster"
)

// What the journey makes the repository: Acme's platform, which keeps the
// multi-resource operator only.
const (
	module      = "example.com/acme/platform"
	groupSuffix = "acme.example.com"
	// scaffold is an operator the journey adds, then removes with the
	// same command as the sample: removal works from what each operator
	// owns, not from a list of the samples.
	scaffold = "widget-demo"
)

// oldNames returns the repository's module path, the suffix its API
// groups share, and the name in both that no file may hold after the
// journey (the organisation's: in the module path, in the suffix, plain
// or escaped, and in the image registry). They are read from the tree,
// not written here, or this file would hold them.
func oldNames(t *testing.T, root string) (mod, suffix, name string) {
	t.Helper()
	r, err := inventory.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := r.Groups["tenancy"]
	if !ok {
		t.Fatalf("no API group tenancy in %s: the journey keeps the multi-resource operator", root)
	}
	_, suffix, _ = strings.Cut(g.Name, ".")
	name, _, _ = strings.Cut(suffix, ".")
	return r.Module, suffix, name
}

// A newcomer's journey, on a copy of this repository (never written):
// scaffold a third operator, rename the module and the API groups' suffix,
// remove the pod-terminator and the scaffold. Then no file but the license
// and the history names the old module, suffix or registry, and lint, the
// generated-code check, the unit tests, the kept operator's integration
// tests and make run pass, with no hand edit in between.
func TestTheJourneyToARepositoryOfYourOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("scaffolds, renames, removes and runs make test's checks: tens of minutes")
	}
	root := worktree.Copy(t)
	oldModule, oldSuffix, oldName := oldNames(t, root)
	if !strings.Contains(oldModule, oldName) {
		t.Fatalf("module path %s does not hold %q, the API groups' suffix %s's first label: the check below would miss it", oldModule, oldName, oldSuffix)
	}
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
		// wantNot are texts the output must not hold.
		wantNot []string
		// empty: the command must print nothing (git grep finds nothing).
		empty bool
	}{
		{name: "scaffold a third operator", args: []string{"go", "run", "./hack/newoperator",
			"-name", scaffold, "-group", "widgets." + oldSuffix, "-kind", "Widget", "-scope", "Namespaced", "-owns", "ConfigMap"},
			want: []string{"operator " + scaffold + " is ready"}},
		{name: "rename the module and the API groups' suffix", args: []string{"make", "--no-print-directory", "rename", "MODULE=" + module, "GROUP_SUFFIX=" + groupSuffix},
			want:    []string{"module path: " + oldModule + " -> " + module, "API group suffix: " + oldSuffix + " -> " + groupSuffix, "renamed;"},
			wantNot: []string{"still hold an old name"}},
		{name: "remove the pod-terminator", args: []string{"make", "--no-print-directory", "remove-operator", "NAME=pod-terminator"},
			want: []string{"remove apis/chaos (its API group chaos." + groupSuffix + ")", "operator pod-terminator is removed"}},
		{name: "remove the scaffold", args: []string{"make", "--no-print-directory", "remove-operator", "NAME=" + scaffold},
			want: []string{"remove apis/widgets (its API group widgets." + groupSuffix + ")", "operator " + scaffold + " is removed"}},
		// git grep searches what git tracks: a repository of the copy.
		{name: "git init", args: []string{"git", "init", "-q"}},
		{name: "git add", args: []string{"git", "add", "-A"}},
		{name: "no old name is left but in the license and the history", empty: true,
			args: []string{"git", "grep", "-n", "-F", "-e", oldName, "--", ":!LICENSE", ":!CHANGELOG.md"}},
		{name: "lint", args: []string{"make", "--no-print-directory", "lint"}},
		{name: "generated code, CRDs, dashboards and docs are up to date", args: []string{"make", "--no-print-directory", "verify-generate"}},
		{name: "the unit tests", args: []string{"make", "--no-print-directory", "test-unit"}},
		// The kept operator on the local control plane, linked into the
		// copy's bin/ from the per-user cache (built there by make test).
		{name: "link the control plane", args: []string{"make", "--no-print-directory", "controlplane", "WITH_KWOK=1"}},
		{name: "the kept operator's integration tests", args: []string{"go", "test", "-race", "-count=1", "./operators/multi-resource/integration"},
			want: []string{"ok  \t" + module + "/operators/multi-resource/integration"}},
		{name: "make run starts what is left, and its demo works", args: []string{"make", "--no-print-directory", "run", "RUN_ARGS=-duration 60s"},
			want:    []string{"Tenant demo is Ready", "removed the demo of multi-resource", "stopping the local control plane"},
			wantNot: []string{"[pod-terminator]", "[" + scaffold + "]"}},
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
		if step.empty {
			// git grep exits 1 when it finds nothing.
			if out.Len() > 0 {
				t.Fatalf("%s: found\n%s", step.name, out.String())
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", step.name, err, out.String())
		}
		for _, want := range step.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: the output does not say %q:\n%s", step.name, want, out.String())
			}
		}
		for _, bad := range step.wantNot {
			if strings.Contains(out.String(), bad) {
				t.Errorf("%s: the output says %q:\n%s", step.name, bad, out.String())
			}
		}
	}
}
