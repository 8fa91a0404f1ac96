package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// storeChanges returns the files make store-version changes, or why it
// cannot: the storage mark moved from the stored version to the new one,
// and the operator's Go files and example switched from the one to the
// other.
func (k kind) storeChanges() (map[string]change, []string) {
	cs := newChangeSet(k.root)
	cs.edit(path.Join(k.oldDir(), "types.go"), func(s string) (string, error) {
		line := storageMarker + "\n"
		if n := strings.Count(s, line); n != 1 {
			return "", fmt.Errorf("want the line %q once, found it %d times", storageMarker, n)
		}
		return strings.Replace(s, line, "", 1), nil
	})
	cs.edit(path.Join(k.newDir(), "types.go"), k.markStorage)

	op := "operators/" + k.name
	// The operator's example (make run applies it) in the version stored
	// and read: written in the other, it needs the conversion webhook,
	// which the dev loop registers as the operator starts.
	example := op + "/example.yaml"
	if _, err := os.Stat(filepath.Join(k.root, filepath.FromSlash(example))); err == nil {
		cs.edit(example, func(s string) (string, error) {
			from, to := "apiVersion: "+k.group+"/"+k.oldVersion+"\n", "apiVersion: "+k.group+"/"+k.newVersion+"\n"
			return strings.ReplaceAll(s, from, to), nil
		})
	}
	// The README's opening line, as make new-operator wrote it, names the
	// kind's version and its types: the stored one now, and the one still
	// served. A README whose line was rewritten stays as it is.
	readme := op + "/README.md"
	if _, err := os.Stat(filepath.Join(k.root, filepath.FromSlash(readme))); err == nil {
		cs.edit(readme, func(s string) (string, error) {
			from := fmt.Sprintf("(`%s/%s`, [`%s`](../../%s/types.go))", k.group, k.oldVersion, k.oldDir(), k.oldDir())
			to := fmt.Sprintf("(`%s/%s`, stored, and `%s`, still served; [`%s`](../../%s/types.go))", k.group, k.newVersion, k.oldVersion, k.newDir(), k.newDir())
			return strings.Replace(s, from, to, 1), nil
		})
	}
	err := filepath.WalkDir(filepath.Join(k.root, filepath.FromSlash(op)), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		after, changed, err := k.switchVersion(src)
		rel, _ := filepath.Rel(k.root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case err != nil:
			cs.problems = append(cs.problems, fmt.Sprintf("%s: %v", rel, err))
		case changed:
			cs.edit(rel, func(string) (string, error) { return after, nil })
		}
		return nil
	})
	if err != nil {
		cs.problems = append(cs.problems, err.Error())
	}
	return cs.c, cs.problems
}

