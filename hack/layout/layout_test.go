package layout_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program that imports only kooper/controller gets none of the
// operators', the tools' or the test tooling's modules in its module graph:
// the library is a module of its own (docs/modules.md). The test makes that
// program, a module requiring the library through a replace, and reads its
// go mod graph.
func TestAProgramImportingTheLibraryGetsTheLibrarysModulesOnly(t *testing.T) {
	library, err := filepath.Abs(filepath.Join("..", "..", "kooper"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/consumer\n\ngo 1.26.0\n\n"+
		"require github.com/kooperkit/kooper/kooper v0.0.0\n\n"+
		"replace github.com/kooperkit/kooper/kooper => "+library+"\n")
	write(t, filepath.Join(dir, "main.go"), "package main\n\nimport _ \"github.com/kooperkit/kooper/kooper/controller\"\n\nfunc main() {}\n")
	goCmd(t, dir, "mod", "tidy")
	graph := goCmd(t, dir, "mod", "graph")

	// What the library must not bring: the operators' webhook library and
	// trace exporters, the image tool's registry client, envtest's netlink,
	// the tools' golang.org/x/mod (as a requirement of the library; the
	// Kubernetes libraries require it themselves).
	forbidden := []string{
		"github.com/slok/kubewebhook",
		"go.opentelemetry.io/otel/exporters/",
		"github.com/google/go-containerregistry",
		"github.com/vishvananda/netlink",
		"github.com/prometheus/prometheus",
		"sigs.k8s.io/controller-runtime",
		"k8s.io/kubernetes",
	}
	var edges int
	for line := range strings.Lines(graph) {
		from, to, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		edges++
		for _, f := range forbidden {
			if strings.HasPrefix(to, f) {
				t.Errorf("%s requires %s: a program importing kooper/controller gets it in its module graph", from, to)
			}
		}
		if strings.HasPrefix(from, "github.com/kooperkit/kooper/kooper@") && strings.HasPrefix(to, "golang.org/x/mod@") {
			t.Errorf("the library requires %s, which only the tools use", to)
		}
	}
	if edges < 10 {
		t.Fatalf("go mod graph printed %d edges, too few to be the library's graph:\n%s", edges, graph)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCmd runs go in dir, outside any workspace, with modules fetched as
// needed (the Go module cache already holds the library's).
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out)
}
