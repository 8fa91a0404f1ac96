package main

import (
	"bufio"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// deployPage is the page whose commands TestTheDeployPageCommandsRun runs.
const deployPage = "docs/deploy.md"

// pageOperator is the name the page's commands give the operator they act
// on, for the reader to replace with one of theirs: the test runs them with
// the repository's first operator.
const pageOperator = "my-operator"

// Every command in the code blocks of docs/deploy.md is run by a test: the
// make targets of images here (with a go and a docker that only record
// their calls, whose hack/image commands are then run in this process), the
// rendering of manifests here, and the rest, which needs a cluster, by
// manifests/integration. A command no test runs fails.
func TestTheDeployPageCommandsRun(t *testing.T) {
	commands := pageCommands(t, filepath.Join(root, deployPage))
	if len(commands) == 0 {
		t.Fatalf("no command in the sh blocks of %s", deployPage)
	}
	if operator == "" {
		t.Fatal("no operator in operators/ (operators/<name>/cmd/<name>) to run the commands with")
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	// The image targets and docker-build's REVISION come in one change of
	// the Makefile; until then, the make commands are not checked.
	imageTargets := regexp.MustCompile(`(?m)^image:`).Match(makefile)

	for _, line := range commands {
		t.Run(line, func(t *testing.T) {
			args := strings.Fields(strings.ReplaceAll(line, pageOperator, operator))
			vars, targets := makeArgs(args[1:])
			if args[0] == "make" && !imageTargets && !slices.Equal(targets, []string{"deploy"}) {
				t.Skip("the Makefile has no image targets yet")
			}
			switch {
			case args[0] == "make" && slices.Equal(targets, []string{"image"}),
				args[0] == "make" && slices.Equal(targets, []string{"image-push"}):
				ops := operatorsOf(t, vars)
				recorded := makeRecorded(t, args[1:]...)
				built := builtBinaries(t, recorded)
				var runs []call
				for _, c := range recorded {
					if c.tool == "go" && len(c.args) > 0 && c.args[0] == "run" {
						runs = append(runs, c)
					}
				}
				if len(runs) != len(ops) {
					t.Fatalf("hack/image ran %d times, want once per operator %q", len(runs), ops)
				}
				dir := t.TempDir()
				for i, c := range runs {
					r := replay(t, c, built, dir, host)
					if r.operator != ops[i] {
						t.Errorf("got the image of %s, want %s's", r.operator, ops[i])
					}
					flag := map[string]string{"image": "tag", "image-push": "push"}[targets[0]]
					if got, want := r.flags[flag], imageOf(vars, ops[i]); got != want {
						t.Errorf("got -%s %q, want %q (IMG, or IMAGE_REGISTRY/<operator>:VERSION)", flag, got, want)
					}
				}
			case args[0] == "make" && slices.Equal(targets, []string{"docker-build"}):
				ops := operatorsOf(t, vars)
				checkDockerBuild(t, makeRecorded(t, args[1:]...), ops, func(op string) string { return imageOf(vars, op) }, vars["GO_IMAGE"])
			case args[0] == "manifests/deploy.sh" && len(args) == 4 && args[1] == "render":
				checkRender(t, args[2], args[3])
			case args[0] == "make" && slices.Equal(targets, []string{"deploy"}):
				// What it applies, here; applying it, on a local control
				// plane.
				ops := operatorsOf(t, vars)
				if len(ops) != 1 || vars["IMG"] == "" {
					t.Fatalf("want make deploy with one OPERATOR and its IMG, got %q", line)
				}
				checkRender(t, ops[0], vars["IMG"])
				checkIntegrationTests(t, "TestMakeDeployAndUndeploy", "TestAnImageOverrideChangesTheImageOnly")
			case len(args) == 4 && args[0] == "kubectl" && args[1] == "apply" && args[2] == "-k":
				out, err := exec.Command(kubectlPath(t), "kustomize", filepath.Join(root, args[3])).Output()
				if err != nil {
					t.Fatalf("kubectl kustomize %s: %v", args[3], err)
				}
				checkRendered(t, string(out), "ghcr.io/kooperkit/"+filepath.Base(args[3])+":latest")
				checkIntegrationTests(t, "TestTheManifestsApplyOnTheServer")
			default:
				t.Errorf("%s runs %q, which no test runs: test it here, or take it out of the page's code blocks", deployPage, line)
			}
		})
	}
}

// pageCommands returns the lines of the sh code blocks of the Markdown file
// at path, without blank lines and comments.
func pageCommands(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		commands []string
		inSh     bool
	)
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		switch {
		case strings.HasPrefix(line, "```"):
			inSh = !inSh && line == "```sh"
		case inSh && line != "" && !strings.HasPrefix(line, "#"):
			if strings.ContainsAny(line, `"'$\|;&<>`) {
				t.Errorf("%s: %q: want a plain command, without quotes, variables or shell operators", path, line)
			}
			commands = append(commands, line)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return commands
}

// makeArgs splits make's arguments into variables (NAME=VALUE) and targets.
func makeArgs(args []string) (vars map[string]string, targets []string) {
	vars = map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			vars[k] = v
		} else {
			targets = append(targets, a)
		}
	}
	return vars, targets
}

// operatorsOf returns OPERATOR's operators, or the Makefile's OPERATORS:
// the directories operators/<name>/cmd, sorted.
func operatorsOf(t *testing.T, vars map[string]string) []string {
	t.Helper()
	if op, ok := vars["OPERATOR"]; ok {
		return strings.Fields(op)
	}
	dirs, err := filepath.Glob(filepath.Join(root, "operators", "*", "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, d := range dirs {
		ops = append(ops, filepath.Base(filepath.Dir(d)))
	}
	slices.Sort(ops)
	return ops
}

// imageOf is the Makefile's image of op: IMG, else
// IMAGE_REGISTRY/<operator>:VERSION with VERSION as the tests set it.
func imageOf(vars map[string]string, op string) string {
	if img := vars["IMG"]; img != "" {
		return img
	}
	reg := vars["IMAGE_REGISTRY"]
	if reg == "" {
		reg = "ghcr.io/kooperkit"
	}
	return reg + "/" + op + ":" + testVersion
}

// checkIntegrationTests fails unless manifests/integration has these tests,
// which run the rest of a command on a local control plane in make test.
func checkIntegrationTests(t *testing.T, names ...string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "manifests", "integration", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, name := range names {
		if !regexp.MustCompile(`(?m)^func ` + name + `\(t \*testing\.T\)`).MatchString(src.String()) {
			t.Errorf("manifests/integration has no test %s, which %s says runs this command", name, deployPage)
		}
	}
}
