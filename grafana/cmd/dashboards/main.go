// Command dashboards writes Kooper's Grafana dashboards
// (grafana/dashboards/*.json) and the metrics page (docs/metrics.md) from
// the definitions in grafana/internal/dashboards and the metric names in
// grafana/internal/catalog, with a generic dashboard for each operator of
// the repository's operators/ that has none of its own. Run it from
// grafana/ (make generate does):
//
//	go run ./cmd/dashboards
//
// The JSON files of grafana/dashboards are all its own: it removes those it
// no longer writes, such as the dashboard of an operator that is gone.
// With -check it writes nothing and fails if a file differs, is missing or
// is not one it writes.
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
	// A dashboard no longer generated is stale too: removed, or reported.
	jsons, err := filepath.Glob(filepath.Join(dir, "dashboards", "*.json"))
	if err != nil {
		return err
	}
	for _, path := range jsons {
		p := "dashboards/" + filepath.Base(path)
		if _, ok := files[p]; ok {
			continue
		}
		if check {
			stale = append(stale, p+" (not generated: remove it)")
			continue
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("could not remove %s, which is no longer generated: %w", p, err)
		}
		fmt.Println("removed", path)
	}
	if len(stale) > 0 {
		return errors.New("out of date, run `make generate`: " + strings.Join(stale, ", "))
	}
	return nil
}