// switchVersion rewrites a Go file that uses the old version's packages
// (the API's, and the clientset's per version: apply configurations,
// listers, informers) to use the new version's: the import paths, the
// names they are imported as (webappsv1alpha1 becomes webappsv1beta1), and
// the clientset's and informers' version methods (WebappsV1alpha1(),
// Webapps().V1alpha1()). A file that imports both versions, as the
// conversion webhook and the versions tests do, is left as it is. It
// reports whether anything changed.
func (k kind) switchVersion(src []byte) (string, bool, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return "", false, err
	}
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	replace := func(from, to token.Pos, text string) {
		edits = append(edits, edit{fset.Position(from).Offset, fset.Position(to).Offset, text})
	}
	names := map[string]string{} // the old packages' names in the file, and the new ones'
	newImports := 0
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if k.versionOf(p) == k.newVersion {
			newImports++
		}
		if k.versionOf(p) != k.oldVersion {
			continue
		}
		np := strings.TrimSuffix(p, k.oldVersion) + k.newVersion
		replace(imp.Path.Pos(), imp.Path.End(), strconv.Quote(np))
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if !strings.HasSuffix(name, k.oldVersion) {
			continue // webappsac: the name stays
		}
		newName := strings.TrimSuffix(name, k.oldVersion) + k.newVersion
		names[name] = newName
		if imp.Name != nil {
			replace(imp.Name.Pos(), imp.Name.End(), newName)
		}
	}
	if newImports > 0 {
		return "", false, nil
	}
	oldMethod, newMethod := k.clientGroup+goVersion(k.oldVersion), k.clientGroup+goVersion(k.newVersion)
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok {
			if newName, ok := names[x.Name]; ok {
				replace(x.Pos(), x.End(), newName)
			}
		}
		switch sel.Sel.Name {
		case oldMethod: // clientset.WebappsV1alpha1()
			replace(sel.Sel.Pos(), sel.Sel.End(), newMethod)
		case goVersion(k.oldVersion): // informers.Webapps().V1alpha1()
			if call, ok := sel.X.(*ast.CallExpr); ok {
				if group, ok := call.Fun.(*ast.SelectorExpr); ok && group.Sel.Name == k.clientGroup {
					replace(sel.Sel.Pos(), sel.Sel.End(), goVersion(k.newVersion))
				}
			}
		}
		return true
	})
	if len(edits) == 0 {
		return "", false, nil
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := bytes.Clone(src)
	for _, e := range edits {
		out = append(out[:e.start:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return string(out), true, nil
}

// versionOf returns the version of a package path that is the kind's API
// package or one of its clientset's per-version packages
// (<module>/apis/<short>/<version>, <module>/apis/client/.../<short>/<version>),
// else "".
func (k kind) versionOf(p string) string {
	rest, ok := strings.CutPrefix(p, k.module+"/apis/")
	if !ok {
		return ""
	}
	dir, version := path.Split(rest)
	if version != k.oldVersion && version != k.newVersion {
		return ""
	}
	if dir == k.short+"/" || (strings.HasPrefix(dir, "client/") && strings.HasSuffix(dir, "/"+k.short+"/")) {
		return version
	}
	return ""
}

// build compiles the operator, its tests included, once its files are
// switched; tests replace it.
var build = func(root, name string, stdout, stderr io.Writer) error {
	cmd := exec.Command("go", "vet", "./operators/"+name+"/...")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// applyStore writes the storage switch, runs make generate (putting every
// file back if it fails), then checks that the operator builds on the new
// version.
func (k kind) applyStore(changes map[string]change, stdout, stderr io.Writer) error {
	if err := apply(k, changes, "", stdout, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "checking that the operator builds on %s (go vet ./operators/%s/...)\n", k.newVersion, k.name)
	if err := build(k.root, k.name, stdout, stderr); err != nil {
		return fmt.Errorf("the operator does not build on %s yet (go vet's output above): where the versions' fields differ, change the code go vet names, and run go vet ./operators/%s/... again; the storage switch is written (git diff shows it): %w", k.newVersion, k.name, err)
	}
	fmt.Fprint(stdout, k.storeNextSteps())
	return nil
}

// storeNextSteps is what the user does after make store-version.
func (k kind) storeNextSteps() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s %s is the version stored now, and the operator reads it; %s is still served, converted by the operator's webhook. Next (operators/%s/README.md, \"Versions\"):\n\n", k.Kind, k.newVersion, k.oldVersion, k.name)
	fmt.Fprintf(&b, "  1. The operator's tests, on %s:\n       go test ./operators/%s/...\n", k.newVersion, k.name)
	fmt.Fprintf(&b, "  2. Upgrade the cluster to it: make upgrade OPERATOR=%s IMG=<image> (the CRD, applied last, stores %s).\n", k.name, k.newVersion)
	fmt.Fprintf(&b, "  3. Rewrite what is still stored in %s, the operator running: make migrate-storage CRD=%s\n", k.oldVersion, k.crdName())
	fmt.Fprintf(&b, "     Then the CRD's status.storedVersions holds %s alone, and %s can stop being served (+kubebuilder:unservedversion) and go.\n", k.newVersion, k.oldVersion)
	fmt.Fprintf(&b, "\nNot done for you: a CHANGELOG line under Unreleased.\n")
	return b.String()
}
