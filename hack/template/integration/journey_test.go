package integration_test

import (
	"bytes"
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/internal/inventory"
	"github.com/kooperkit/kooper/hack/worktree"
)

// What the journey makes the repository: Acme's platform, which keeps the
// multi-resource operator and adds operators of its own.
const (
	module      = "example.com/acme/platform"
	groupSuffix = "acme.example.com"
)

// scaffold is an operator the journey writes with make new-operator.
type scaffold struct {
	name, short, kind, scope, owns string // short: the group's first label, apis/<short>
}

func (s scaffold) group() string { return s.short + "." + groupSuffix }

// The three operators the journey scaffolds: every shape the generator
// writes is one of a cluster-scoped or namespaced kind, owning some kinds
// or none, and every kind it knows is owned by one of them. demo-cluster
// owns a ConfigMap and a Deployment: its generated integration test checks
// that a Widget is not Ready while its Deployment's pods are pending, and
// Ready once kwok runs them; make new-version gives its Widget a second
// version, v1beta1, whose conversion the journey writes as the stubs say,
// and its generated tests read and write both through its conversion
// webhook. Each is then removed with the same command as
// the sample: removal works from what an operator owns, not from a list of
// the samples.
var scaffolds = []scaffold{
	{name: "demo-cluster", short: "democluster", kind: "Widget", scope: "Cluster", owns: "ConfigMap,Deployment"},
	{name: "demo-namespaced", short: "demonamespaced", kind: "Gadget", scope: "Namespaced"},
	{name: "demo-owner", short: "demoowner", kind: "Vault", scope: "Namespaced", owns: "ConfigMap,Secret,ServiceAccount,Role,RoleBinding,Service,Deployment"},
}

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

// step is one command of the journey, run at the copy's root.
type step struct {
	name string
	args []string
	want []string // lines of output it must print
	// wantNot are texts the output must not hold.
	wantNot []string
	// empty: the command must print nothing (git grep finds nothing, gofmt
	// -l lists nothing). Its exit status is not checked: git grep exits 1
	// when it finds nothing.
	empty bool
	// noSkip: a test of its -v output that skipped fails the step, so a
	// check cannot go quiet.
	noSkip bool
	// fails: the command must fail, saying want.
	fails bool
}

// makeArgs is the command line of make with args, its targets and
// variables.
func makeArgs(args ...string) []string {
	return append([]string{"make", "--no-print-directory"}, args...)
}

// journey is what a journey's steps share: the copy, its environment, and
// the names the scaffolds and the old tree write.
type journey struct {
	root                          string
	env                           []string
	oldModule, oldSuffix, oldName string
	scaffolds                     []scaffold
	// What the scaffolds write, in every form a file may name them: the
	// operator, its API group and its Go packages. This package's files
	// name them too (and are no scaffold's).
	names []string
}

// newJourney copies this repository and reads its old names.
func newJourney(t *testing.T, scaffolds []scaffold) *journey {
	t.Helper()
	// At one path from run to run (one per test): what a run compiles in
	// the copy, the next finds in Go's cache.
	j := &journey{root: worktree.CopyAt(t, "journey-"+t.Name()), scaffolds: scaffolds}
	j.oldModule, j.oldSuffix, j.oldName = oldNames(t, j.root)
	if !strings.Contains(j.oldModule, j.oldName) {
		t.Fatalf("module path %s does not hold %q, the API groups' suffix %s's first label: the check below would miss it", j.oldModule, j.oldName, j.oldSuffix)
	}
	// The copy has no bin/: the control plane is this repository's, unless
	// the environment names one.
	j.env = os.Environ()
	if os.Getenv(envtest.EnvBinDir) == "" {
		bin := filepath.Join(worktree.Root(t), "bin")
		if _, err := os.Stat(filepath.Join(bin, envtest.BinAPIServer)); err == nil {
			j.env = append(j.env, envtest.EnvBinDir+"="+bin)
		}
	}
	for _, s := range scaffolds {
		j.names = append(j.names, "-e", s.name, "-e", s.group(), "-e", module+"/apis/"+s.short)
	}
	return j
}

