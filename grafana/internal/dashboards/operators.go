package dashboards

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// Operators lists the operators of the repository whose root is root: the
// directories of operators/ that have a cmd/<name> directory, sorted by name.
// operators/internal, shared code with no command, is not one.
func Operators(root fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(root, "operators")
	if err != nil {
		return nil, fmt.Errorf("could not list the operators: %w", err)
	}
	var names []string
	for _, e := range entries { // fs.ReadDir sorts them by name
		if !e.IsDir() {
			continue
		}
		info, err := fs.Stat(root, path.Join("operators", e.Name(), "cmd", e.Name()))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("could not read the command of operator %s: %w", e.Name(), err)
		case info.IsDir():
			names = append(names, e.Name())
		}
	}
	return names, nil
}
