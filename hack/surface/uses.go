package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// libraryPrefix starts the import path of every package of the library.
const libraryPrefix = module + "/" + libraryDir + "/"

// uses is what a Go file asks of its reader.
type uses struct {
	// Lines are the file's lines with code, not counting the package
	// clause, the imports, blank lines and comment-only lines.
	Lines int
	// Identifiers are the distinct exported identifiers of the library the
	// file uses, sorted: "controller.New", "controller.Config.Handler".
	Identifiers []string
	// TypeErrors are what type checking the file alone reported; a file
	// that needs the other files of its package reports their names, and
	// the uses of what they declare are missing.
	TypeErrors []error
}

// String formats u as -uses prints it.
func (u uses) String() string {
	return fmt.Sprintf("lines %d, library identifiers %d: %s", u.Lines, len(u.Identifiers), strings.Join(u.Identifiers, ", "))
}

// measureUses measures the Go file at name.
func measureUses(name string) (uses, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return uses{}, fmt.Errorf("could not read %s: %w", name, err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return uses{}, fmt.Errorf("could not parse %s: %w", name, err)
	}
	u := uses{Lines: codeLines(fset, f, src)}
	u.Identifiers, u.TypeErrors, err = libraryIdentifiers(fset, f, filepath.Dir(name))
	if err != nil {
		return uses{}, err
	}
	return u, nil
}

// codeLines counts the lines of src (parsed as f) that hold a token, except
// those of the package clause and of the import declarations.
func codeLines(fset *token.FileSet, f *ast.File, src []byte) int {
	tf := fset.File(f.Pos())
	skip := map[int]bool{}
	skipRange := func(from, to token.Pos) {
		for l := tf.Line(from); l <= tf.Line(to); l++ {
			skip[l] = true
		}
	}
	skipRange(f.Package, f.Name.End())
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			skipRange(g.Pos(), g.End())
		}
	}
	code := map[int]bool{}
	var s scanner.Scanner
	s.Init(fset.AddFile("", -1, len(src)), src, nil, 0) // comments skipped
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue // inserted at a line's end, not written
		}
		p := fset.Position(pos)
		// A raw string may span lines: each of them holds code.
		for l := p.Line; l <= p.Line+strings.Count(lit, "\n"); l++ {
			if !skip[l] {
				code[l] = true
			}
		}
	}
	return len(code)
}

// libraryIdentifiers type-checks f alone, with the export data of its
// imports as go list -export finds them from dir, and returns the distinct
// exported identifiers of the library it uses, and the type errors.
func libraryIdentifiers(fset *token.FileSet, f *ast.File, dir string) ([]string, []error, error) {
	var imports []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("bad import %s: %w", imp.Path.Value, err)
		}
		if p != "C" && p != "unsafe" {
			imports = append(imports, p)
		}
	}
	exports, err := exportData(dir, imports)
	if err != nil {
		return nil, nil, err
	}
	var typeErrors []error
	conf := types.Config{
		Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := exports[path]
			if !ok {
				return nil, fmt.Errorf("go list -export gave no export data for %s", path)
			}
			return os.Open(file)
		}),
		Error: func(err error) { typeErrors = append(typeErrors, err) },
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	_, _ = conf.Check(f.Name.Name, fset, []*ast.File{f}, info) // errors are in typeErrors

	names := libraryNames{}
	seen := map[string]bool{}
	for _, obj := range info.Uses {
		if obj.Pkg() == nil || !strings.HasPrefix(obj.Pkg().Path(), libraryPrefix) || !obj.Exported() {
			continue
		}
		if _, ok := obj.(*types.PkgName); ok {
			continue
		}
		seen[names.of(obj)] = true
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, typeErrors, nil
}

// exportData runs go list -export in dir on the packages imports and their
// dependencies, and returns their export data files by import path.
func exportData(dir string, imports []string) (map[string]string, error) {
	exports := map[string]string{}
	if len(imports) == 0 {
		return exports, nil
	}
	args := append([]string{"list", "-e", "-export", "-deps", "-json=ImportPath,Export,Error"}, imports...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("could not list the export data of %s: %w: %s", strings.Join(imports, " "), err, strings.TrimSpace(stderr.String()))
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Export     string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("could not read go list's output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
	}
	return exports, nil
}

// libraryNames names the objects of the library as the counter does:
// pkg.Name, pkg.Type.Method, pkg.Type.Field (pkg.Type.Field.Inner for a
// field of an inline struct). It indexes the fields and interface methods
// of each package the first time it meets one of its objects.
type libraryNames map[*types.Package]map[types.Object]string

// of returns obj's name.
func (ln libraryNames) of(obj types.Object) string {
	pkg := obj.Pkg()
	if obj.Parent() == pkg.Scope() {
		return pkg.Name() + "." + obj.Name()
	}
	if fn, ok := obj.(*types.Func); ok {
		if recv := fn.Signature().Recv(); recv != nil {
			if n := namedOf(recv.Type()); n != nil {
				return pkg.Name() + "." + n.Obj().Name() + "." + obj.Name()
			}
		}
	}
	if v, ok := obj.(*types.Var); ok {
		obj = v.Origin() // the field of a generic type, not of an instance
	}
	if _, ok := ln[pkg]; !ok {
		ln[pkg] = indexMembers(pkg)
	}
	if name, ok := ln[pkg][obj]; ok {
		return name
	}
	return pkg.Name() + "." + obj.Name() // a member of a type no name leads to
}

// namedOf returns the named type t is or points to, or nil.
func namedOf(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}

// indexMembers names the fields of pkg's struct types (with those of the
// structs declared inline in them) and the methods of its interface types.
func indexMembers(pkg *types.Package) map[types.Object]string {
	members := map[types.Object]string{}
	var addStruct func(prefix string, st *types.Struct)
	addStruct = func(prefix string, st *types.Struct) {
		for f := range st.Fields() {
			members[f] = prefix + "." + f.Name()
			if inner, ok := inlineStructType(f.Type()); ok {
				addStruct(prefix+"."+f.Name(), inner)
			}
		}
	}
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		prefix := pkg.Name() + "." + name
		switch u := tn.Type().Underlying().(type) {
		case *types.Struct:
			addStruct(prefix, u)
		case *types.Interface:
			for m := range u.ExplicitMethods() {
				members[m] = prefix + "." + m.Name()
			}
		}
	}
	return members
}

// inlineStructType returns the unnamed struct type t is, or holds through
// pointers, slices, arrays, maps and channels.
func inlineStructType(t types.Type) (*types.Struct, bool) {
	for {
		switch e := t.(type) {
		case *types.Struct:
			return e, true
		case *types.Pointer:
			t = e.Elem()
		case *types.Slice:
			t = e.Elem()
		case *types.Array:
			t = e.Elem()
		case *types.Map:
			t = e.Elem()
		case *types.Chan:
			t = e.Elem()
		default:
			return nil, false
		}
	}
}
