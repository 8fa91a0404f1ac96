// Package operators_test checks that every operator in this repository is
// complete: an operator copied from a sample, or written by make
// new-operator, cannot lose a part without a failing test.
package operators_test

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// missing returns what operator name lacks in the repository root, one
// line per missing part.
func missing(root fs.FS, name string) []string {
	var out []string
	has := func(p string) bool {
		_, err := fs.Stat(root, p)
		return err == nil
	}
	mentions := func(p, s string) bool {
		b, err := fs.ReadFile(root, p)
		return err == nil && strings.Contains(string(b), s)
	}
	parts := []struct {
		what string
		ok   bool
	}{
		{"its command, operators/" + name + "/cmd/" + name + "/main.go", has("operators/" + name + "/cmd/" + name + "/main.go")},
		{"its README, operators/" + name + "/README.md", has("operators/" + name + "/README.md")},
		{"RBAC, manifests/rbac/" + name + "/kustomization.yaml", has("manifests/rbac/" + name + "/kustomization.yaml")},
		{"deploy manifests, manifests/" + name + "/kustomization.yaml and deployment.yaml", has("manifests/"+name+"/kustomization.yaml") && has("manifests/"+name+"/deployment.yaml")},
		{"an integration test, operators/" + name + "/integration/*_test.go", hasTest(root, "operators/"+name+"/integration")},
		{"a dashboard in grafana/dashboards/ whose queries select its controllers (" + name + ")", hasDashboard(root, name)},
		{"a row in the docs index, docs/README.md, naming it (" + name + ")", mentions("docs/README.md", name)},
	}
	for _, p := range parts {
		if !p.ok {
			out = append(out, p.what)
		}
	}
	return out
}

func hasTest(root fs.FS, dir string) bool {
	entries, err := fs.ReadDir(root, dir)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return strings.HasSuffix(e.Name(), "_test.go") })
}

// hasDashboard reports whether an operator dashboard (any but the generic
// controllers one) mentions name, as its controller selector does.
func hasDashboard(root fs.FS, name string) bool {
	entries, err := fs.ReadDir(root, "grafana/dashboards")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || e.Name() == "kooper-controllers.json" {
			continue
		}
		b, err := fs.ReadFile(root, path.Join("grafana/dashboards", e.Name()))
		if err == nil && strings.Contains(string(b), name) {
			return true
		}
	}
	return false
}

// operators lists the operators of root: the directories of operators/
// but internal.
func operators(root fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(root, "operators")
	if err != nil {
		return nil, fmt.Errorf("could not list the operators: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func TestEveryOperatorIsComplete(t *testing.T) {
	root := os.DirFS("..")
	names, err := operators(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operators: %v", names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, m := range missing(root, name) {
				t.Errorf("operators/%s lacks %s", name, m)
			}
		})
	}
}

// The check itself: a complete operator passes, and each part removed is
// named.
func TestTheCheckNamesEachMissingPart(t *testing.T) {
	complete := fstest.MapFS{
		"operators/shop/cmd/shop/main.go":            {},
		"operators/shop/README.md":                   {},
		"operators/shop/integration/shop_test.go":    {},
		"manifests/rbac/shop/kustomization.yaml":     {},
		"manifests/shop/kustomization.yaml":          {},
		"manifests/shop/deployment.yaml":             {},
		"grafana/dashboards/kooper-controllers.json": {Data: []byte(`"shop"`)},
		"grafana/dashboards/kooper-shop.json":        {Data: []byte(`controller=~"shop.*"`)},
		"docs/README.md":                             {Data: []byte("| 9 | the shop operator |")},
	}
	if m := missing(complete, "shop"); len(m) > 0 {
		t.Fatalf("a complete operator lacks %v", m)
	}
	tests := []struct {
		remove string
		want   string
	}{
		{"operators/shop/cmd/shop/main.go", "its command"},
		{"operators/shop/README.md", "its README"},
		{"operators/shop/integration/shop_test.go", "an integration test"},
		{"manifests/rbac/shop/kustomization.yaml", "RBAC"},
		{"manifests/shop/deployment.yaml", "deploy manifests"},
		{"grafana/dashboards/kooper-shop.json", "a dashboard"},
		{"docs/README.md", "a row in the docs index"},
	}
	for _, tt := range tests {
		t.Run(tt.remove, func(t *testing.T) {
			root := fstest.MapFS{}
			for p, f := range complete {
				if p != tt.remove {
					root[p] = f
				}
			}
			m := missing(root, "shop")
			if len(m) != 1 || !strings.HasPrefix(m[0], tt.want) {
				t.Errorf("without %s: got missing %q, want one part starting %q", tt.remove, m, tt.want)
			}
		})
	}
}
