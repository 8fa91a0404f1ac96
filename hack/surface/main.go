// Command surface measures the public surface of the library (kooper/),
// and holds it to a budget: make test runs `go run ./hack/surface -check`.
//
// # What counts
//
// The exported names of a package are
//   - its exported top-level declarations: each name of a const, var, type
//     or func, each name of a grouped declaration included;
//   - the exported methods whose receiver type is exported;
//   - the exported fields of its exported struct types, with the exported
//     fields of the struct types declared inline as a field's type (through
//     pointers, slices, arrays, maps and channels), recursively; an
//     embedded field counts as one name (if its type's name is exported);
//   - the exported methods of its exported interface types; an embedded
//     interface counts as one name (unless its name is unexported), as does
//     any other embedded element (a constraint's union).
//
// Each is counted once per package, named pkg.Name, pkg.Type.Method or
// pkg.Type.Field (pkg.Type.Field.Inner for an inline struct's). Only
// non-test files count (_test.go excluded), not generated ones (a
// "// Code generated ... DO NOT EDIT." line before the package clause), not
// those no build includes (//go:build ignore); testdata, directories
// starting with . or _, and nested modules are skipped. Counting reads the
// syntax only (go/parser, go/ast), with no type checking.
//
// # Budgets
//
// Each budget has a limit and a target, in budget.go:
//   - operator: the exported names of the packages an operator imports,
//     every package of the library outside x/;
//   - experimental: those of the packages under x/ (x/sharding);
//   - config: the fields of controller.Config. A field whose type is a
//     struct declared in the library (named, in any of its packages, or
//     inline), or a pointer to, slice or array of one, counts once and its
//     own fields count too, recursively: Leader LeaderConfig{A, B} counts
//     3. A type of another module (time.Duration, cache.TransformFunc)
//     counts as one field.
//
// Packages in an internal/ directory, which operators cannot import, are in
// no budget; the report shows their counts apart.
//
// # The ratchet
//
// -check fails when a count is over its limit, showing its packages'
// counts. Counts may go down freely, and -check
// says when a limit can follow them. A limit goes up only in a commit whose
// CHANGELOG.md entry says why: each limit has a line "surface budget
// `<budget>` <limit>" there (the tests check it).
//
// # Uses
//
// -uses FILE.go measures what a piece of code asks of its reader: the
// lines of FILE without its package clause, imports, blank lines and
// comment-only lines, and the distinct exported identifiers of the library
// it uses: package-qualified names (controller.New), fields and methods
// selected on values of library types (controller.Config.Handler,
// controller.Controller.Run), and composite-literal keys of library
// structs. It type-checks FILE alone against the export data of its
// imports (go list -export, run in FILE's directory).
//
// From the repository root,
//
//	go run ./hack/surface                # a table per budget
//	go run ./hack/surface -v             # and every counted name
//	go run ./hack/surface -check         # exit 1 if a budget is over its limit
//	go run ./hack/surface -uses FILE.go  # lines and library identifiers of FILE
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// module is the repository's module path, read from go.mod to find the
// root.
const module = "github.com/kooperkit/kooper"

// libraryDir is the library's module directory, relative to the root.
const libraryDir = "kooper"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(1)
	}
}

// errFailed is returned by run once the reasons were printed.
var errFailed = errors.New("the library is over its surface budget (see above)")

