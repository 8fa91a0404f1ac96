package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/mod/modfile"
)

// repo is what the generator reads of the target repository.
type repo struct {
	root   string
	module string
	// kinds maps each kind declared in apis/ to the package declaring it,
	// groups each API group (+groupName) likewise.
	kinds, groups map[string]string
}

var groupDecl = regexp.MustCompile(`(?m)^// \+groupName=(\S+)`)

// openRepo reads the repository rooted at dir or, with walkUp, at dir's
// nearest parent that is one: a go.mod next to hack/codegen/generate.sh,
// operators/ and manifests/rbac/.
func openRepo(dir string, walkUp bool) (repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return repo{}, err
	}
	root := abs
	for !isRepo(root) {
		parent := filepath.Dir(root)
		if !walkUp || parent == root {
			return repo{}, fmt.Errorf("%s is not a Kooper repository (a go.mod with hack/codegen/generate.sh, apis/, operators/ and manifests/rbac/): run from one, or pass -root", abs)
		}
		root = parent
	}
	r := repo{root: root, kinds: map[string]string{}, groups: map[string]string{}}
	if r.module, err = modulePath(filepath.Join(root, "go.mod")); err != nil {
		return repo{}, err
	}
	if err := r.scanAPIs(); err != nil {
		return repo{}, err
	}
	return r, nil
}

func isRepo(dir string) bool {
	for _, p := range []string{"go.mod", "hack/codegen/generate.sh", "apis", "operators", "manifests/rbac"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return false
		}
	}
	return true
}

// modulePath returns the module path the go.mod file declares.
func modulePath(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	if m := modfile.ModulePath(b); m != "" {
		return m, nil
	}
	return "", fmt.Errorf("%s declares no module", file)
}

// scanAPIs records the kinds and groups of the hand-written API packages
// (apis/<group>/<version>, not the generated apis/client).
func (r *repo) scanAPIs() error {
	apis := filepath.Join(r.root, "apis")
	return filepath.WalkDir(apis, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel == "apis/client" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasPrefix(d.Name(), "zz_generated") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		for _, m := range groupDecl.FindAllSubmatch(b, -1) {
			r.groups[string(m[1])] = pkg
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, b, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("could not read the API types: %w", err)
		}
		for _, decl := range f.Decls {
			if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.TYPE && g.Doc != nil && strings.Contains(g.Doc.Text(), "+genclient") {
				for _, spec := range g.Specs {
					r.kinds[spec.(*ast.TypeSpec).Name.Name] = pkg
				}
			}
		}
		return nil
	})
}

// exists reports whether the slash-separated path exists under the root.
func (r repo) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(rel)))
	return !errors.Is(err, fs.ErrNotExist)
}