// grepScaffolds is git grep with flags for every name of the scaffolds.
func (j *journey) grepScaffolds(flags ...string) []string {
	args := append([]string{"git", "grep"}, flags...)
	return append(append(args, j.names...), "--", ":!hack/template/integration")
}

// scaffoldAndRename is the journey's start: the scaffolds, written under
// the old names (a team that starts writing before it renames), with
// withVersion the first given a second version (addVersion), then
// renamed with the rest, their groups and imports too; then no file but
// the license and the history names the old module, suffix or registry.
func (j *journey) scaffoldAndRename(withVersion bool) []step {
	var steps []step
	var readmes, handlers, imports []string
	for _, s := range j.scaffolds {
		args := []string{"go", "run", "./hack/newoperator", "-name", s.name, "-group", s.short + "." + j.oldSuffix, "-kind", s.kind, "-scope", s.scope}
		if s.owns != "" {
			args = append(args, "-owns", s.owns)
		}
		steps = append(steps, step{name: "scaffold " + s.name + " (" + s.scope + ", owning " + cmp.Or(s.owns, "nothing") + ")", args: args,
			want: []string{"operator " + s.name + " is ready"}})
		readmes = append(readmes, "operators/"+s.name+"/README.md")
		handlers = append(handlers, "./operators/"+s.name+"/internal/handler")
		imports = append(imports, module+"/apis/"+s.short+"/v1alpha1")
	}
	if withVersion {
		steps = append(steps, j.addVersion()...)
		// The first scaffold's handler reads the new version now.
		imports[0] = module + "/apis/" + j.scaffolds[0].short + "/v1beta1"
	}
	return append(steps,
		step{name: "rename the module and the API groups' suffix", args: makeArgs("rename", "MODULE="+module, "GROUP_SUFFIX="+groupSuffix),
			want:    []string{"module path: " + j.oldModule + " -> " + module, "API group suffix: " + j.oldSuffix + " -> " + groupSuffix, "renamed;"},
			wantNot: []string{"still hold an old name"}},
		step{name: "the scaffolds import the renamed module's API packages",
			args: append([]string{"go", "list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}"}, handlers...),
			want: imports},
		// git grep searches what git tracks: a repository of the copy.
		step{name: "git init", args: []string{"git", "init", "-q"}},
		step{name: "git add", args: []string{"git", "add", "-A"}},
		step{name: "no old name is left but in the license and the history (the scaffolds' files included)", empty: true,
			args: []string{"git", "grep", "-n", "-F", "-e", j.oldName, "-e", j.oldModule, "-e", j.oldSuffix,
				"-e", regexp.QuoteMeta(j.oldSuffix), "-e", strings.ReplaceAll(regexp.QuoteMeta(j.oldSuffix), `\`, `\\`),
				"--", ":!LICENSE", ":!CHANGELOG.md"}},
		// What the last step looks for is there now, or it would prove
		// nothing.
		step{name: "the scaffolds are in the tree", args: j.grepScaffolds("-l", "-F"), want: readmes},
	)
}

// addVersion gives the first scaffold's kind a second version with make
// new-version, and writes its conversion as the stubs say: until then, its
// round trips fail. Then make store-version makes the new version the one
// stored and read: the scaffold's integration tests, run later, migrate
// objects stored in the old one to it (TestStoredObjectsMoveToTheStorageVersion).
// make test-journey's only (each make generate is about 40 seconds, which
// make test's short journey has not).
func (j *journey) addVersion() []step {
	v := j.scaffolds[0]
	roundTrips := "./apis/" + v.short + "/v1alpha1/"
	return []step{
		{name: "add v1beta1 to " + v.name + "'s " + v.kind, args: makeArgs("new-version", "NAME="+v.name, "VERSION=v1beta1"),
			want: []string{v.kind + " v1beta1 is served beside v1alpha1, which is still stored."}},
		{name: "its conversion's round trips fail until it is written", args: []string{"go", "test", "-count=1", roundTrips}, fails: true,
			want: []string{"came back different: write the conversion (conversion.go's TODOs)"}},
		{name: "write the conversion, as its TODOs say (both versions hold the same fields)", args: []string{"sed", "-i", "-E",
			`s#^\t// ((dst|in)\.(Spec|Status) = )#\t\1#`, "apis/" + v.short + "/v1alpha1/conversion.go"}},
		{name: "its round trips pass", args: []string{"go", "test", "-count=1", roundTrips},
			want: []string{"ok  \t" + j.oldModule + "/apis/" + v.short + "/v1alpha1"}},
		{name: "store v1beta1, and have the operator read it", args: makeArgs("store-version", "NAME="+v.name, "VERSION=v1beta1"),
			want: []string{v.kind + " v1beta1 is the version stored now, and the operator reads it", "make migrate-storage CRD="}},
		// The storage field that follows the version's name is its own.
		{name: "the CRD stores v1beta1", args: []string{"awk", `/^    name: v1beta1$/ { v = 1 } v && /^    storage: / { print; exit }`,
			"manifests/crds/" + v.short + "/" + v.short + "." + j.oldSuffix + "_" + strings.ToLower(v.kind) + "s.yaml"},
			want: []string{"storage: true"}},
	}
}

// removeScaffolds is the journey's end: the scaffolds go as a sample goes,
// and leave a green tree: what make generate writes, the root module's
// build and vet, and the unit tests that list the operators.
func (j *journey) removeScaffolds() []step {
	var steps []step
	for _, s := range j.scaffolds {
		steps = append(steps, step{name: "remove " + s.name, args: makeArgs("remove-operator", "NAME="+s.name),
			want: []string{"remove apis/" + s.short + " (its API group " + s.group() + ")", "operator " + s.name + " is removed"}})
	}
	return append(steps,
		step{name: "gofmt after the removals", args: []string{"gofmt", "-l", "."}, empty: true},
		step{name: "generated code, CRDs, dashboards and docs are up to date after the removals", args: makeArgs("verify-generate")},
		step{name: "the root module builds after the removals", args: []string{"go", "build", "./..."}},
		step{name: "and vets", args: []string{"go", "vet", "./..."}},
		// Each lists the operators from the tree: each is complete, builds
		// as make build does, can be removed, has its docs index line and
		// dashboard.
		step{name: "the unit tests that list the operators", args: []string{"go", "test", "-count=1",
			"./operators/", "./hack/build/", "./hack/docs/", "./hack/internal/inventory/"}},
		step{name: "the dashboards' unit tests, which list them too", args: []string{"go", "-C", "grafana", "test", "-count=1", "./internal/dashboards/"}},
		step{name: "git add after the removals", args: []string{"git", "add", "-A"}},
		step{name: "nothing of the scaffolds is left", args: j.grepScaffolds("-n", "-F"), empty: true},
	)
}

// TestARenamedScaffoldBuildsAndGoes is make test's short journey, the
// full one's start and end (TestTheJourneyToARepositoryOfYourOwn, make
// test-journey, which CI runs too): on a copy of this repository, one
// operator scaffolded under the old names, the tree renamed; no file but
// the license and the history names the old module, suffix or registry,
// the generated code is up to date, the root module vets, and the
// scaffold's unit tests and those that list the operators pass. Then the
// scaffold is removed, and the tree is green again and holds nothing of
// it.
func TestARenamedScaffoldBuildsAndGoes(t *testing.T) {
	if testing.Short() {
		t.Skip("scaffolds, renames and removes, on a copy of the repository: minutes")
	}
	start := time.Now()
	s := scaffolds[0]
	j := newJourney(t, []scaffold{s})
	steps := j.scaffoldAndRename(false)
	steps = append(steps,
		step{name: "generated code, CRDs, dashboards and docs are up to date", args: makeArgs("verify-generate")},
		// Every package of the root module compiles renamed, its tests
		// included: make lint's type check, without its minutes.
		step{name: "the root module vets", args: []string{"go", "vet", "./..."}},
		step{name: "the scaffold's unit tests and those that list the operators", args: []string{"go", "test", "-count=1",
			"./operators/" + s.name + "/internal/...", "./operators/", "./hack/build/", "./hack/internal/inventory/"},
			want: []string{"ok  \t" + module + "/operators/" + s.name + "/internal/handler"}},
	)
	steps = append(steps, j.removeScaffolds()...)
	j.run(t, steps)
	t.Logf("the short journey took %s", time.Since(start).Round(time.Second))
}

// TestTheJourneyToARepositoryOfYourOwn is a newcomer's whole journey, on a
// copy of this repository (never written): scaffold three operators of
// their own, rename the module and the API groups' suffix (the scaffolds'
// with the rest). Then no file but the license and the history names the
// old module, suffix or registry; lint, the generated-code check, the unit
// tests and every operator's integration tests pass, the pod-terminator's
// two API versions convert on the control plane under their new names;
// then the pod-terminator is removed, and the manifests tests and make run
// pass, with no hand edit in between. Last, the scaffolds are removed as
// the sample was, and the tree is green again and holds nothing of theirs.
// Each piece of work is done once: make lint, verify-generate and the root
// module's unit tests cover the scaffolds as every operator (gofmt, vet,
// golangci-lint, their unit tests, the check that each operator is
// complete). It takes a quarter of an hour: make test-journey runs it, and
// CI after make test.
func TestTheJourneyToARepositoryOfYourOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("scaffolds, renames, removes and runs make test's checks: a quarter of an hour")
	}
	start := time.Now()
	j := newJourney(t, scaffolds)
	var handlersOK, integration, integrationOK, rendered, ready []string
	for _, s := range scaffolds {
		handlersOK = append(handlersOK, "ok  \t"+module+"/operators/"+s.name+"/internal/handler")
		integration = append(integration, "./operators/"+s.name+"/integration")
		integrationOK = append(integrationOK, "ok  \t"+module+"/operators/"+s.name+"/integration")
		rendered = append(rendered, "--- PASS: TestEachOperatorRendersWhatItNeedsAndNothingElse/"+s.name+" ")
		ready = append(ready, s.name+": the example operators/"+s.name+"/example.yaml is Ready")
	}

	// 1 to 3. Three operators of your own, scaffolded under the old
	// names, the first given a second version, then renamed with the
	// rest; no old name is left.
	steps := j.scaffoldAndRename(true)
	steps = append(steps,
		// 4. make test's checks of the whole tree: the scaffolds' gofmt,
		// vet, lint, unit tests and completeness (./operators/) with the
		// rest.
		step{name: "lint", args: makeArgs("lint")},
		step{name: "generated code, CRDs, dashboards and docs are up to date", args: makeArgs("verify-generate")},
		// The root module's: the operators', the scaffolds', the API
		// types' and those of the tools that read the tree. The library's
		// and the other modules' behave as before a rename (make lint has
		// type-checked them renamed): make test runs them in this
		// repository.
		step{name: "the unit tests of the root module", args: []string{"sh", "-c",
			"CGO_ENABLED=1 go test -race -count=1 $(go list ./... | grep -v -E '/integration$|/hack/run$')"},
			// The pod-terminator's API has two versions: the round trips
			// of its conversion pass renamed.
			want: append([]string{"ok  \t" + module + "/apis/chaos/v1alpha1"}, handlersOK...)},
		// 5. On the local control plane, linked into the copy's bin/ from
		// the per-user cache (built there by make test), with promtool,
		// which their metrics checks run.
		step{name: "link the control plane, promtool and prometheus", args: makeArgs("controlplane", "WITH_KWOK=1", "prometheus")},
		// The multi-resource operator's, less two that test nothing a
		// rename changes and take a third of its time (a 20-second
		// permission outage; a bare control plane of their own): make test
		// runs them in this repository.
		step{name: "every operator's integration tests", noSkip: true,
			args: append([]string{"go", "test", "-race", "-count=1", "-v",
				"-skip", "^(TestDegradationOneChildKindForbiddenLeavesTheRestWorking|TestEveryLogLineIsJSONAndNamesTheResource)$",
				"./operators/multi-resource/integration"}, integration...),
			want: append([]string{"ok  \t" + module + "/operators/multi-resource/integration",
				// demo-cluster's Widget follows its Deployment's readiness.
				"--- PASS: TestWidgetsEndToEnd/a_Widget_is_Ready_once_its_Deployment's_pods_are,_and_not_before ",
				// Its two versions, through its conversion webhook.
				"--- PASS: TestBothVersionsServeTheSameObjects ", "--- PASS: TestRBACConversionWebhookGrantsExactlyWhatIsNeeded ",
				"--- PASS: TestRBACConversionPolicyKeepsTheAccountToTheCABundle "}, integrationOK...)},
		// The pod-terminator's two versions, renamed: either reads the
		// same objects through its conversion webhook, and the policy on
		// its CRD (which names it) still holds.
		step{name: "the renamed pod-terminator converts between its two API versions", noSkip: true,
			args: []string{"go", "test", "-race", "-count=1", "-v",
				"-run", "^(TestBothVersionsServeTheSameObjects|TestTheCRDPolicyNamesEveryFieldOfTheSpec|TestTheServiceAccountMayChangeOnlyTheConversionCABundle)$",
				"./operators/pod-terminator/integration"},
			want: []string{"--- PASS: TestBothVersionsServeTheSameObjects ", "--- PASS: TestTheServiceAccountMayChangeOnlyTheConversionCABundle ",
				"ok  \t" + module + "/operators/pod-terminator/integration"}},
		// 6. The sample the platform does not keep: an API group with two
		// versions goes whole.
		step{name: "remove the pod-terminator", args: makeArgs("remove-operator", "NAME=pod-terminator"),
			want: []string{"remove apis/chaos (its API group chaos." + groupSuffix + ")", "operator pod-terminator is removed"}},
		// Less the two tests that deploy and run every operator (make
		// deploy, and their pods), minutes each: make test runs them in
		// this repository; and the upgrade from a release in this
		// repository's history, which the copy has not.
		step{name: "the manifests tests cover them", args: []string{"go", "test", "-count=1",
			"-skip", "^(TestMakeDeployAndUndeploy|TestTheOperatorsRunAsTheirDeploymentsSay|TestAnUpgradeLosesNothing)$", "-v", "./manifests/integration"},
			want:    append([]string{"--- PASS: TestEachOperatorRendersWhatItNeedsAndNothingElse/multi-resource "}, rendered...),
			wantNot: []string{"/pod-terminator "}},
		// 7. make build, then every operator started, each demo at work.
		step{name: "make run starts what is left and what was added, and their demos work", args: makeArgs("run", "RUN_ARGS=-duration 60s"),
			want:    append([]string{"Tenant demo is Ready", "removed the demo of multi-resource", "stopping the local control plane"}, ready...),
			wantNot: []string{"[pod-terminator]"}},
	)
	// 8. The scaffolds go as the sample went.
	steps = append(steps, j.removeScaffolds()...)
	j.run(t, steps)
	t.Logf("the journey took %s", time.Since(start).Round(time.Second))
}

// run runs the steps in order at the copy's root, and stops at the first
// that fails.
func (j *journey) run(t *testing.T, steps []step) {
	t.Helper()
	for _, step := range steps {
		began := time.Now()
		cmd := exec.Command(step.args[0], step.args[1:]...)
		cmd.Dir = j.root
		cmd.Env = j.env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		t.Logf("%s: %s (%s)", step.name, strings.Join(step.args, " "), time.Since(began).Round(100*time.Millisecond))
		if step.empty {
			if out.Len() > 0 {
				t.Fatalf("%s: found\n%s", step.name, out.String())
			}
			continue
		}
		switch {
		case err != nil && !step.fails:
			t.Fatalf("%s: %v\n%s", step.name, err, out.String())
		case err == nil && step.fails:
			t.Fatalf("%s: it passed, want it to fail:\n%s", step.name, out.String())
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
		if step.args[0] == "go" && slices.Contains(step.args, "-v") {
			for _, line := range strings.Split(out.String(), "\n") {
				line = strings.TrimSpace(line)
				if strings.Contains(line, "operators: [") || strings.HasPrefix(line, "--- ") {
					t.Log(line)
				}
				if step.noSkip && strings.HasPrefix(line, "--- SKIP") {
					t.Errorf("%s: a test skipped: %s", step.name, line)
				}
			}
		}
	}
}
