package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/hack/worktree"
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

// Input the rename cannot act on is refused, exit status 2, saying why,
// and the tree is left byte for byte as it was.
func TestRenameRefusals(t *testing.T) {
	root := writeTree(t, fixture())
	before := worktree.Sum(t, root)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing to rename", nil, "nothing to do: give -module, -group-suffix or -registry"},
		{"a module path with a space", []string{"-module", "example.com/acme platform"}, `-module "example.com/acme platform" is not a valid module path`},
		{"a module path without a dot in its first element", []string{"-module", "acme/platform"}, `-module "acme/platform" is not a valid module path`},
		{"a module path with an empty element", []string{"-module", "example.com//platform"}, `-module "example.com//platform" is not a valid module path`},
		{"a suffix with capitals", []string{"-group-suffix", "Acme.example.com"}, `-group-suffix "Acme.example.com" is not a DNS name`},
		{"a suffix starting with a dash", []string{"-group-suffix", "-acme.example.com"}, `-group-suffix "-acme.example.com" is not a DNS name`},
		{"a suffix of one label", []string{"-group-suffix", "acme"}, `-group-suffix "acme" has one label`},
		{"a suffix of Kubernetes", []string{"-group-suffix", "acme.k8s.io"}, "groups under k8s.io are reserved"},
		{"a suffix too long for the groups", []string{"-group-suffix", strings.Repeat("a.", 125) + "com"}, "the group bank." + strings.Repeat("a.", 125) + "com would not be valid"},
		{"a registry with capitals", []string{"-module", "example.com/acme/platform", "-registry", "GHCR.io/Acme"}, `-registry "GHCR.io/Acme" is not an image registry`},
		{"a module whose default registry is none", []string{"-module", "example.com/Acme~x/platform"}, "no image registry follows from module"},
		{"an argument", []string{"-module", "example.com/a/b", "extra"}, `unexpected arguments ["extra"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, stdout, stderr := runIn(root, append([]string{"rename"}, tt.args...)...)
			if status != 2 {
				t.Errorf("got exit status %d, want 2", status)
			}
			if !strings.Contains(stderr, tt.want) || (tt.name != "an argument" && !strings.Contains(stderr, "nothing was changed")) {
				t.Errorf("got stderr %q, want it to say %q and that nothing was changed", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("got stdout %q, want nothing", stdout)
			}
			if worktree.Sum(t, root) != before {
				t.Fatal("the tree changed")
			}
		})
	}
}

// Which suffix is replaced: the one most groups share, or the one given;
// groups split evenly are refused.
func TestRenameFindsTheSuffixToReplace(t *testing.T) {
	files := fixture()
	files["apis/web/v1/doc.go"] = "// +groupName=web.other.example\npackage v1\n"
	files["apis/cart/v1/doc.go"] = "// +groupName=cart.other.example\npackage v1\n"
	root := writeTree(t, files)
	status, _, stderr := runIn(root, "rename", "-group-suffix", "acme.example.com")
	if status != 2 || !strings.Contains(stderr, "the API groups have suffixes old.example, other.example as often each: give the one to replace with -from-group-suffix") {
		t.Errorf("got status %d, stderr %q; want a refusal naming both suffixes", status, stderr)
	}
	status, stdout, stderr := runIn(root, "rename", "-group-suffix", "acme.example.com", "-from-group-suffix", "other.example", "-dry-run")
	if status != 0 || !strings.Contains(stdout, "API group suffix: other.example -> acme.example.com") || !strings.Contains(stdout, "dry run: nothing was changed") {
		t.Errorf("got status %d, stdout %q, stderr %q; want other.example renamed in a dry run", status, stdout, stderr)
	}
}

// A rename rewrites every form of every old name in every file but the
// license and the history, formats, runs make generate and go mod tidy in
// every module, and says what old name is left.
func TestRename(t *testing.T) {
	root := writeTree(t, fixture())
	calls := fakeMake(t, 0)
	status, stdout, stderr := runIn(root, "rename", "-module", "example.com/acme/platform", "-group-suffix", "acme.example.com")
	if status != 0 {
		t.Fatalf("got exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	for _, want := range []string{
		"module path: example.org/old/mod -> example.com/acme/platform",
		"API group suffix: old.example -> acme.example.com",
		"image registry: ghcr.io/old -> example.com/acme", // the module path without its last element
		"running go mod tidy in sub",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}
	for name, want := range map[string]string{
		"go.mod":                          "module example.com/acme/platform\n\ngo 1.26\n",
		"sub/go.mod":                      "module example.com/acme/platform/sub\n\ngo 1.26\n\nrequire example.com/acme/platform v0.0.0\n\nreplace example.com/acme/platform => ../\n",
		"Makefile":                        "IMAGE_REGISTRY ?= example.com/acme\n",
		"LICENSE":                         "Copyright the example.org/old/mod authors\n",
		"CHANGELOG.md":                    "- moved to example.org/old/mod, groups shop.old.example\n",
		".golangci.yml":                   "formatters:\n  settings:\n    goimports:\n      local-prefixes: [example.com/acme/platform]\n",
		"operators/shop/cmd/shop/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\tshopv1alpha1 \"example.com/acme/platform/apis/shop/v1alpha1\"\n)\n\nfunc main() { fmt.Println(shopv1alpha1.GroupName) }\n",
		"apis/shop/v1alpha1/doc.go": "// +k8s:openapi-gen=true\n// +k8s:openapi-model-package=com.example.acme.platform.apis.shop.v1alpha1\n// +groupName=shop.acme.example.com\npackage v1alpha1\n\n" +
			"// GroupName is the group's name.\nconst GroupName = \"shop.acme.example.com\"\n",
		"manifests/shop/deployment.yaml": "image: example.com/acme/shop:latest\n",
		"docs/regex.md":                  "`-o custom-columns=SLOTS:.metadata.annotations.sharding\\\\.acme\\\\.example\\\\.com/slots`\n\n`^apiVersion: \\S+\\.acme\\.example\\.com/`\n",
	} {
		if got := read(t, root, name); got != want {
			t.Errorf("%s: got\n%s\nwant\n%s", name, got, want)
		}
	}
	if got, want := readFile(t, calls), "--no-print-directory generate\n"; got != want {
		t.Errorf("got make run with %q, want %q", got, want)
	}
	if strings.Contains(stdout, "Left to you: these files still hold an old name") {
		t.Errorf("got old names left:\n%s", stdout)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// When make generate fails, the files the rename changed are put back and
// make generate runs once more, to restore what it wrote: here a make that
// always fails, so the tree ends as it began.
func TestAFailedRenameIsUndone(t *testing.T) {
	root := writeTree(t, fixture())
	before := worktree.Sum(t, root)
	calls := fakeMake(t, 1)
	status, _, stderr := runIn(root, "rename", "-module", "example.com/acme/platform")
	if status != 1 || !strings.Contains(stderr, "the rename failed, and was undone") {
		t.Errorf("got status %d, stderr %q; want 1 and the rename undone", status, stderr)
	}
	if got, want := readFile(t, calls), strings.Repeat("--no-print-directory generate\n", 2); got != want {
		t.Errorf("got make run with %q, want %q", got, want)
	}
	if worktree.Sum(t, root) != before {
		t.Error("the tree changed")
	}
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
		{"-h of a command", []string{"rename", "-h"}, 0, "-group-suffix"},
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