func run(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("surface", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: go run ./hack/surface [-v] [-check] [-root DIR]\n       go run ./hack/surface -uses FILE.go\n\nCounts the library's exported names and controller.Config's fields against their budgets.")
		fl.PrintDefaults()
	}
	checkFlag := fl.Bool("check", false, "exit 1 if a budget is over its limit")
	verbose := fl.Bool("v", false, "list every counted name")
	root := fl.String("root", "", "repository root (default: the directory above the working directory holding the kooper go.mod)")
	uses := fl.String("uses", "", "print the lines and the library identifiers of this Go file instead")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		fl.Usage()
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	if *uses != "" {
		u, err := measureUses(*uses)
		if err != nil {
			return err
		}
		for _, e := range u.TypeErrors {
			fmt.Fprintln(os.Stderr, "surface: warning:", e)
		}
		fmt.Fprintln(stdout, u)
		return nil
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
	lib, err := countLibrary(os.DirFS(filepath.Join(*root, libraryDir)))
	if err != nil {
		return err
	}
	m, err := measure(lib)
	if err != nil {
		return err
	}
	if !*checkFlag {
		report(stdout, m, *verbose)
		return nil
	}
	over, hints, err := check(m)
	if err != nil {
		return err
	}
	if len(over) > 0 {
		explain(stdout, m, over)
		return errFailed
	}
	for _, h := range hints {
		fmt.Fprintln(stdout, h)
	}
	fmt.Fprintln(stdout, summary(m))
	return nil
}

// findRoot returns dir or the first of its parents holding the go.mod of
// module.
func findRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(b) == module {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of %s in %s or above; run from the repository or pass -root", module, dir)
		}
	}
}

// summary is one line with every budget's count and limit.
func summary(m measurement) string {
	var parts []string
	for _, l := range limits {
		n, _ := m.Count(l.Budget)
		parts = append(parts, fmt.Sprintf("%s %d (limit %d, target %d)", l.Budget, n, l.Max, l.Target))
	}
	return "surface within budget: " + strings.Join(parts, ", ")
}

// report writes a table per budget, and with verbose every counted name.
func report(w io.Writer, m measurement, verbose bool) {
	for i, s := range m.Sets {
		if i > 0 {
			fmt.Fprintln(w)
		}
		l, _ := limitOf(s.Set.Name)
		fmt.Fprintf(w, "%s: %s\n", s.Set.Name, s.Set.Doc)
		packageTable(w, s.Packages)
		fmt.Fprintf(w, "%-32s %9s %7s %6s %5d  limit %d, target %d\n", "total", "", "", "", s.Total(), l.Max, l.Target)
		if verbose {
			listNames(w, s.Packages)
		}
	}
	l, _ := limitOf(configBudget)
	fmt.Fprintf(w, "\n%s: the fields of controller.Config, those of the library's structs in it included\n", configBudget)
	fmt.Fprintf(w, "%-32s %9s %7s %6s %5d  limit %d, target %d\n", "total", "", "", "", len(m.Config), l.Max, l.Target)
	if verbose {
		for _, f := range m.Config {
			fmt.Fprintf(w, "  controller.%s\n", f)
		}
	}
	if len(m.Internal) > 0 {
		fmt.Fprintf(w, "\ninternal: in no budget (operators cannot import them), for information\n")
		packageTable(w, m.Internal)
		if verbose {
			listNames(w, m.Internal)
		}
	}
}

// packageTable writes a row per package: its names by kind and in all.
func packageTable(w io.Writer, pkgs []pkgSurface) {
	if len(pkgs) == 0 {
		fmt.Fprintln(w, "  (no packages)")
		return
	}
	fmt.Fprintf(w, "%-32s %9s %7s %6s %5s\n", "package", "top-level", "methods", "fields", "names")
	for _, p := range pkgs {
		fmt.Fprintf(w, "%-32s %9d %7d %6d %5d\n", p.Dir, p.Count(topLevel), p.Count(method), p.Count(field), len(p.Names))
	}
}

// kindNames are the kinds as -v prints them.
var kindNames = map[kind]string{topLevel: "top-level", method: "method", field: "field"}

// listNames writes every name of pkgs, a line each, sorted within its
// package.
func listNames(w io.Writer, pkgs []pkgSurface) {
	for _, p := range pkgs {
		fmt.Fprintf(w, "  %s:\n", p.Dir)
		for _, n := range sortedNames(p) {
			fmt.Fprintf(w, "    %-60s %s\n", n, kindNames[p.Names[n]])
		}
	}
}

// sortedNames returns p's names sorted.
func sortedNames(p pkgSurface) []string {
	names := make([]string, 0, len(p.Names))
	for n := range p.Names {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
