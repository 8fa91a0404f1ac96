package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kooperkit/kooper/hack/internal/markdown"
)

// checkLinks returns a problem for each relative link of the Markdown
// files (relative to root) that names no file or directory, and how many
// links it checked.
func checkLinks(root string, files []string) ([]problem, int, error) {
	var problems []problem
	checked := 0
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, 0, err
		}
		for _, l := range markdown.Links(strings.Split(string(src), "\n")) {
			p, err := markdown.Resolve(rel, l.Target)
			if err != nil {
				problems = append(problems, problem{rel, l.Line, err.Error()})
				continue
			}
			if p == "" {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				problems = append(problems, problem{rel, l.Line, fmt.Sprintf("link %q: %s does not exist", l.Target, p)})
			}
		}
	}
	return problems, checked, nil
}
