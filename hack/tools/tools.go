// Package tools finds the commands that make builds for the tests beyond Go,
// make and gcc: promtool and prometheus, built from the Go module proxy at
// the pinned version by `make prometheus` (which make test runs first) and
// linked into the repository's bin/.
//
// A test that needs one fails when it is missing, naming the make target
// that builds it: it never skips, so a check cannot go quiet on a machine
// that lacks the tool. Commands of the same name on PATH are not used: they
// may be another version.
package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrMissing is wrapped by Path's error when no bin/ holds the command.
var ErrMissing = errors.New("command not found")

// targets names the make target that builds each command.
var targets = map[string]string{
	"promtool":   "prometheus",
	"prometheus": "prometheus",
}

// Path returns the path of the command name in the first bin/ that holds
// it, looking in the working directory and then in each of its parents but
// the file system's root: the repository's bin/ from any of its packages.
func Path(name string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("could not get the working directory: %w", err)
	}
	return find(wd, name)
}

// find is Path from the directory dir.
func find(dir, name string) (string, error) {
	// Up to, not including, the file system's root: /bin is the system's.
	for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
		p := filepath.Join(d, "bin", name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	hint := "build it into the repository's bin/"
	if target := targets[name]; target != "" {
		hint = "run `make " + target + "` (make test does)"
	}
	return "", fmt.Errorf("%w: no bin/%s in %s or a parent: %s", ErrMissing, name, dir, hint)
}
