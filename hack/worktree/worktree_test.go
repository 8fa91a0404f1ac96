package worktree_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kooperkit/kooper/hack/worktree"
)

func TestACopyHasTheRepositorysFilesAndSumSeesAChange(t *testing.T) {
	root := worktree.Copy(t)
	for _, f := range []string{"go.mod", "hack/codegen/generate.sh", "hack/worktree/worktree.go"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the copy lacks %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "bin")); err == nil {
		t.Error("the copy has bin/, which git ignores")
	}
	sum := worktree.Sum(t, root)
	if again := worktree.Sum(t, root); again != sum {
		t.Fatalf("got two sums of one tree, %s and %s", sum, again)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if worktree.Sum(t, root) == sum {
		t.Error("got the same sum after go.mod changed")
	}
}

func TestCopyAtKeepsItsPathFromRunToRunAndNeverSharesIt(t *testing.T) {
	const name = "worktree-test"
	var first string
	t.Run("first", func(t *testing.T) {
		first = worktree.CopyAt(t, name)
		if _, err := os.Stat(filepath.Join(first, "go.mod")); err != nil {
			t.Errorf("the copy lacks go.mod: %v", err)
		}
		// A file of its own, which the next copy must not find.
		if err := os.WriteFile(filepath.Join(first, "left-behind"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// Taken: a second copy of the name at once goes elsewhere.
		if other := worktree.CopyAt(t, name); other == first {
			t.Errorf("two copies at once share %s", first)
		}
	})
	if _, err := os.Stat(first); err == nil {
		t.Errorf("%s is still there after its test ended", first)
	}
	t.Run("second", func(t *testing.T) {
		if again := worktree.CopyAt(t, name); again != first {
			t.Errorf("the second run copied into %s, the first into %s: want one path", again, first)
		}
		if _, err := os.Stat(filepath.Join(first, "left-behind")); err == nil {
			t.Error("the second copy holds a file the first one wrote")
		}
	})
}
