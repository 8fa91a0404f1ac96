package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
)

// kind says which column of the breakdown a name counts in.
type kind int

const (
	topLevel kind = iota // a const, var, type or func of the package
	method               // a method of an exported type, or of an exported interface (embedded interfaces included)
	field                // a field of an exported struct type (embedded fields and fields of inline structs included)
)

// pkgSurface is what the counter found in one package of the library.
type pkgSurface struct {
	// Dir is the package's directory relative to the library's module
	// directory, slash-separated: "controller/leaderelection"; "." for the
	// module's own directory.
	Dir string
	// Name is the package's name, the first element of each of Names.
	Name string
	// Names are the package's exported names, each counted once:
	// "controller.New", "controller.Controller.Run", "controller.Config.Name".
	Names map[string]kind
	// Files are the package's parsed non-test, non-generated files, which
	// the Config count resolves type names in.
	Files []*ast.File
}

// Count returns how many of p's names are of kind k.
func (p pkgSurface) Count(k kind) int {
	n := 0
	for _, nk := range p.Names {
		if nk == k {
			n++
		}
	}
	return n
}

// Internal reports whether the package is in an internal/ directory, which
// operators cannot import.
func (p pkgSurface) Internal() bool {
	return slices.Contains(strings.Split(p.Dir, "/"), "internal")
}

// library is the counted library: its module path and packages.
type library struct {
	Module   string
	Packages []pkgSurface // sorted by Dir
}

// Package returns the package in dir, or false.
func (l library) Package(dir string) (pkgSurface, bool) {
	for _, p := range l.Packages {
		if p.Dir == dir {
			return p, true
		}
	}
	return pkgSurface{}, false
}

// countLibrary counts the exported names of every package of the library
// whose module directory is the root of fsys. It skips testdata, directories
// starting with . or _, and nested modules.
func countLibrary(fsys fs.FS) (library, error) {
	// Before the library was a module of its own, it was the directory
	// kooper of the root module: the same import paths.
	lib := library{Module: module + "/" + libraryDir}
	mod, err := fs.ReadFile(fsys, "go.mod")
	switch {
	case err == nil:
		if lib.Module = modulePath(mod); lib.Module == "" {
			return library{}, fmt.Errorf("the library's go.mod names no module")
		}
	case !errors.Is(err, fs.ErrNotExist):
		return library{}, fmt.Errorf("could not read the library's go.mod: %w", err)
	}
	files := map[string][]string{} // directory → its .go files to count
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := d.Name()
			if p != "." && (base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return fs.SkipDir
			}
			if _, err := fs.Stat(fsys, path.Join(p, "go.mod")); p != "." && err == nil {
				return fs.SkipDir // a module of its own
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			files[path.Dir(p)] = append(files[path.Dir(p)], p)
		}
		return nil
	})
	if err != nil {
		return library{}, fmt.Errorf("could not list the library's files: %w", err)
	}
	for dir, names := range files {
		p, ok, err := countPackage(fsys, dir, names)
		if err != nil {
			return library{}, err
		}
		if ok {
			lib.Packages = append(lib.Packages, p)
		}
	}
	sort.Slice(lib.Packages, func(i, j int) bool { return lib.Packages[i].Dir < lib.Packages[j].Dir })
	return lib, nil
}

// modulePath returns the module path of a go.mod file, or "".
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// countPackage counts the exported names of the files of dir. It reports
// false for a directory whose files are all generated or excluded from
// every build.
func countPackage(fsys fs.FS, dir string, names []string) (pkgSurface, bool, error) {
	p := pkgSurface{Dir: dir, Names: map[string]kind{}}
	fset := token.NewFileSet()
	sort.Strings(names)
	for _, name := range names {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return pkgSurface{}, false, fmt.Errorf("could not read %s: %w", name, err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return pkgSurface{}, false, fmt.Errorf("could not parse %s: %w", name, err)
		}
		if ast.IsGenerated(f) || neverBuilt(f) {
			continue
		}
		if p.Name != "" && f.Name.Name != p.Name {
			return pkgSurface{}, false, fmt.Errorf("%s: package %s, but other files of %s are package %s", name, f.Name.Name, dir, p.Name)
		}
		p.Name = f.Name.Name
		p.Files = append(p.Files, f)
		addFile(p.Names, p.Name, f)
	}
	return p, p.Name != "", nil
}

