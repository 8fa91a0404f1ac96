package inventory

import (
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// Repo is what the inventory read of a repository.
type Repo struct {
	// Root is the repository's directory.
	Root string
	// Module is the module path of its go.mod.
	Module string
	// Operators are the directories operators/<name> with a command
	// cmd/<name>, sorted.
	Operators []string
	// Groups are the hand-written API groups of apis/, by directory.
	Groups map[string]Group
	// Files are its files, slash-separated and relative to Root: what git
	// tracks and the untracked files it does not ignore, or, outside git,
	// every file but those of .git/ and bin/.
	Files []string
}

// A Group is a hand-written API group, apis/<Dir>/<version>/.
type Group struct {
	Dir  string // apis/<Dir>
	Name string // its +groupName
}

var groupNameRE = regexp.MustCompile(`(?m)^// \+groupName=(\S+)`)

// Open reads the repository at root: a directory holding a go.mod and
// operators/.
func Open(root string) (*Repo, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	r := &Repo{Root: abs, Groups: map[string]Group{}}
	if r.Module, err = modulePath(filepath.Join(abs, "go.mod")); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(abs, "operators")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s has no operators/ directory: not a Kooper repository", abs)
	}
	if r.Files, err = listFiles(abs); err != nil {
		return nil, fmt.Errorf("could not list the files of %s: %w", abs, err)
	}
	seen := map[string]bool{}
	for _, f := range r.Files {
		parts := strings.Split(f, "/")
		switch {
		case len(parts) >= 4 && parts[0] == "operators" && parts[2] == "cmd" && parts[3] == parts[1]:
			if !seen[parts[1]] {
				seen[parts[1]] = true
				r.Operators = append(r.Operators, parts[1])
			}
		case len(parts) == 4 && parts[0] == "apis" && parts[1] != "client" && strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go"):
			b, err := os.ReadFile(filepath.Join(abs, filepath.FromSlash(f)))
			if err != nil {
				return nil, err
			}
			if m := groupNameRE.FindSubmatch(b); m != nil {
				r.Groups[parts[1]] = Group{Dir: parts[1], Name: string(m[1])}
			}
		}
	}
	slices.Sort(r.Operators)
	return r, nil
}

// modulePath returns the module path the go.mod file declares.
func modulePath(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("could not read the module path: %w", err)
	}
	if m := modfile.ModulePath(b); m != "" {
		return m, nil
	}
	return "", fmt.Errorf("%s declares no module", file)
}

// listFiles lists the files of the tree at root, slash-separated: git's
// tracked and untracked-but-not-ignored files that exist, or, without git,
// every regular file but those of .git/ and bin/.
func listFiles(root string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		cmd := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git ls-files: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		var names []string
		for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			if name == "" {
				continue
			}
			fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(name)))
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted in the work tree, not yet in the index
			}
			if err != nil {
				return nil, err
			}
			if fi.Mode().IsRegular() {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names, nil
	}
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
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

// read returns the content of the file rel.
func (r *Repo) read(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(r.Root, filepath.FromSlash(rel)))
}

// isText reports whether b looks like text: no NUL byte in its first 8 KiB.
func isText(b []byte) bool {
	return !bytes.Contains(b[:min(len(b), 8<<10)], []byte{0})
}

// imports returns the import paths of the Go file rel, or nil if it does
// not parse.
func (r *Repo) imports(rel string) ([]string, error) {
	b, err := r.read(rel)
	if err != nil {
		return nil, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), rel, b, parser.ImportsOnly)
	if err != nil {
		return nil, nil //nolint:nilerr // a file that does not parse imports nothing we can tell
	}
	var out []string
	for _, im := range f.Imports {
		if p, err := strconv.Unquote(im.Path.Value); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// clientLayouts are where make generate writes a group's packages in
// apis/client/, the group's directory name following.
var clientLayouts = []string{"applyconfiguration", "clientset/versioned/typed", "listers", "informers/externalversions"}

// groupOf returns the directory of the API group an import path is a
// package of (its types or its generated client packages), or "".
func (r *Repo) groupOf(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, r.Module+"/apis/")
	if !ok {
		return ""
	}
	if client, ok := strings.CutPrefix(rest, "client/"); ok {
		for _, l := range clientLayouts {
			if g, ok := strings.CutPrefix(client, l+"/"); ok {
				g, _, _ = strings.Cut(g, "/")
				if _, isGroup := r.Groups[g]; isGroup {
					return g
				}
			}
		}
		return ""
	}
	g, _, _ := strings.Cut(rest, "/")
	if _, isGroup := r.Groups[g]; isGroup {
		return g
	}
	return ""
}

// GroupsOf returns the directories of the API groups the Go code of
// operators/<name>/ imports, sorted.
func (r *Repo) GroupsOf(name string) ([]string, error) {
	var groups []string
	for _, f := range r.Files {
		if !strings.HasPrefix(f, "operators/"+name+"/") || path.Ext(f) != ".go" {
			continue
		}
		ims, err := r.imports(f)
		if err != nil {
			return nil, err
		}
		for _, im := range ims {
			if g := r.groupOf(im); g != "" && !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	slices.Sort(groups)
	return groups, nil
}
