// Command dashboards writes Kooper's Grafana dashboards
// (grafana/dashboards/*.json) and the metrics page (docs/metrics.md) from
// the definitions in grafana/internal/dashboards and the metric names in
// grafana/internal/catalog, with a generic dashboard for each operator of
// the repository's operators/ that has none of its own. Run it from
// grafana/ (make generate does):
//
//	go run ./cmd/dashboards
//
// With -check it writes nothing and fails if a file differs.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kooperkit/kooper/grafana/internal/dashboards"
)

func main() {
	dir := flag.String("dir", ".", "the grafana/ directory (its parent is the repository, whose operators/ is read)")
	check := flag.Bool("check", false, "only check that the files are up to date")
	flag.Parse()
	if err := run(*dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	operators, err := dashboards.Operators(os.DirFS(filepath.Join(dir, "..")))
	if err != nil {
		return err
	}
	files, err := dashboards.Files(operators)
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var stale []string
	for _, p := range paths {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if check {
			have, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(have, files[p]) {
				stale = append(stale, p)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("could not create the directory of %s: %w", p, err)
		}
		if err := os.WriteFile(path, files[p], 0o644); err != nil {
			return fmt.Errorf("could not write %s: %w", p, err)
		}
		fmt.Println("wrote", path)
	}
	if len(stale) > 0 {
		return errors.New("out of date, run `make generate`: " + strings.Join(stale, ", "))
	}
	return nil
}
