package worktree_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kooperkit/kooper/hack/internal/worktree"
)

func TestACopyHasTheRepositorysFilesAndSumSeesAChange(t *testing.T) {
	root := worktree.Copy(t)
	for _, f := range []string{"go.mod", "hack/codegen/generate.sh", "hack/internal/worktree/worktree.go"} {
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
