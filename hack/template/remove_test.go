package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/hack/worktree"
)

// What remove-operator cannot act on is refused, exit status 2, saying
// why, and the tree is left as it was.
func TestRemoveOperatorRefusals(t *testing.T) {
	files := fixture()
	files["docs/quote.md"] = "<!-- include: operators/shop/cmd/shop/main.go -->\n```go\npackage main\n```\n"
	root := writeTree(t, files)
	before := worktree.Sum(t, root)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no name", nil, []string{"-name is required"}},
		{"an operator that is not there", []string{"-name", "cart"}, []string{`no such operator "cart": operators/cart/cmd/cart does not exist; the operators are bank, shop`}},
		{"an include of what goes, left outside what goes", []string{"-name", "shop"}, []string{
			"docs/quote.md:1: quotes operators/shop/cmd/shop/main.go, which goes with shop",
			"shop is not removed while the problems above are there",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, stderr := runIn(root, append([]string{"remove-operator"}, tt.args...)...)
			if status != 2 {
				t.Errorf("got exit status %d, want 2", status)
			}
			for _, want := range append(tt.want, "nothing was changed") {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
			if worktree.Sum(t, root) != before {
				t.Fatal("the tree changed")
			}
		})
	}
}

// remove-operator removes what is the operator's, edits what its markers
// give it, formats, runs make generate and go mod tidy, and names what
// still mentions it.
func TestRemoveOperator(t *testing.T) {
	files := fixture()
	files["operators/bank/README.md"] = "# bank\n\nKeeps; unlike the shop operator, sells nothing.\n"
	files["docs/index.md"] = "# Index\n\n- [shop](../operators/shop/README.md) <!-- " + marker("", "shop") + " -->\n- bank\n"
	files["catalog.go"] = "package catalog\n\nvar ops = map[string]int{\n\t\"bank\": 1,\n\t\"shop\": 22, // " + marker("", "shop") + "\n}\n"
	root := writeTree(t, files)
	calls := fakeMake(t, 0)

	status, stdout, stderr := runIn(root, "remove-operator", "-name", "shop", "-dry-run")
	if status != 0 || !strings.Contains(stdout, "remove operators/shop (its code)") || !strings.Contains(stdout, "dry run: nothing was changed") {
		t.Fatalf("dry run: got status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "operators", "shop")); err != nil {
		t.Fatalf("the dry run removed operators/shop: %v", err)
	}

	status, stdout, stderr = runIn(root, "remove-operator", "-name", "shop")
	if status != 0 {
		t.Fatalf("got exit status %d, want 0\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
	for _, p := range []string{"operators/shop", "apis/shop", "manifests/shop", "sub/main.go"} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); !os.IsNotExist(err) {
			t.Errorf("%s: got %v, want it removed", p, err)
		}
	}
	for _, p := range []string{"operators/bank/cmd/bank/main.go", "apis/bank/v1alpha1/doc.go", "sub/go.mod"} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			t.Errorf("%s: got %v, want it kept", p, err)
		}
	}
	if got, want := read(t, root, "catalog.go"), "package catalog\n\nvar ops = map[string]int{\n\t\"bank\": 1,\n}\n"; got != want {
		t.Errorf("catalog.go: got\n%s\nwant\n%s", got, want)
	}
	if got, want := read(t, root, "docs/index.md"), "# Index\n\n- bank\n"; got != want {
		t.Errorf("docs/index.md: got\n%s\nwant\n%s", got, want)
	}
	if got, want := readFile(t, calls), "--no-print-directory generate\n"; got != want {
		t.Errorf("got make run with %q, want %q", got, want)
	}
	for _, want := range []string{"operator shop is removed", "Left to you: these files still name shop", "operators/bank/README.md (1)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}
}

// When make generate fails, what was removed and edited is put back and
// make generate runs once more.
func TestAFailedRemovalIsUndone(t *testing.T) {
	root := writeTree(t, fixture())
	before := worktree.Sum(t, root)
	calls := fakeMake(t, 1)
	status, _, stderr := runIn(root, "remove-operator", "-name", "shop")
	if status != 1 || !strings.Contains(stderr, "the removal of shop failed, and was undone") {
		t.Errorf("got status %d, stderr %q; want 1 and the removal undone", status, stderr)
	}
	if got, want := readFile(t, calls), strings.Repeat("--no-print-directory generate\n", 2); got != want {
		t.Errorf("got make run with %q, want %q", got, want)
	}
	if worktree.Sum(t, root) != before {
		t.Error("the tree changed")
	}
}
