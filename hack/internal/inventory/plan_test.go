package inventory

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/hack/internal/markdown"
)

// shopRepo is a repository of two operators: shop, whose API group
// shopping no other operator imports, and bank, with the group money.
func shopRepo() map[string]string {
	const mod = "example.org/acme"
	return map[string]string{
		"go.mod":                                                       "module " + mod + "\n\ngo 1.26\n",
		"operators/README.md":                                          "# Operators\n\n" + markdown.ListBegin + "\n| [shop](shop/README.md) | Sells. |\n" + markdown.ListEnd + "\n",
		"operators/shop/cmd/shop/main.go":                              "package main\n\nimport _ \"" + mod + "/apis/shopping/v1alpha1\"\n",
		"operators/shop/internal/cart/cart.go":                         "package cart\n\nimport _ \"" + mod + "/apis/client/clientset/versioned/typed/shopping/v1alpha1\"\n",
		"operators/shop/README.md":                                     "# shop\n\nSells.\n",
		"operators/bank/cmd/bank/main.go":                              "package main\n\nimport _ \"" + mod + "/apis/money/v1alpha1\"\n",
		"operators/bank/README.md":                                     "# bank\n\nKeeps.\n",
		"apis/shopping/v1alpha1/doc.go":                                "// +groupName=shopping.example.org\npackage v1alpha1\n",
		"apis/money/v1alpha1/doc.go":                                   "// +groupName=money.example.org\npackage v1alpha1\n",
		"apis/integration/shop_test.go":                                "package integration\n\nimport _ \"" + mod + "/apis/shopping/v1alpha1\"\n",
		"apis/client/clientset/versioned/cs.go":                        "package versioned\n\nimport _ \"" + mod + "/apis/client/clientset/versioned/typed/shopping/v1alpha1\"\n",
		"apis/client/clientset/versioned/typed/shopping/v1alpha1/c.go": "package v1alpha1\n",
		"apis/client/listers/money/v1alpha1/l.go":                      "package v1alpha1\n",
		"manifests/shop/deployment.yaml":                               "kind: Deployment\n",
		"manifests/rbac/shop/kustomization.yaml":                       "resources: []\n",
		"manifests/bank/deployment.yaml":                               "kind: Deployment\n",
		"manifests/crds/shopping/crd.yaml":                             "kind: CustomResourceDefinition\n",
		"manifests/crds/money/crd.yaml":                                "kind: CustomResourceDefinition\n",
		"hack/run/shop.go":                                             "package main\n\nimport _ \"" + mod + "/apis/shopping/v1alpha1\"\n",
		"hack/run/main.go":                                             "package main\n\nfunc main() {}\n",
		"faults/shop_test.go":                                          "package faults\n\nimport _ \"" + mod + "/operators/shop/internal/cart\"\n",
		"grafana/dashboards/kooper-shop.json":                          `{"query": "label_values(q{controller=~\"shop.*\"}, controller)"}` + "\n",
		"grafana/dashboards/kooper-bank.json":                          `{"query": "label_values(q{controller=~\"bank.*\"}, controller)"}` + "\n",
		"grafana/catalog.go": "package catalog\n\nvar ops = map[string]int{\n\t\"bank\": 1,\n\t\"shop\": 2, // " + marker("", "shop") + "\n}\n\n" +
			"// " + marker("-begin", "shop") + "\nconst Sold = \"sold_total\"\n// " + marker("-end", "shop") + "\n",
		"docs/tutorial-shop.md": "<!-- " + marker("", "shop") + " -->\n# The shop tutorial\n",
		"docs/README.md": "# Docs\n\n| [tutorial-shop.md](tutorial-shop.md) | the shop | <!-- " + marker("", "shop") + " -->\n" +
			"| [concepts.md](concepts.md) | ideas |\n\nSee [the shop's README](../operators/shop/README.md).\n",
		"docs/concepts.md": "# Concepts\n",
		"img.png":          "\x89PNG\x00\x00 shop",
	}
}

