// Command docs keeps the code blocks of the repository's Markdown quoted
// from compiled files.
//
// A source file marks a region with comment lines (# for YAML, shell and
// Makefiles):
//
//	// region: handler
//	...
//	// endregion: handler
//
// and a Markdown file quotes it with an include comment immediately followed
// by a fenced block:
//
//	<!-- include: examples/pod-logger/main.go#handler -->
//	```go
//	...
//	```
//
// The path is relative to the repository root; without #NAME the whole file
// is quoted. The block holds the region's lines without the marker lines of
// any region, dedented by their common leading whitespace, without blank
// lines at either end (so a marker can stand apart from a doc comment).
// Every go block of README.md and docs/*.md must be an include.
//
// From the repository root,
//
//	go run ./hack/docs                     # rewrite every include block from its source
//	go run ./hack/docs -check              # list stale blocks, exit 1 if any
//	go run ./hack/docs docs/tutorial-x.md  # only these files
//
// Both exit 1 on what rewriting cannot fix (a missing file or region, a go
// block that is not an include, no include at all). The tests of this
// package also check that the quoted Go files compile and that every
// relative link of every Markdown file names a file that exists.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// module is the repository's module path, read from go.mod to find the root.
const module = "github.com/kooperkit/kooper"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "docs:", err)
		os.Exit(1)
	}
}

// errFailed is returned by run once the reasons were printed.
var errFailed = errors.New("the documentation needs work (see above)")

func run(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("docs", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: go run ./hack/docs [-check] [-root DIR] [FILE.md ...]\n\nRewrites (or with -check, checks) the include blocks of FILE.md, default every Markdown file of the repository.")
		fl.PrintDefaults()
	}
	check := fl.Bool("check", false, "only list stale blocks and exit 1 if there are any; do not rewrite")
	root := fl.String("root", "", "repository root (default: the directory above the working directory holding the kooper go.mod)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if *root, err = findRoot(wd); err != nil {
			return err
		}
	}

	files, err := markdownFiles(*root)
	if err != nil {
		return err
	}
	if fl.NArg() > 0 {
		if files, err = relativeTo(*root, fl.Args()); err != nil {
			return err
		}
	}
	res, err := process(*root, files)
	if err != nil {
		return err
	}
	failed := len(res.Problems) > 0
	for _, p := range res.Problems {
		fmt.Fprintln(stdout, p)
	}
	for _, in := range res.Stale {
		if *check {
			fmt.Fprintf(stdout, "%s:%d: block differs from %s; run `go run ./hack/docs`\n", in.File, in.Line, in.ref())
			failed = true
		} else {
			fmt.Fprintf(stdout, "%s:%d: rewrote the block from %s\n", in.File, in.Line, in.ref())
		}
	}
	if !*check {
		for file, content := range res.Fixed {
			if err := os.WriteFile(filepath.Join(*root, filepath.FromSlash(file)), content, 0o644); err != nil {
				return err
			}
		}
	}
	if failed {
		return errFailed
	}
	fmt.Fprintf(stdout, "%d include blocks in %d files are up to date\n", len(res.Includes), res.Files)
	return nil
}

// findRoot returns dir or the first of its parents holding the go.mod of
// module.
func findRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module "+module+"\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of %s in %s or above; run from the repository or pass -root", module, dir)
		}
	}
}

// result is what processing every Markdown file of the repository found.
type result struct {
	Files    int // Markdown files read
	Includes []include
	Stale    []include
	Problems []problem
	// Fixed holds the rewritten content of each file with stale blocks,
	// by path relative to the root.
	Fixed map[string][]byte
}

// relativeTo returns paths (relative to the working directory) relative to
// root and slash-separated.
func relativeTo(root string, paths []string) ([]string, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	rels := make([]string, len(paths))
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(absRoot, abs)
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("%s is not a file of the repository %s", p, absRoot)
		}
		rels[i] = filepath.ToSlash(rel)
	}
	return rels, nil
}

// processAll checks the include blocks of every Markdown file under root.
func processAll(root string) (result, error) {
	files, err := markdownFiles(root)
	if err != nil {
		return result{}, err
	}
	return process(root, files)
}

// process checks the include blocks of the Markdown files (relative to
// root). Every go block of README.md and docs/*.md must be an include, and
// there must be at least one include.
func process(root string, files []string) (result, error) {
	res := result{Files: len(files), Fixed: map[string][]byte{}}
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return result{}, err
		}
		fr := processFile(root, rel, src, requiresIncludes(rel))
		res.Includes = append(res.Includes, fr.Includes...)
		res.Stale = append(res.Stale, fr.Stale...)
		res.Problems = append(res.Problems, fr.Problems...)
		if len(fr.Stale) > 0 {
			res.Fixed[rel] = fr.Fixed
		}
	}
	if len(res.Includes) == 0 {
		res.Problems = append(res.Problems, problem{root, 0, "no include found in any Markdown file: the tutorials quote nothing"})
	}
	return res, nil
}

// requiresIncludes reports whether every go block of the Markdown file rel
// must be an include: README.md and docs/*.md.
func requiresIncludes(rel string) bool {
	return rel == "README.md" || path.Dir(rel) == "docs"
}

// markdownFiles returns the *.md files under root, slash-separated and
// relative to root, skipping .git, bin/, vendor/, testdata/ and
// node_modules/ directories.
func markdownFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "vendor", "testdata", "node_modules":
				return filepath.SkipDir
			}
			if rel == "bin" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}
