package main

import (
	"fmt"
	"go/ast"
	"maps"
	"path"
	"strconv"
)

// typeDecl is a type declared in the library, with where its names
// resolve.
type typeDecl struct {
	Type ast.Expr  // the type's definition (or alias's target)
	File *ast.File // the file declaring it, whose imports qualified names resolve through
	Path string    // the import path of its package
}

// typeIndex finds the types declared in the library by import path and
// name.
type typeIndex struct {
	types    map[string]map[string]typeDecl // import path → type name → declaration
	pkgNames map[string]string              // import path → package name
}

// newTypeIndex indexes the types that lib's packages declare.
func newTypeIndex(lib library) typeIndex {
	ix := typeIndex{types: map[string]map[string]typeDecl{}, pkgNames: map[string]string{}}
	for _, p := range lib.Packages {
		ip := importPath(lib.Module, p.Dir)
		ix.pkgNames[ip] = p.Name
		decls := map[string]typeDecl{}
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, s := range g.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						decls[ts.Name.Name] = typeDecl{Type: ts.Type, File: f, Path: ip}
					}
				}
			}
		}
		ix.types[ip] = decls
	}
	return ix
}

// importPath returns the import path of the package in dir of module.
func importPath(module, dir string) string {
	if dir == "." {
		return module
	}
	return module + "/" + dir
}

// countConfig returns the fields of the struct type name of the package in
// dir of lib, as "Config.Field", with the fields of every struct declared
// in the library that a field's type is (or points to, or is a slice or
// array of) after it, as "Config.Field.Inner", recursively. Types of other
// modules count as one field.
func countConfig(lib library, dir, name string) ([]string, error) {
	ix := newTypeIndex(lib)
	decl, ok := ix.types[importPath(lib.Module, dir)][name]
	if !ok {
		return nil, fmt.Errorf("no type %s in %s of the library", name, dir)
	}
	seen := map[string]bool{decl.Path + "." + name: true}
	st, at, ok := ix.structOf(decl.Type, decl, seen)
	if !ok {
		return nil, fmt.Errorf("%s of %s is no struct type", name, dir)
	}
	return ix.fields(name, st, at, seen), nil
}

// fields lists the exported fields of st, declared as at says, each
// prefixed with prefix, each followed by the fields of the library struct
// it holds. seen holds the named types being expanded, so that a type that
// refers to itself is counted once.
func (ix typeIndex) fields(prefix string, st *ast.StructType, at typeDecl, seen map[string]bool) []string {
	var out []string
	for _, f := range st.Fields.List {
		var names []string
		if len(f.Names) == 0 {
			names = []string{baseName(f.Type)}
		}
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		for _, n := range names {
			if !ast.IsExported(n) {
				continue
			}
			out = append(out, prefix+"."+n)
			inner := maps.Clone(seen)
			if st, innerAt, ok := ix.structOf(f.Type, at, inner); ok {
				out = append(out, ix.fields(prefix+"."+n, st, innerAt, inner)...)
			}
		}
	}
	return out
}

// structOf returns the struct type that t is, or names, points to or holds
// a slice or array of, when that struct is declared in the library (inline
// or as a named type of any of its packages), and where the struct's names
// resolve. t's own names resolve as at says. It adds the named types it
// follows to seen, and refuses one already in it.
func (ix typeIndex) structOf(t ast.Expr, at typeDecl, seen map[string]bool) (*ast.StructType, typeDecl, bool) {
	for {
		switch e := t.(type) {
		case *ast.StructType:
			return e, at, true
		case *ast.StarExpr:
			t = e.X
		case *ast.ArrayType:
			t = e.Elt
		case *ast.ParenExpr:
			t = e.X
		case *ast.IndexExpr:
			t = e.X
		case *ast.IndexListExpr:
			t = e.X
		case *ast.Ident:
			decl, ok := ix.types[at.Path][e.Name]
			key := at.Path + "." + e.Name
			if !ok || seen[key] {
				return nil, typeDecl{}, false
			}
			seen[key] = true
			t, at = decl.Type, decl
		case *ast.SelectorExpr:
			pkg, ok := e.X.(*ast.Ident)
			if !ok {
				return nil, typeDecl{}, false
			}
			ip := ix.imported(at.File, pkg.Name)
			decl, ok := ix.types[ip][e.Sel.Name]
			key := ip + "." + e.Sel.Name
			if !ok || seen[key] {
				return nil, typeDecl{}, false
			}
			seen[key] = true
			t, at = decl.Type, decl
		default:
			return nil, typeDecl{}, false
		}
	}
}

// imported returns the import path that name refers to in f, or "".
func (ix typeIndex) imported(f *ast.File, name string) string {
	for _, imp := range f.Imports {
		ip, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		local := path.Base(ip)
		if n, ok := ix.pkgNames[ip]; ok {
			local = n
		}
		if imp.Name != nil {
			local = imp.Name.Name
		}
		if local == name {
			return ip
		}
	}
	return ""
}
