package main

import (
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/hack/worktree"
)

// variants are operators of every shape the generator writes.
var variants = []input{
	{Name: "web-demo", Group: "webapps.example.com", Kind: "WebApp", Scope: "Cluster", Owns: "ConfigMap,Secret,ServiceAccount,Service,Deployment"},
	{Name: "web-demo", Group: "webapps.example.com", Kind: "WebApp", Scope: "Namespaced", Owns: "Deployment,ServiceAccount,Secret,Service,ConfigMap"},
	{Name: "web-demo", Group: "webapps.example.com", Kind: "WebApp", Scope: "Cluster"},
	{Name: "web-demo", Group: "webapps.example.com", Kind: "WebApp", Scope: "Namespaced"},
	{Name: "db", Group: "db.example.com", Kind: "Database", Scope: "Namespaced", Owns: "Service"},
	{Name: "proxy", Group: "net2.example.com", Kind: "Proxy", Scope: "Cluster", Owns: "Secret"},
}

// rendered renders in against this repository, which is only read.
func rendered(t *testing.T, in input) (operator, map[string][]byte) {
	t.Helper()
	repo, err := openRepo(worktree.Root(t), false)
	if err != nil {
		t.Fatal(err)
	}
	op, problems := in.validate(repo)
	if len(problems) > 0 {
		t.Fatalf("%+v: %v", in, problems)
	}
	files, err := render(op)
	if err != nil {
		t.Fatal(err)
	}
	return op, files
}

var markdownLink = regexp.MustCompile(`\]\(([^)#]+)[^)]*\)`)

func TestRenderedFilesAreWellFormed(t *testing.T) {
	root := worktree.Root(t)
	for _, in := range variants {
		t.Run(in.Scope+" "+in.Kind+" owning "+in.Owns, func(t *testing.T) {
			op, files := rendered(t, in)
			for _, dir := range op.dirs() {
				if _, err := os.Stat(filepath.Join(root, dir)); err == nil {
					t.Fatalf("%s exists in the repository: choose another variant", dir)
				}
			}
			kustomizations := map[string][]string{} // directory: resources
			for name, content := range files {
				if !slices.ContainsFunc(op.dirs(), func(d string) bool { return strings.HasPrefix(name, d+"/") }) {
					t.Errorf("%s is outside %v", name, op.dirs())
				}
				for i, token := range op.names() {
					if i%2 == 0 && strings.Contains(string(content), token) {
						t.Errorf("%s holds %s: a name left unfilled", name, token)
					}
				}
				switch path.Ext(name) {
				case ".go":
					formatted, err := format.Source(content)
					if err != nil || string(formatted) != string(content) {
						t.Errorf("%s is not gofmt'ed (%v)", name, err)
					}
					for i, line := range strings.Split(string(content), "\n") {
						if m := commentLine.FindStringSubmatch(line); m != nil && prose(m[3]) && width(line) > wrapWidth && strings.Contains(strings.TrimSpace(m[3]), " ") {
							t.Errorf("%s:%d: comment wider than %d: %s", name, i+1, wrapWidth, line)
						}
					}
				case ".yaml":
					for _, part := range strings.Split(string(content), "\n---\n") {
						var doc map[string]any
						if err := yaml.UnmarshalStrict([]byte(part), &doc); err != nil || doc["kind"] == nil {
							t.Errorf("%s: %v (a document without a kind?)", name, err)
						}
					}
					if path.Base(name) == "kustomization.yaml" {
						var k struct {
							Resources []string `json:"resources"`
						}
						_ = yaml.Unmarshal(content, &k)
						kustomizations[path.Dir(name)] = k.Resources
					}
				case ".md":
					for _, m := range markdownLink.FindAllStringSubmatch(string(content), -1) {
						target := path.Clean(path.Join(path.Dir(name), m[1]))
						_, generated := files[target]
						if _, err := os.Stat(filepath.Join(root, target)); err != nil && !generated && !generatedDir(files, target) {
							t.Errorf("%s links to %s, which does not exist", name, m[1])
						}
					}
				}
			}
			// Every manifest is listed in its kustomization (the ../ ones
			// are other directories).
			for name := range files {
				dir := path.Dir(name)
				if res, ok := kustomizations[dir]; ok && path.Ext(name) == ".yaml" && path.Base(name) != "kustomization.yaml" && !slices.Contains(res, path.Base(name)) {
					t.Errorf("%s/kustomization.yaml does not list %s", dir, path.Base(name))
				}
			}
			checkNamespaces(t, op, files)
		})
	}
}

