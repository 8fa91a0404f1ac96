// Package worktree copies this repository's work tree for the tools'
// tests, which write into the copy, never into the repository: the files
// git tracks and the untracked ones it does not ignore (so the copy is what
// the work tree is now, edits included, and has no bin/), and a fingerprint
// of a tree, to tell that nothing changed.
package worktree

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Root returns the repository holding the working directory: the nearest
// directory at or above it with a go.mod and hack/codegen/generate.sh.
func Root(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		_, errMod := os.Stat(filepath.Join(d, "go.mod"))
		_, errGen := os.Stat(filepath.Join(d, "hack", "codegen", "generate.sh"))
		if errMod == nil && errGen == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no repository at or above %s", wd)
		}
	}
}

// Copy copies the repository holding the working directory into a new
// temporary directory, removed when the test ends, and returns it.
func Copy(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	copyTree(t, Root(t), dst)
	return dst
}

// CopyAt is Copy into a directory whose path is the same on every run of
// the tests of this repository (under the temporary directory, named for
// name and for where the repository is), emptied first and removed when the
// test ends. Go's build cache keys what it compiles by the package's
// directory too: what is built in a copy at a new path each run is
// compiled again each run, all of the repository's packages, while a copy
// at the same path finds what the last run compiled. A second copy of the
// same name at once (another test process, another test) takes a new
// temporary directory instead, as Copy does: the path is held by an
// exclusive lock on the file beside it.
func CopyAt(t testing.TB, name string) string {
	t.Helper()
	src := Root(t)
	sum := sha256.Sum256([]byte(src))
	dst := filepath.Join(os.TempDir(), "kooper-"+hex.EncodeToString(sum[:4]), name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(dst+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		t.Logf("%s is in use (%v): copying into a new temporary directory, whose builds are not cached", dst, err)
		return Copy(t)
	}
	// Closing the file releases the lock, after the copy is gone: t.Cleanup
	// runs last what was registered first.
	t.Cleanup(func() { _ = lock.Close() })
	removeAll := func() error {
		// Go's module cache and tests' read-only files: make every
		// directory writable first.
		_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		return os.RemoveAll(dst)
	}
	if err := removeAll(); err != nil {
		t.Fatalf("could not empty %s, left by an earlier run: %v", dst, err)
	}
	t.Cleanup(func() {
		if err := removeAll(); err != nil {
			t.Errorf("could not remove the copy %s: %v", dst, err)
		}
	})
	copyTree(t, src, dst)
	return dst
}

// copyTree copies the work tree's files from src into dst.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	files, err := files(src)
	if err != nil {
		t.Fatalf("could not list the work tree: %v", err)
	}
	for _, f := range files {
		err := copyFile(filepath.Join(src, f), filepath.Join(dst, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since it was listed: others edit the tree too
		}
		if err != nil {
			t.Fatalf("could not copy the work tree: %v", err)
		}
	}
}

// files lists the work tree's files, relative to root: git's tracked and
// untracked-but-not-ignored ones, less those deleted from the work tree.
// Without git (a source archive), every file but .git/ and bin/.
func files(root string) ([]string, error) {
	cmd := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(root, ".git")); statErr == nil {
			return nil, fmt.Errorf("git ls-files: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		return walk(root)
	}
	var names []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			return nil, err
		}
		if fi.Mode().IsRegular() {
			names = append(names, filepath.FromSlash(name))
		}
	}
	return names, nil
}

func walk(root string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (rel == ".git" || rel == "bin") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			names = append(names, rel)
		}
		return nil
	})
	return names, err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// Sum returns a fingerprint of the tree at root: every path, file mode and
// file content. Two trees with the same Sum are byte-identical.
func Sum(t testing.TB, root string) string {
	t.Helper()
	type entry struct{ path, line string }
	var entries []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %s", filepath.ToSlash(rel), fi.Mode())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			line += " " + hex.EncodeToString(h[:])
		}
		entries = append(entries, entry{rel, line})
		return nil
	})
	if err != nil {
		t.Fatalf("could not read the tree %s: %v", root, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintln(h, e.line)
	}
	return hex.EncodeToString(h.Sum(nil))
}