// write writes files into a new directory and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// tree reads every file under root, by slash-separated path.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestOpenFindsTheOperatorsAndGroups(t *testing.T) {
	r, err := Open(write(t, shopRepo()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Module != "example.org/acme" || !slices.Equal(r.Operators, []string{"bank", "shop"}) {
		t.Errorf("got module %q, operators %q; want example.org/acme, [bank shop]", r.Module, r.Operators)
	}
	want := map[string]Group{"shopping": {"shopping", "shopping.example.org"}, "money": {"money", "money.example.org"}}
	if !maps.Equal(r.Groups, want) {
		t.Errorf("got groups %v, want %v", r.Groups, want)
	}
	for name, want := range map[string][]string{"shop": {"shopping"}, "bank": {"money"}} {
		if got, err := r.GroupsOf(name); err != nil || !slices.Equal(got, want) {
			t.Errorf("GroupsOf(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestPlanRemoval(t *testing.T) {
	r, err := Open(write(t, shopRepo()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.PlanRemoval("shop")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rm := range p.Remove {
		got = append(got, rm.Path+": "+rm.Why)
	}
	want := []string{
		"apis/client/clientset/versioned/typed/shopping: the generated clients of its API group shopping.example.org",
		"apis/integration/shop_test.go: it imports apis/shopping/v1alpha1",
		"apis/shopping: its API group shopping.example.org",
		"docs/tutorial-shop.md: marked as its own",
		"faults/shop_test.go: it imports operators/shop/internal/cart",
		"grafana/dashboards/kooper-shop.json: its Grafana dashboard",
		"hack/run/shop.go: it imports apis/shopping/v1alpha1",
		"manifests/crds/shopping: the generated CRDs of its API group shopping.example.org",
		"manifests/rbac/shop: its RBAC",
		"manifests/shop: its deploy manifests",
		"operators/shop: its code",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got removals\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(p.Groups) != 1 || p.Groups[0].Name != "shopping.example.org" || len(p.Kept) != 0 {
		t.Errorf("got groups %v, kept %q; want shopping.example.org, none kept", p.Groups, p.Kept)
	}
	if got := slices.Sorted(maps.Keys(p.Edit)); !slices.Equal(got, []string{"docs/README.md", "grafana/catalog.go"}) {
		t.Errorf("got edits of %q, want docs/README.md and grafana/catalog.go", got)
	}
	if got, want := string(p.Edit["grafana/catalog.go"]), "package catalog\n\nvar ops = map[string]int{\n\t\"bank\": 1,\n}\n"; got != want {
		t.Errorf("got catalog.go\n%s\nwant\n%s", got, want)
	}
	if got, want := string(p.Edit["docs/README.md"]), "# Docs\n\n| [concepts.md](concepts.md) | ideas |\n\nSee the shop's README.\n"; got != want {
		t.Errorf("got docs/README.md\n%s\nwant\n%s", got, want)
	}
	if want := []string{"docs/README.md:5: ../operators/shop/README.md"}; !slices.Equal(p.Unlinked, want) {
		t.Errorf("got unlinked %q, want %q", p.Unlinked, want)
	}
	// The generated operators list is make generate's to rewrite.
	if want := []string{"docs/README.md (1)", "operators/README.md (2)"}; !slices.Equal(p.Mentions, want) {
		t.Errorf("got mentions %q, want %q", p.Mentions, want)
	}
	if len(p.Problems) > 0 {
		t.Errorf("got problems %q, want none", p.Problems)
	}
}

// An API group another operator imports too stays, and so does what
// imports it.
func TestAGroupAnotherOperatorImportsStays(t *testing.T) {
	files := shopRepo()
	files["operators/bank/internal/pay/pay.go"] = "package pay\n\nimport _ \"example.org/acme/apis/shopping/v1alpha1\"\n"
	r, err := Open(write(t, files))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.PlanRemoval("shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 0 || !slices.Equal(p.Kept, []string{"shopping.example.org (bank)"}) {
		t.Errorf("got groups %v, kept %q; want none, shopping.example.org kept by bank", p.Groups, p.Kept)
	}
	for _, rm := range p.Remove {
		if strings.HasPrefix(rm.Path, "apis/") || rm.Path == "hack/run/shop.go" || strings.HasPrefix(rm.Path, "manifests/crds/") {
			t.Errorf("got %s removed (%s), want it kept with its group", rm.Path, rm.Why)
		}
	}
}

func TestPlanRemovalRefuses(t *testing.T) {
	files := shopRepo()
	files["docs/quote.md"] = "# Quote\n\n<!-- include: operators/shop/cmd/shop/main.go -->\n```go\npackage main\n```\n"
	files["docs/broken.md"] = "<!-- " + marker("-begin", "shop") + " -->\n"
	files["grafana/sold.go"] = "package grafana\n\n// " + marker("-begin", "shop") + "\n// region: sold\nconst Sold = 1\n// endregion: sold\n// " + marker("-end", "shop") + "\n"
	files["docs/sold.md"] = "<!-- include: grafana/sold.go#sold -->\n```go\nconst Sold = 1\n```\n"
	root := write(t, files)
	r, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PlanRemoval("nope"); !errors.Is(err, ErrNoOperator) || !strings.Contains(err.Error(), "the operators are bank, shop") {
		t.Errorf("got %v, want %v naming the operators", err, ErrNoOperator)
	}
	p, err := r.PlanRemoval("shop")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docs/broken.md: line 1: the block of shop never ends",
		"docs/quote.md:3: quotes operators/shop/cmd/shop/main.go, which goes with shop: mark the section that quotes it (" +
			marker("-begin", "shop") + " ... " + marker("-end", "shop") + ")",
		"docs/sold.md:1: quotes grafana/sold.go#sold, a region that goes with shop: mark the section that quotes it (" +
			marker("-begin", "shop") + " ... " + marker("-end", "shop") + ")",
	}
	if !slices.Equal(p.Problems, want) {
		t.Errorf("got problems\n%s\nwant\n%s", strings.Join(p.Problems, "\n"), strings.Join(want, "\n"))
	}
	before := tree(t, root)
	if _, err := p.Apply(root); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("got %v, want Apply refused", err)
	}
	if !maps.Equal(tree(t, root), before) {
		t.Error("a refused Apply changed the tree")
	}
}

// Apply removes and rewrites what the plan says; undo puts it all back.
func TestApplyAndUndo(t *testing.T) {
	root := write(t, shopRepo())
	before := tree(t, root)
	r, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.PlanRemoval("shop")
	if err != nil {
		t.Fatal(err)
	}
	undo, err := p.Apply(root)
	if err != nil {
		t.Fatal(err)
	}
	after := tree(t, root)
	for name := range before {
		removed := slices.ContainsFunc(p.Remove, func(rm Removal) bool { return name == rm.Path || strings.HasPrefix(name, rm.Path+"/") })
		if _, ok := after[name]; ok == removed {
			t.Errorf("%s: got it there %t after Apply, want %t", name, ok, !removed)
		}
		if edit, ok := p.Edit[name]; ok && after[name] != string(edit) {
			t.Errorf("%s: got\n%s\nwant the plan's edit\n%s", name, after[name], edit)
		}
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, root); !maps.Equal(got, before) {
		t.Errorf("undo left a tree of %d files that differs from the %d before", len(got), len(before))
	}
}

func TestCheck(t *testing.T) {
	files := shopRepo()
	files["docs/stray.md"] = "<!-- " + marker("", "cart") + " -->\n"
	r, err := Open(write(t, files))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Check()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docs/stray.md:1: marker of cart, which is no operator of the repository",
		"removing shop: docs/README.md:5: ../operators/shop/README.md: links what goes with shop, outside what is marked as its own: mark the line or section",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
