package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// marker returns an operator's marker comment, built at run time so that
// this file holds none.
func marker(kind, name string) string { return "+kooper:" + "operator" + kind + "=" + name }

// fixture is a small repository in this one's shape: module
// example.org/old/mod, API groups shop.old.example and bank.old.example,
// operators shop and bank, images in ghcr.io/old, and a module of its own
// in sub/ that reaches the root through a replace.
func fixture() map[string]string {
	return map[string]string{
		"go.mod":                          "module example.org/old/mod\n\ngo 1.26\n",
		"hack/codegen/generate.sh":        "#!/bin/sh\n",
		"Makefile":                        "IMAGE_REGISTRY ?= ghcr.io/old\n",
		"LICENSE":                         "Copyright the example.org/old/mod authors\n",
		"CHANGELOG.md":                    "- moved to example.org/old/mod, groups shop.old.example\n",
		".golangci.yml":                   "formatters:\n  settings:\n    goimports:\n      local-prefixes: [example.org/old/mod]\n",
		"operators/shop/cmd/shop/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\tshopv1alpha1 \"example.org/old/mod/apis/shop/v1alpha1\"\n)\n\nfunc main() { fmt.Println(shopv1alpha1.GroupName) }\n",
		"operators/shop/README.md":        "# shop\n\nSells `shop.old.example` things; image ghcr.io/old/shop.\n",
		"operators/bank/cmd/bank/main.go": "package main\n\nfunc main() {}\n",
		"apis/shop/v1alpha1/doc.go": "// +k8s:openapi-gen=true\n// +k8s:openapi-model-package=org.example.old.mod.apis.shop.v1alpha1\n// +groupName=shop.old.example\npackage v1alpha1\n\n" +
			"// GroupName is the group's name.\nconst GroupName = \"shop.old.example\"\n",
		"apis/bank/v1alpha1/doc.go":      "// +groupName=bank.old.example\npackage v1alpha1\n",
		"manifests/shop/deployment.yaml": "image: ghcr.io/old/shop:latest\n",
		"docs/regex.md":                  "`-o custom-columns=SLOTS:.metadata.annotations.sharding\\\\.old\\\\.example/slots`\n\n`^apiVersion: \\S+\\.old\\.example/`\n",
		"sub/go.mod":                     "module example.org/old/mod/sub\n\ngo 1.26\n\nrequire example.org/old/mod v0.0.0\n\nreplace example.org/old/mod => ../\n",
		"sub/main.go":                    "package main\n\nimport _ \"example.org/old/mod/apis/shop/v1alpha1\"\n\nfunc main() {}\n",
	}
}

// write writes files into a new directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeMake puts a make first on PATH that records its arguments in the
// file it returns and exits with status; the real one is not run.
func fakeMake(t *testing.T, status int) string {
	t.Helper()
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	script := "#!/bin/sh\necho \"$@\" >>" + calls + "\n"
	if status != 0 {
		script += "echo make: generate broke >&2\nexit 1\n"
	}
	if err := os.WriteFile(filepath.Join(bin, "make"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

func read(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runIn runs the command with args and -root root, and returns its exit
// status and output.
func runIn(root string, args ...string) (status int, stdout, stderr string) {
	var out, errs bytes.Buffer
	args = append(args[:1:1], append([]string{"-root", root}, args[1:]...)...)
	status = exit(run(args, &out, &errs), &errs)
	return status, out.String(), errs.String()
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTheCommandLine(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStatus int
		wantStderr string
	}{
		{"no command", nil, 2, "usage:"},
		{"an unknown command", []string{"remove"}, 2, `unknown command "remove"`},
		{"-h of a command", []string{"remove-operator", "-h"}, 0, "-dry-run"},
		{"an unknown flag", []string{"remove-operator", "-names", "x"}, 2, "flag provided but not defined: -names"},
		{"a root that is no repository", []string{"remove-operator", "-name", "x", "-root", os.TempDir()}, 2, "is not a Kooper repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if status := exit(run(tt.args, &stdout, &stderr), &stderr); status != tt.wantStatus {
				t.Errorf("got exit status %d, want %d", status, tt.wantStatus)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("got stderr %q, want it to say %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
