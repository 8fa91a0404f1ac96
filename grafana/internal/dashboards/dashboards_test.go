package dashboards_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kooperkit/kooper/grafana/internal/catalog"
	"github.com/kooperkit/kooper/grafana/internal/dashboards"
)

// withGeneric are the operators with a hand-written dashboard and one
// without a dashboard of its own: the checks below run over its generic
// dashboard too.
var withGeneric = append(withOwn(), "web-demo")

// withOwn returns the operators that a hand-written dashboard is for: those
// its Controllers "<name>.*" name.
func withOwn() []string {
	var names []string
	for _, d := range dashboards.All(nil) {
		if name, ok := strings.CutSuffix(d.Controllers, ".*"); ok {
			names = append(names, name)
		}
	}
	return names
}

// repoOperators lists the operators of this repository.
func repoOperators(t *testing.T) []string {
	t.Helper()
	ops, err := dashboards.Operators(os.DirFS(filepath.Join("..", "..", "..")))
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

func TestTheGeneratedFilesAreUpToDate(t *testing.T) {
	files, err := dashboards.Files(repoOperators(t))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range files {
		have, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(p)))
		if err != nil || !bytes.Equal(have, want) {
			t.Errorf("grafana/%s is out of date (%v): run `make generate`", p, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join("..", "..", "dashboards"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := files["dashboards/"+e.Name()]; !ok {
			t.Errorf("grafana/dashboards/%s is not generated: remove it or define it in grafana/internal/dashboards", e.Name())
		}
	}
}

// substitute replaces the dashboard variables the way Grafana would for
// "All", so the expression parses.
func substitute(expr string) string {
	return strings.NewReplacer("$"+dashboards.VarController, ".+", dashboards.VarRateInterval, "1m").Replace(expr)
}

func TestEveryQueryParsesAndNamesCatalogMetricsWithTheirLabels(t *testing.T) {
	padding := []string{"absent", "absent_over_time", "vector"}
	for _, d := range dashboards.All(withGeneric) {
		for _, r := range d.Rows {
			for _, p := range r.Panels {
				if len(p.Targets) == 0 || p.Title == "" || p.Description == "" || p.Unit == "" {
					t.Errorf("%s / %q: want a title, a description, a unit and at least one query", d.UID, p.Title)
				}
				for _, target := range p.Targets {
					expr, err := parser.NewParser(parser.Options{}).ParseExpr(substitute(target.Expr))
					if err != nil {
						t.Errorf("%s / %q: %q does not parse: %v", d.UID, p.Title, target.Expr, err)
						continue
					}
					selectors := 0
					parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
						switch n := node.(type) {
						case *parser.Call:
							if slices.Contains(padding, n.Func.Name) {
								t.Errorf("%s / %q: %s() pads the result: every selector must match on its own", d.UID, p.Title, n.Func.Name)
							}
						case *parser.BinaryExpr:
							if n.Op == parser.LOR {
								t.Errorf("%s / %q: `or` may pad the result: %s", d.UID, p.Title, target.Expr)
							}
						case *parser.VectorSelector:
							selectors++
							f, ok := catalog.Lookup(n.Name)
							if !ok {
								t.Errorf("%s / %q: metric %s is not in the catalog", d.UID, p.Title, n.Name)
								return nil
							}
							allowed := append(slices.Clone(f.Labels), "job", "instance", "__name__")
							if strings.HasSuffix(n.Name, "_bucket") {
								allowed = append(allowed, "le")
							}
							for _, m := range n.LabelMatchers {
								if !slices.Contains(allowed, m.Name) {
									t.Errorf("%s / %q: %s has no label %s (it has %v)", d.UID, p.Title, n.Name, m.Name, f.Labels)
								}
							}
						}
						return nil
					})
					if selectors == 0 {
						t.Errorf("%s / %q: %q selects no metric", d.UID, p.Title, target.Expr)
					}
				}
			}
		}
	}
}

func TestTheDashboardsCoverWhatTheyPromise(t *testing.T) {
	uses := map[string]map[string]bool{} // dashboard UID -> family names used
	for _, d := range dashboards.All(withGeneric) {
		uses[d.UID] = map[string]bool{}
		for _, r := range d.Rows {
			for _, p := range r.Panels {
				for _, target := range p.Targets {
					expr, err := parser.NewParser(parser.Options{}).ParseExpr(substitute(target.Expr))
					if err != nil {
						continue // reported by the test above
					}
					parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
						if n, ok := node.(*parser.VectorSelector); ok {
							if f, ok := catalog.Lookup(n.Name); ok {
								uses[d.UID][f.Name] = true
							}
						}
						return nil
					})
				}
			}
		}
	}
	// The library's dashboard charts every library, sharding, REST client
	// and runtime family; each operator's (Controllers "<name>.*"), all of
	// the families of its own sources in the catalog.
	shared := []catalog.Source{catalog.Library, catalog.Sharding, catalog.RESTClient, catalog.Runtime}
	covers := map[string][]catalog.Source{"kooper-controllers": shared}
	for _, d := range dashboards.All(withGeneric) {
		name, _ := strings.CutSuffix(d.Controllers, ".*")
		for _, s := range catalog.Operators[name] {
			if !slices.Contains(shared, s) {
				covers[d.UID] = append(covers[d.UID], s)
			}
		}
	}
	for uid, sources := range covers {
		for _, f := range catalog.Exposed(sources...) {
			if !uses[uid][f.Name] {
				t.Errorf("dashboard %s charts no %s", uid, f.Name)
			}
		}
	}
}
