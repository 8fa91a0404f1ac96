package main

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = "../.."

// Every include block of the repository's Markdown equals its region, every
// go block of README.md and docs/*.md is an include, there is at least one
// include, and every operators list is up to date.
func TestTheDocsQuoteTheirSourcesExactly(t *testing.T) {
	res, err := processAll(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Problems {
		t.Errorf("%s", p)
	}
	for _, in := range res.Stale {
		t.Errorf("%s:%d: block differs from %s; run `go run ./hack/docs` from the repository root", in.File, in.Line, in.ref())
	}
	for _, l := range res.StaleLists {
		t.Errorf("%s:%d: operators list differs from operators/*/README.md; run `go run ./hack/docs` from the repository root", l.File, l.Line)
	}
	t.Logf("%d include blocks and %d operators lists in %d Markdown files", len(res.Includes), len(res.Lists), res.Files)
}

// The Go files the docs quote compile, with their tests: go vet builds and
// type-checks each of their packages.
func TestTheQuotedSourcesCompile(t *testing.T) {
	res, err := processAll(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// Package directories by module root: grafana/, bench/ and
	// hack/controlplane/ are modules of their own.
	pkgs := map[string][]string{}
	for _, in := range res.Includes {
		if !strings.HasSuffix(in.Path, ".go") {
			continue
		}
		dir := filepath.Join(root, filepath.FromSlash(path.Dir(in.Path)))
		mod, err := moduleRoot(root, dir)
		if err != nil {
			t.Errorf("%s:%d: %v", in.File, in.Line, err)
			continue
		}
		rel, err := filepath.Rel(mod, dir)
		if err != nil {
			t.Fatal(err)
		}
		pkg := "./" + filepath.ToSlash(rel)
		if !slices.Contains(pkgs[mod], pkg) {
			pkgs[mod] = append(pkgs[mod], pkg)
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("got no included Go file, want the tutorials to quote some")
	}
	for mod, list := range pkgs {
		slices.Sort(list)
		cmd := exec.CommandContext(t.Context(), "go", append([]string{"vet"}, list...)...)
		cmd.Dir = mod
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("the quoted packages %v of %s do not compile (go vet: %v):\n%s", list, mod, err, out)
			continue
		}
		t.Logf("go vet %s in %s: ok", strings.Join(list, " "), mod)
	}
}

// moduleRoot returns the directory of the go.mod that dir belongs to,
// without leaving root.
func moduleRoot(root, dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if d == root || filepath.Dir(d) == d {
			return "", &os.PathError{Op: "find go.mod", Path: dir, Err: os.ErrNotExist}
		}
	}
}

// Every relative link of every Markdown file of the repository names a file
// or directory that exists.
func TestTheDocsLinkToFilesThatExist(t *testing.T) {
	files, err := markdownFiles(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	problems, checked, err := checkLinks(repoRoot, files)
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("got no relative link in any Markdown file, want some")
	}
	for _, p := range problems {
		t.Errorf("%s", p)
	}
	t.Logf("%d relative links in %d Markdown files", checked, len(files))
}
