package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// findRoot returns the repository holding dir, or dir's nearest parent
// that is one: a go.mod next to hack/codegen/generate.sh and operators/.
// With walkUp false, dir itself must be one.
func findRoot(dir string, walkUp bool) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if isRepo(d) {
			return d, nil
		}
		if !walkUp || filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not a Kooper repository (a go.mod with hack/codegen/generate.sh and operators/): run from one, or pass -root", abs)
		}
	}
}

func isRepo(dir string) bool {
	for _, p := range []string{"go.mod", "hack/codegen/generate.sh", "operators"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return false
		}
	}
	return true
}

// command runs name with args in dir, its output to stdout and stderr.
func command(dir string, stdout, stderr io.Writer, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s in %s: %w", name, strings.Join(args, " "), dir, err)
	}
	return nil
}

// generate runs make generate in root.
func generate(root string, stdout, stderr io.Writer) error {
	fmt.Fprintln(stdout, "running make generate")
	if err := command(root, stdout, stderr, "make", "--no-print-directory", "generate"); err != nil {
		return fmt.Errorf("make generate failed (output above): %w", err)
	}
	return nil
}

// modules returns the directories of the go.mod files under root, root's
// first, skipping .git, bin, testdata and hidden directories.
func modules(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	slices.SortFunc(dirs, func(a, b string) int {
		switch {
		case a == root:
			return -1
		case b == root:
			return 1
		}
		return strings.Compare(a, b)
	})
	return dirs, err
}

// tidy runs go mod tidy in every module under root.
func tidy(root string, stdout, stderr io.Writer) error {
	mods, err := modules(root)
	if err != nil {
		return fmt.Errorf("could not find the modules: %w", err)
	}
	for _, m := range mods {
		rel, _ := filepath.Rel(root, m)
		fmt.Fprintf(stdout, "running go mod tidy in %s\n", rel)
		if err := command(m, stdout, stderr, "go", "mod", "tidy"); err != nil {
			return err
		}
	}
	return nil
}

// gofmt formats the Go files among files (slash-separated, relative to
// root) with gofmt -w.
func gofmt(root string, files []string, stdout, stderr io.Writer) error {
	var gos []string
	for _, f := range files {
		if strings.HasSuffix(f, ".go") {
			gos = append(gos, filepath.FromSlash(f))
		}
	}
	if len(gos) == 0 {
		return nil
	}
	var out bytes.Buffer
	if err := command(root, &out, stderr, "gofmt", append([]string{"-l", "-w"}, gos...)...); err != nil {
		return err
	}
	if out.Len() > 0 {
		fmt.Fprintf(stdout, "gofmt -w:\n%s", out.String())
	}
	return nil
}

// restore puts the files back with undo, then runs make generate once more
// so that the generated code matches them again. It returns err with what
// restoring could not do.
func restore(root string, err error, undo func() error, stdout, stderr io.Writer) error {
	fmt.Fprintln(stderr, "template: putting the files back as they were")
	errs := []error{err}
	if uerr := undo(); uerr != nil {
		errs = append(errs, fmt.Errorf("could not put every file back: %w", uerr))
	}
	if gerr := generate(root, stdout, stderr); gerr != nil {
		errs = append(errs, fmt.Errorf("could not restore the generated code: %w", gerr))
	}
	return errors.Join(errs...)
}