// neverBuilt reports whether f's //go:build line excludes it from every
// build: it holds with neither all tags set nor none set ("ignore" never
// set). Files for some platforms only are counted, their names once.
func neverBuilt(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() >= f.Package {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return false
			}
			all := expr.Eval(func(tag string) bool { return tag != "ignore" })
			none := expr.Eval(func(string) bool { return false })
			return !all && !none
		}
	}
	return false
}

// addFile adds the exported names that f declares to names, each prefixed
// with pkg.
func addFile(names map[string]kind, pkg string, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				names[pkg+"."+d.Name.Name] = topLevel
				continue
			}
			if recv := baseName(d.Recv.List[0].Type); ast.IsExported(recv) {
				names[pkg+"."+recv+"."+d.Name.Name] = method
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names[pkg+"."+n.Name] = topLevel
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					prefix := pkg + "." + s.Name.Name
					names[prefix] = topLevel
					switch t := s.Type.(type) {
					case *ast.StructType:
						addFields(names, prefix, t)
					case *ast.InterfaceType:
						addInterface(names, prefix, t)
					}
				}
			}
		}
	}
}

// addFields adds the exported fields of st, each prefixed with prefix, and
// the exported fields of the structs declared inline as their types.
func addFields(names map[string]kind, prefix string, st *ast.StructType) {
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			// An embedded field counts as one name, if its name is
			// exported; what it promotes is counted where it is declared.
			if n := baseName(f.Type); ast.IsExported(n) {
				names[prefix+"."+n] = field
			}
			continue
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			names[prefix+"."+n.Name] = field
			if inner, ok := inlineStruct(f.Type); ok {
				addFields(names, prefix+"."+n.Name, inner)
			}
		}
	}
}

// inlineStruct returns the struct type declared inline in t, through
// pointers, slices, arrays, maps and channels.
func inlineStruct(t ast.Expr) (*ast.StructType, bool) {
	for {
		switch e := t.(type) {
		case *ast.StructType:
			return e, true
		case *ast.StarExpr:
			t = e.X
		case *ast.ArrayType:
			t = e.Elt
		case *ast.MapType:
			t = e.Value
		case *ast.ChanType:
			t = e.Value
		case *ast.ParenExpr:
			t = e.X
		default:
			return nil, false
		}
	}
}

// addInterface adds the exported methods of it, each prefixed with prefix.
// An embedded interface (or any other embedded element, a union of a
// constraint) counts as one name, unless it is an unexported name.
func addInterface(names map[string]kind, prefix string, it *ast.InterfaceType) {
	for _, m := range it.Methods.List {
		if len(m.Names) == 0 {
			n := baseName(m.Type)
			if n == "" {
				n = exprString(m.Type)
			}
			if n != baseName(m.Type) || ast.IsExported(n) {
				names[prefix+"."+n] = method
			}
			continue
		}
		for _, n := range m.Names {
			if n.IsExported() {
				names[prefix+"."+n.Name] = method
			}
		}
	}
}

// baseName returns the name of the type t names, without pointer,
// package qualifier or type arguments: "Controller" for *Controller,
// "Mutex" for sync.Mutex, "Set" for Set[K]; "" if t is no named type.
func baseName(t ast.Expr) string {
	for {
		switch e := t.(type) {
		case *ast.Ident:
			return e.Name
		case *ast.StarExpr:
			t = e.X
		case *ast.ParenExpr:
			t = e.X
		case *ast.SelectorExpr:
			return e.Sel.Name
		case *ast.IndexExpr:
			t = e.X
		case *ast.IndexListExpr:
			t = e.X
		default:
			return ""
		}
	}
}

// exprString returns the source form of e, for names of elements that are
// not named types.
func exprString(e ast.Expr) string {
	var b bytes.Buffer
	writeExpr(&b, e)
	return b.String()
}

// writeExpr writes the source form of the type expressions an interface
// can embed.
func writeExpr(b *bytes.Buffer, e ast.Expr) {
	switch x := e.(type) {
	case *ast.Ident:
		b.WriteString(x.Name)
	case *ast.SelectorExpr:
		writeExpr(b, x.X)
		b.WriteString("." + x.Sel.Name)
	case *ast.UnaryExpr:
		b.WriteString(x.Op.String())
		writeExpr(b, x.X)
	case *ast.BinaryExpr:
		writeExpr(b, x.X)
		b.WriteString("|")
		writeExpr(b, x.Y)
	case *ast.StarExpr:
		b.WriteString("*")
		writeExpr(b, x.X)
	default:
		fmt.Fprintf(b, "%T", e)
	}
}
