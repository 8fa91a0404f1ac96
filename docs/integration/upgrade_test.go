package integration_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/hack/worktree"
)

// The blocks marked `with make test-upgrade` run, in order, in a copy of
// the work tree that shares this repository's history (they build a
// release from it) and is a repository itself: make test-upgrade runs
// this, as CI does after make test, on a clone with its history. They
// start pods as processes (make devcluster's -pods), which needs root.
func TestTheTutorialsUpgradesRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the upgrade steps run pods as processes (make devcluster DEVCLUSTER_ARGS=-pods), which needs root")
	}
	ctx, tutorials := tutorials(t)
	ran := 0
	for _, path := range tutorials {
		name := filepath.Base(path)
		var blocks []block
		for _, b := range parseFile(t, path) {
			if b.upgrade && b.skip == "" {
				blocks = append(blocks, b)
			}
		}
		if len(blocks) == 0 {
			continue
		}
		t.Run(strings.TrimSuffix(name, ".md"), func(t *testing.T) {
			dir := worktree.CopyAt(t, "tutorial")
			shareHistory(t, root, dir)
			res, err := run(ctx, dir, blocks, t.Logf)
			ran += res.ran
			if err != nil {
				t.Fatalf("%s, %v", name, err)
			}
			t.Logf("%s: the %d shell blocks of its upgrade ran", name, res.ran)
		})
	}
	if ran == 0 && !t.Failed() {
		t.Fatal("no tutorial has a block marked with make test-upgrade: the API versions tutorial's upgrade has some")
	}
}

// shareHistory makes dir, a copy of the work tree of the repository at
// src, a repository whose HEAD is src's and whose objects are src's
// (through git's alternates: nothing is copied), so that what the
// tutorial does with the history (git worktree add of an old release)
// works there as in the reader's clone. The copy's changes against HEAD
// show as uncommitted, as they are in src.
func shareHistory(t *testing.T, src, dir string) {
	t.Helper()
	git := func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			var stderr string
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	common := git(src, "rev-parse", "--path-format=absolute", "--git-common-dir")
	head := git(src, "rev-parse", "HEAD")
	git(dir, "init", "--quiet")
	alternates := filepath.Join(dir, ".git", "objects", "info", "alternates")
	if err := os.WriteFile(alternates, []byte(filepath.Join(common, "objects")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(dir, "update-ref", "HEAD", head)
	git(dir, "read-tree", "HEAD")
}
