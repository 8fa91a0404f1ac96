package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// writeAll writes files (by slash-separated path relative to root) into
// root, all or none. Every file must lie in one of dirs, directories that
// must not exist yet and whose parents must. The files are written into a
// temporary directory inside root first (the same file system, so a rename
// moves them), then each of dirs is renamed into place; if one rename fails
// the earlier ones are undone, and the temporary directory is removed
// either way.
func writeAll(root string, dirs []string, files map[string][]byte) (err error) {
	for name := range files {
		if !slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(name, d+"/") }) {
			return fmt.Errorf("%s is outside the directories to create %v", name, dirs)
		}
	}
	for _, d := range dirs {
		dst := filepath.Join(root, filepath.FromSlash(d))
		if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("could not create %s: it exists (nothing was written)", d)
		}
		if fi, err := os.Stat(filepath.Dir(dst)); err != nil || !fi.IsDir() {
			return fmt.Errorf("could not create %s: its parent is not a directory (nothing was written)", d)
		}
	}

	tmp, err := os.MkdirTemp(root, ".newoperator-")
	if err != nil {
		return fmt.Errorf("could not create a temporary directory (nothing was written): %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(tmp); rmErr != nil && err == nil {
			err = fmt.Errorf("could not remove the temporary directory %s: %w", tmp, rmErr)
		}
	}()
	for name, content := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("could not write %s (nothing was written): %w", name, err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return fmt.Errorf("could not write %s (nothing was written): %w", name, err)
		}
	}

	var moved []string
	for _, d := range dirs {
		if beforeMove != nil {
			beforeMove(d)
		}
		src, dst := filepath.Join(tmp, filepath.FromSlash(d)), filepath.Join(root, filepath.FromSlash(d))
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
			continue // no file in it
		}
		// A rename onto an existing empty directory would succeed on
		// Linux: check again, as late as possible.
		if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
			return errors.Join(fmt.Errorf("could not create %s: it appeared meanwhile (nothing was written)", d), unmove(root, tmp, moved))
		}
		if err := os.Rename(src, dst); err != nil {
			return errors.Join(fmt.Errorf("could not move %s into place (nothing was written): %w", d, err), unmove(root, tmp, moved))
		}
		moved = append(moved, d)
	}
	return nil
}

// unmove moves dirs back from root into tmp, undoing writeAll's renames.
func unmove(root, tmp string, dirs []string) error {
	var errs []error
	for _, d := range dirs {
		if err := os.Rename(filepath.Join(root, filepath.FromSlash(d)), filepath.Join(tmp, filepath.FromSlash(d))); err != nil {
			errs = append(errs, fmt.Errorf("could not undo the creation of %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// beforeMove, if set, is called before each directory is moved into place:
// tests make a move fail with it.
var beforeMove func(dir string)
