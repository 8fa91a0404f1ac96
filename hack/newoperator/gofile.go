package main

import (
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strings"
)

// packages maps the names the generated code calls packages by to their
// import paths. A file imports those its code uses, found by parsing it, so
// no renderer keeps a list of imports in step with its code.
var packages = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "maps": "maps", "slices": "slices",
	"strings": "strings", "time": "time", "os": "os", "io": "io", "flag": "flag", "signal": "os/signal",
	"syscall": "syscall", "testing": "testing", "bytes": "bytes", "http": "net/http", "exec": "os/exec",
	"filepath": "path/filepath", "reflect": "reflect", "cmp": "cmp",

	"corev1": "k8s.io/api/core/v1", "appsv1": "k8s.io/api/apps/v1", "rbacv1": "k8s.io/api/rbac/v1",
	"corev1ac": "k8s.io/client-go/applyconfigurations/core/v1", "appsv1ac": "k8s.io/client-go/applyconfigurations/apps/v1",
	"rbacv1ac": "k8s.io/client-go/applyconfigurations/rbac/v1", "metav1ac": "k8s.io/client-go/applyconfigurations/meta/v1",
	"meta": "k8s.io/apimachinery/pkg/api/meta", "types": "k8s.io/apimachinery/pkg/types",
	"authorizationv1": "k8s.io/api/authorization/v1",
	"metav1":          "k8s.io/apimachinery/pkg/apis/meta/v1", "apierrors": "k8s.io/apimachinery/pkg/api/errors",
	"equality": "k8s.io/apimachinery/pkg/api/equality", "resource": "k8s.io/apimachinery/pkg/api/resource",
	"runtime": "k8s.io/apimachinery/pkg/runtime", "schema": "k8s.io/apimachinery/pkg/runtime/schema",
	"watch": "k8s.io/apimachinery/pkg/watch", "intstr": "k8s.io/apimachinery/pkg/util/intstr",
	"validation": "k8s.io/apimachinery/pkg/util/validation",
	"kubernetes": "k8s.io/client-go/kubernetes", "kubefake": "k8s.io/client-go/kubernetes/fake",
	"clientgoscheme": "k8s.io/client-go/kubernetes/scheme", "metadata": "k8s.io/client-go/metadata",
	"rest": "k8s.io/client-go/rest", "k8stesting": "k8s.io/client-go/testing", "ptr": "k8s.io/utils/ptr",
	"prom": "github.com/prometheus/client_golang/prometheus", "trace": "go.opentelemetry.io/otel/trace",
	"sdktrace": "go.opentelemetry.io/otel/sdk/trace", "tracetest": "go.opentelemetry.io/otel/sdk/trace/tracetest",

	"versioned":      "/apis/client/clientset/versioned",
	"fake":           "/apis/client/clientset/versioned/fake",
	"controller":     "/kooper/controller",
	"leaderelection": "/kooper/controller/leaderelection",
	"envtest":        "/hack/envtest",
	"event":          "/kooper/event",
	"health":         "/kooper/health",
	"kooperprom":     "/kooper/metrics/prometheus",
	"log":            "/kooper/log",
	"owner":          "/kooper/owner",
	"status":         "/kooper/status",
	"cli":            "/operators/internal/cli",
	"e2etest":        "/operators/internal/e2etest",
	"observe":        "/operators/internal/observe",
	"rbactest":       "/operators/internal/rbactest",
}

// goFile builds one Go source file of the generated operator.
type goFile struct {
	op  operator
	pkg string
	// doc is the package comment, without the comment markers, or "".
	doc  string
	body strings.Builder
	// local are this operator's own packages, by the name the code uses.
	local map[string]string
}

func newGoFile(op operator, pkg string) *goFile {
	return &goFile{op: op, pkg: pkg, local: map[string]string{
		op.alias():   op.apiPkg(),
		op.acAlias(): op.acPkg(),
		"handler":    op.opPkg() + "/internal/handler",
		"operator":   op.opPkg() + "/internal/operator",
	}}
}

// code writes s with the operator's names filled in (see replacer).
func (f *goFile) code(s string) { f.body.WriteString(f.op.replacer().Replace(s)) }

// printf writes a formatted line part, with the operator's names filled in.
func (f *goFile) printf(format string, args ...any) { f.code(fmt.Sprintf(format, args...)) }

