package dashboards_test

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kooperkit/kooper/grafana/internal/catalog"
	"github.com/kooperkit/kooper/grafana/internal/dashboards"
)

func TestOperatorsAreTheDirectoriesWithTheirCommand(t *testing.T) {
	tests := []struct {
		name    string
		root    fstest.MapFS
		want    []string
		wantErr bool
	}{
		{
			name: "operators with cmd/<name> are listed sorted, shared code and half-made ones are not",
			root: fstest.MapFS{
				"operators/shop/cmd/shop/main.go":   {},
				"operators/bank/cmd/bank/main.go":   {},
				"operators/internal/cli/cli.go":     {},
				"operators/draft/README.md":         {},
				"operators/odd/cmd/other/main.go":   {},
				"operators/README.md":               {},
				"operators/structure_test.go":       {},
				"manifests/shop/kustomization.yaml": {},
			},
			want: []string{"bank", "shop"},
		},
		{
			name: "an empty operators directory has none",
			root: fstest.MapFS{"operators": {Mode: fs.ModeDir}},
		},
		{
			name:    "a root without operators/ is an error",
			root:    fstest.MapFS{"go.mod": {}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dashboards.Operators(tt.root)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error: %t", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAllAddsAGenericDashboardForEachOperatorWithoutItsOwn(t *testing.T) {
	defined := dashboards.All(nil)
	own := withOwn()
	repo := repoOperators(t)
	var repoWithout []string // operators make new-operator added, if any
	for _, name := range repo {
		if !slices.Contains(own, name) {
			repoWithout = append(repoWithout, name)
		}
	}
	// A hand-written dashboard of an operator that is gone would chart
	// nothing: remove its definition with the operator.
	for _, name := range own {
		if !slices.Contains(repo, name) {
			t.Errorf("a dashboard in definitions.go is for operator %s, which the repository's operators %q lack", name, repo)
		}
	}
	tests := []struct {
		name      string
		operators []string
		want      []string // the operators given a generic dashboard, in order
	}{
		{"an operator without a dashboard of its own gets a generic one", withGeneric, []string{"web-demo"}},
		{"hand-written dashboards cover their operators: the repository's operators get no generic one for them", repo, repoWithout},
		{"without operators there are only the hand-written dashboards", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dashboards.All(tt.operators)
			if len(got) != len(defined)+len(tt.want) {
				t.Fatalf("got %d dashboards, want the %d hand-written ones and generic ones for %q", len(got), len(defined), tt.want)
			}
			for i, d := range defined {
				if got[i].UID != d.UID {
					t.Errorf("dashboard %d: got %s, want the hand-written %s", i, got[i].UID, d.UID)
				}
			}
			for i, name := range tt.want {
				checkGeneric(t, got[len(defined)+i], name)
			}
		})
	}
}

// The catalog lists the sources of operators of the repository only: the
// entry of an operator that is gone would have the end-to-end test scrape
// nothing for it.
func TestTheCatalogsOperatorsAreTheRepositorys(t *testing.T) {
	repo := repoOperators(t)
	for name := range catalog.Operators {
		if !slices.Contains(repo, name) {
			t.Errorf("catalog.Operators has operator %s, which the repository's operators %q lack", name, repo)
		}
	}
}

// checkGeneric checks that d is the generic dashboard of operator name:
// its controller variable offers the operator's controllers, and every
// query selects the variable's values.
func checkGeneric(t *testing.T, d dashboards.Dashboard, name string) {
	t.Helper()
	regex := name + ".*"
	if d.UID != "kooper-"+name || d.Title != "Kooper / "+name || d.Controllers != regex {
		t.Errorf("got UID %q, title %q, controllers %q, want kooper-%s, Kooper / %s, %s", d.UID, d.Title, d.Controllers, name, name, regex)
	}
	if want := `Controllers "` + regex + `" in grafana/internal/dashboards/definitions.go`; !strings.Contains(d.Description, want) {
		t.Errorf("description %q does not say how to replace it (%s)", d.Description, want)
	}
	if len(d.Rows) != 1 || d.Rows[0].Title != "Controllers" || len(d.Rows[0].Panels) == 0 {
		t.Fatalf("got rows %+v, want one row of controller panels", d.Rows)
	}
	b, err := d.JSON()
	if err != nil {
		t.Fatal(err)
	}
	// The structure test of operators/ finds the operator's name in it.
	if want := `label_values(` + catalog.QueueLength + `{controller=~\"` + regex + `\"}, controller)`; !strings.Contains(string(b), want) {
		t.Errorf("the JSON's controller variable does not query %s", want)
	}
	for _, p := range d.Rows[0].Panels {
		for _, target := range p.Targets {
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(strings.ReplaceAll(target.Expr, dashboards.VarRateInterval, "1m"))
			if err != nil {
				t.Errorf("%q: %q does not parse: %v", p.Title, target.Expr, err)
				continue
			}
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				if n, ok := node.(*parser.VectorSelector); ok && !slices.ContainsFunc(n.LabelMatchers, func(m *labels.Matcher) bool {
					return m.Name == dashboards.VarController && m.Type == labels.MatchRegexp && m.Value == "$"+dashboards.VarController
				}) {
					t.Errorf("%q: %s does not select controller=~\"$%s\"", p.Title, n, dashboards.VarController)
				}
				return nil
			})
		}
	}
}

func TestFilesRefusesTwoDashboardsWithOneUID(t *testing.T) {
	type test struct {
		name      string
		operators []string
		wantErr   bool
	}
	tests := []test{{"an operator named like no dashboard is fine", withGeneric, false}}
	// An operator named controllers would overwrite the library's
	// dashboard, kooper-controllers, and likewise for each hand-written
	// dashboard whose UID is not kooper-<the operator it is for>.
	for _, d := range dashboards.All(nil) {
		name := strings.TrimPrefix(d.UID, "kooper-")
		if d.Controllers != name+".*" {
			tests = append(tests, test{"an operator named " + name + " would overwrite dashboard " + d.UID, []string{name}, true})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := dashboards.Files(tt.operators)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error: %t", err, tt.wantErr)
			}
			if err == nil && len(files) != len(dashboards.All(tt.operators))+1 {
				t.Errorf("got %d files, want one per dashboard and docs/metrics.md", len(files))
			}
		})
	}
}