// checkNamespaces checks that the operator lives in a namespace of its own,
// which its manifests create at the restricted Pod Security level, and that
// they put nothing anywhere else but where its children and Events go.
func checkNamespaces(t *testing.T, op operator, files map[string][]byte) {
	t.Helper()
	elsewhere := map[string]bool{servedNamespace: true} // a namespaced kind's children
	elsewhere["default"] = true                         // a cluster-scoped kind's Events
	if op.Cluster && len(op.Owns) > 0 {
		elsewhere[op.childNamespace()] = true
	}
	if elsewhere[op.namespace()] {
		t.Fatalf("the operator's namespace %s is also where its children or Events go", op.namespace())
	}
	own := []string{"ServiceAccount", "Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget"}
	for name, content := range files {
		if path.Ext(name) != ".yaml" || !strings.HasPrefix(name, "manifests/") {
			continue
		}
		for _, part := range strings.Split(string(content), "\n---\n") {
			var doc struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name      string            `json:"name"`
					Namespace string            `json:"namespace"`
					Labels    map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
				continue // TestRenderedFilesAreWellFormed says why
			}
			ns := doc.Metadata.Namespace
			switch {
			case slices.Contains(own, doc.Kind) && ns != op.namespace():
				t.Errorf("%s: %s %s is in namespace %q, want the operator's own, %s", name, doc.Kind, doc.Metadata.Name, ns, op.namespace())
			case ns != "" && ns != op.namespace() && !elsewhere[ns]:
				t.Errorf("%s: %s %s is in namespace %q, want %s or where its children or Events go", name, doc.Kind, doc.Metadata.Name, ns, op.namespace())
			case doc.Kind == "Namespace" && doc.Metadata.Labels["pod-security.kubernetes.io/enforce"] != "restricted":
				t.Errorf("%s: namespace %s does not enforce the restricted Pod Security profile", name, doc.Metadata.Name)
			}
			if name == "manifests/rbac/"+op.Name+"/namespace.yaml" && (doc.Kind != "Namespace" || doc.Metadata.Name != op.namespace()) {
				t.Errorf("%s: got %s %s, want the Namespace %s", name, doc.Kind, doc.Metadata.Name, op.namespace())
			}
		}
	}
}

// generatedDir reports whether dir holds a file of files.
func generatedDir(files map[string][]byte, dir string) bool {
	for name := range files {
		if strings.HasPrefix(name, dir+"/") {
			return true
		}
	}
	return false
}

// The variable naming the custom resource must not shadow anything the
// generated code declares or imports. Initials are lowercase letters: every
// identifier of only those must be reserved, so that v never picks it.
func TestTheResourceVariableShadowsNothing(t *testing.T) {
	lower := regexp.MustCompile(`^[a-z]+$`)
	for _, in := range variants {
		op, files := rendered(t, in)
		reserved := map[string]bool{op.alias(): true, op.acAlias(): true, "v1alpha1": true, "handler": true, "operator": true, "main": true, "integration": true}
		for _, name := range types.Universe.Names() {
			reserved[name] = true
		}
		for _, id := range generatedIdents {
			reserved[id] = true
		}
		for name := range packages {
			reserved[name] = true
		}
		for name, content := range files {
			if path.Ext(name) != ".go" {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, content, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && lower.MatchString(id.Name) && id.Name != op.v() && !reserved[id.Name] {
					t.Errorf("%s uses %q: add it to generatedIdents", name, id.Name)
					reserved[id.Name] = true // once
				}
				return true
			})
		}
	}
	for _, tt := range []struct{ kind, want string }{
		{"WebApp", "wa"}, {"PodTerminator", "pt"}, {"Handler", "cr"}, {"Database", "cr"}, {"FooMapTest", "cr"}, {"StatusTracker", "cr"}, {"GroupOrder", "cr"},
	} {
		if got := (operator{Kind: tt.kind, Short: "x"}).v(); got != tt.want {
			t.Errorf("kind %s: got variable %q, want %q", tt.kind, got, tt.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{
		"WebApp": "WebApps", "Policy": "Policies", "Gateway": "Gateways", "Box": "Boxes", "Class": "Classes",
		"Batch": "Batches", "Mesh": "Meshes", "Graph": "Graphs", "Leaf": "Leaves", "Knife": "Knives", "Cache": "Caches",
	} {
		if got := plural(kind); got != want {
			t.Errorf("plural(%s): got %s, want %s", kind, got, want)
		}
	}
}

func TestReflow(t *testing.T) {
	long := "// " + strings.Repeat("word ", 20)
	tests := []struct{ name, in, want string }{
		{name: "a short paragraph stays as written", in: "// one\n// two\n", want: "// one\n// two\n"},
		{
			name: "a long paragraph is refilled",
			in:   "\t" + strings.TrimSpace(long) + "\n\t// end\nx := 1\n",
			want: "\t// word word word word word word word word word word word word word word\n\t// word word word word word word end\nx := 1\n",
		},
		{name: "markers and indented lines stay", in: "// +kubebuilder:printcolumn:name=\"A\",type=string,JSONPath=`.a`,description=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n//\timport x \"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"\n", want: "// +kubebuilder:printcolumn:name=\"A\",type=string,JSONPath=`.a`,description=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n//\timport x \"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"\n"},
		{name: "YAML comments too", in: "  # " + strings.Repeat("w ", 40) + "\n", want: "  # " + strings.TrimSpace(strings.Repeat("w ", 38)) + "\n  # w w\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reflow(tt.in); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestReflowMarkdown(t *testing.T) {
	long := strings.Repeat("word ", 30) // 150 characters
	tests := []struct{ name, in, want string }{
		{name: "a paragraph is refilled", in: "a\nb c\n", want: "a b c\n"},
		{
			name: "a bullet keeps its hanging indent",
			in:   "- " + long + "\n",
			want: "- " + strings.TrimSpace(strings.Repeat("word ", 18)) + " word\n  " + strings.TrimSpace(strings.Repeat("word ", 11)) + "\n",
		},
		{
			name: "numbered items stay items",
			in:   "1. one\n   more\n2. two\n",
			want: "1. one more\n2. two\n",
		},
		{name: "headings, tables and fences stay", in: "# a\n| b |\n```\nc\nd\n```\n", want: "# a\n| b |\n```\nc\nd\n```\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reflowMarkdown(tt.in); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