// bytes returns the file: package comment and clause, the imports its code
// uses, grouped as goimports does with this module as the local prefix, and
// the code, formatted with go/format, its comments rewrapped where the
// operator's names made them too long.
func (f *goFile) bytes() ([]byte, error) {
	var head strings.Builder
	if f.doc != "" {
		for _, line := range strings.Split(strings.TrimRight(f.op.replacer().Replace(f.doc), "\n"), "\n") {
			head.WriteString(strings.TrimRight("// "+line, " ") + "\n")
		}
	}
	fmt.Fprintf(&head, "package %s\n\n", f.pkg)
	body := f.body.String()

	used, err := usedPackages(head.String() + body)
	if err != nil {
		return nil, err
	}
	var groups [3][]string // standard library, others, this module
	for _, name := range used {
		p, ok := f.local[name]
		if !ok {
			if p, ok = packages[name]; !ok {
				continue // a variable or a type, not a package
			}
			if strings.HasPrefix(p, "/") {
				p = f.op.Module + p
			}
		}
		spec := fmt.Sprintf("%q", p)
		if path.Base(p) != name {
			spec = name + " " + spec
		}
		first, _, _ := strings.Cut(p, "/")
		switch {
		case strings.HasPrefix(p, f.op.Module+"/"):
			groups[2] = append(groups[2], spec)
		case strings.Contains(first, "."):
			groups[1] = append(groups[1], spec)
		default:
			groups[0] = append(groups[0], spec)
		}
	}
	var imports []string
	for _, g := range groups {
		if len(g) > 0 {
			slices.SortFunc(g, func(a, b string) int { return strings.Compare(importPath(a), importPath(b)) })
			imports = append(imports, strings.Join(g, "\n"))
		}
	}
	if len(imports) > 0 {
		head.WriteString("import (\n" + strings.Join(imports, "\n\n") + "\n)\n\n")
	}
	src := []byte(head.String() + body)
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("generated Go does not parse: %w\n%s", err, numbered(src))
	}
	return []byte(reflow(string(out))), nil
}

// importPath returns the path of an import spec, `alias "path"` or `"path"`.
func importPath(spec string) string {
	_, p, ok := strings.Cut(spec, " ")
	if !ok {
		return spec
	}
	return p
}

// usedPackages returns the names used as the left side of a selector
// (x.Y where x is not declared in the file): the packages the file calls.
func usedPackages(src string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("generated Go does not parse: %w\n%s", err, numbered([]byte(src)))
	}
	declared := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		fields := func(l *ast.FieldList) {
			if l == nil {
				return
			}
			for _, f := range l.List {
				for _, id := range f.Names {
					declared[id.Name] = true
				}
			}
		}
		switch n := n.(type) {
		case *ast.FuncDecl:
			fields(n.Recv)
		case *ast.FuncType:
			fields(n.TypeParams)
			fields(n.Params)
			fields(n.Results)
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						declared[id.Name] = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				declared[id.Name] = true
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok && n.Tok == token.DEFINE {
					declared[id.Name] = true
				}
			}
		}
		return true
	})
	seen := map[string]bool{}
	var used []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && !declared[id.Name] && !seen[id.Name] {
				seen[id.Name] = true
				used = append(used, id.Name)
			}
		}
		return true
	})
	return used, nil
}

// numbered returns src with line numbers, to show where generated code is
// broken.
func numbered(src []byte) string {
	var b strings.Builder
	for i, line := range strings.Split(string(src), "\n") {
		fmt.Fprintf(&b, "%4d %s\n", i+1, line)
	}
	return b.String()
}

// replacer fills the operator's names into generated text.
func (o operator) replacer() *strings.Replacer { return strings.NewReplacer(o.names()...) }

// names are the pairs of a $word and the name it stands for in generated
// text. No $word appears in the Go, YAML or Markdown the generator writes
// otherwise; longer words come first, so that $GroupGo is not read as $Group
// followed by Go.
func (o operator) names() []string {
	return []string{
		"$GroupGo", o.groupGo(),
		"$Group", o.Group,
		"$Kind", o.Kind,
		"$kind", strings.ToLower(o.Kind),
		"$Plural", o.Plural,
		"$plural", o.resource(),
		"$Namespace", o.namespace(),
		"$Name", o.Name,
		"$Short", o.Short,
		"$Alias", o.alias(),
		"$ACAlias", o.acAlias(),
		"$APIPkg", o.apiPkg(),
		"$OpPkg", o.opPkg(),
		"$Scope", o.scope(),
		"$v", o.v(),
	}
}
