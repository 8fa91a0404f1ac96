package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/hack/worktree"
)

// existing is what TestRefusals adds to its copy of the repository for
// "already exists" to find, whatever operators and APIs the repository has:
// an operator shop and an API group shopping.example.org with a kind Order.
var existing = map[string]string{
	"operators/shop/cmd/shop/main.go": "package main\n",
	"apis/shopping/v1alpha1/doc.go":   "// +groupName=shopping.example.org\npackage v1alpha1\n",
	"apis/shopping/v1alpha1/types.go": "package v1alpha1\n\n// +genclient\ntype Order struct{}\n",
}

// Every input the generator cannot act on is refused with a message saying
// why, exit status 2, and the repository left byte for byte as it was. The
// cases run against one copy of this repository, with an operator and an
// API of its own (existing) for "already exists" to find.
func TestRefusals(t *testing.T) {
	root := worktree.Copy(t)
	for name, content := range existing {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := worktree.Sum(t, root)
	valid := map[string]string{"-name": "web-demo", "-group": "webapps.example.com", "-kind": "WebApp", "-scope": "Namespaced", "-owns": "ConfigMap"}
	tests := []struct {
		name string
		set  map[string]string // flags changed from valid ("" removes one)
		want []string          // lines of stderr, after "newoperator: "
	}{
		{name: "no name", set: map[string]string{"-name": ""}, want: []string{"-name is required"}},
		{name: "a name with capitals", set: map[string]string{"-name": "WebDemo"}, want: []string{`-name "WebDemo" is not a valid operator name: want a DNS label of at most 47 characters`}},
		{name: "a name starting with a digit", set: map[string]string{"-name": "1web"}, want: []string{`-name "1web" is not a valid operator name`}},
		{name: "a name with a dot", set: map[string]string{"-name": "web.demo"}, want: []string{`-name "web.demo" is not a valid operator name`}},
		{name: "a name too long for its children's namespace", set: map[string]string{"-name": strings.Repeat("a", 48)}, want: []string{"is not a valid operator name: want a DNS label of at most 47 characters"}},
		{name: "a name that is another's children's namespace", set: map[string]string{"-name": "web-children"}, want: []string{`-name "web-children" ends in -children: its namespace kooper-web-children would be the children's namespace of an operator named web`}},
		{name: "an existing operator", set: map[string]string{"-name": "shop"}, want: []string{`-name "shop": operators/shop already exists`}},
		{name: "a name whose manifests exist", set: map[string]string{"-name": "crds"}, want: []string{`-name "crds": manifests/crds already exists`}},
		{name: "the name of an example", set: map[string]string{"-name": "pod-logger"}, want: []string{`-name "pod-logger": examples/pod-logger already exists, and make build would write both to bin/pod-logger`}},
		{name: "no group", set: map[string]string{"-group": ""}, want: []string{"-group is required"}},
		{name: "a group without a dot", set: map[string]string{"-group": "webapps"}, want: []string{`-group "webapps" is not a valid API group: want a DNS subdomain with at least one dot`}},
		{name: "a group with capitals", set: map[string]string{"-group": "WebApps.example.com"}, want: []string{`-group "WebApps.example.com" is not a valid API group`}},
		{name: "a group whose first label is no Go name", set: map[string]string{"-group": "web-apps.example.com"}, want: []string{`-group "web-apps.example.com": its first label "web-apps" must be lowercase letters and digits`}},
		{name: "a group of Kubernetes", set: map[string]string{"-group": "webapps.k8s.io"}, want: []string{`-group "webapps.k8s.io": groups under k8s.io and kubernetes.io are reserved`}},
		{name: "an existing group", set: map[string]string{"-group": "shopping.example.org"}, want: []string{`-group "shopping.example.org": apis/shopping already exists`, `-group "shopping.example.org" already exists in apis/shopping/v1alpha1`}},
		{name: "a group whose directory exists", set: map[string]string{"-group": "shopping.example.com"}, want: []string{`-group "shopping.example.com": apis/shopping already exists`}},
		{name: "no kind", set: map[string]string{"-kind": ""}, want: []string{"-kind is required"}},
		{name: "a lowercase kind", set: map[string]string{"-kind": "webApp"}, want: []string{`-kind "webApp" is not UpperCamelCase`}},
		{name: "a kind in capitals", set: map[string]string{"-kind": "WEBAPP"}, want: []string{`-kind "WEBAPP" is not UpperCamelCase`}},
		{name: "a kind with an underscore", set: map[string]string{"-kind": "Web_App"}, want: []string{`-kind "Web_App" is not UpperCamelCase`}},
		{name: "a kind ending in List", set: map[string]string{"-kind": "WebAppList"}, want: []string{`-kind "WebAppList" ends in List`}},
		{name: "a kind colliding with the API package", set: map[string]string{"-kind": "Resource"}, want: []string{`-kind "Resource" collides with a name the API package`}},
		{name: "an existing kind", set: map[string]string{"-kind": "Order"}, want: []string{`-kind "Order" already exists in apis/shopping/v1alpha1`}},
		{name: "a built-in kind", set: map[string]string{"-kind": "Deployment"}, want: []string{`-kind "Deployment" is a built-in Kubernetes kind`}},
		{name: "a kind too long for its resource", set: map[string]string{"-kind": "W" + strings.Repeat("x", 63)}, want: []string{"is too long: its resource"}},
		{name: "no scope", set: map[string]string{"-scope": ""}, want: []string{"-scope is required: Cluster or Namespaced"}},
		{name: "a lowercase scope", set: map[string]string{"-scope": "cluster"}, want: []string{`-scope "cluster" is neither Cluster nor Namespaced`}},
		{name: "an unknown owned kind", set: map[string]string{"-owns": "ConfigMap,Pod"}, want: []string{`-owns: unknown kind "Pod": want some of ConfigMap, Secret, ServiceAccount, Role, RoleBinding, Service, Deployment`}},
		{name: "an owned kind in the wrong case", set: map[string]string{"-owns": "configmap"}, want: []string{`-owns: unknown kind "configmap" (did you mean ConfigMap?)`}},
		{name: "an owned kind twice", set: map[string]string{"-owns": "Secret,Secret"}, want: []string{"-owns: Secret is listed twice"}},
		{name: "a RoleBinding without its Role", set: map[string]string{"-owns": "RoleBinding"}, want: []string{"-owns: RoleBinding binds the Role of the same name"}},
		{
			name: "every problem at once",
			set:  map[string]string{"-name": "shop", "-group": "nodot", "-kind": "lower", "-scope": "Both", "-owns": "Pod"},
			want: []string{`-name "shop": operators/shop already exists`, `-group "nodot" is not a valid API group`, `-kind "lower" is not UpperCamelCase`, `-scope "Both" is neither`, `-owns: unknown kind "Pod"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"-root", root}
			for _, f := range []string{"-name", "-group", "-kind", "-scope", "-owns"} {
				v, changed := tt.set[f]
				if !changed {
					v = valid[f]
				}
				args = append(args, f, v)
			}
			var stdout, stderr bytes.Buffer
			if status := exit(run(args, &stdout, &stderr), &stderr); status != 2 {
				t.Errorf("got exit status %d, want 2", status)
			}
			for _, want := range append(tt.want, "nothing was written") {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
				}
			}
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if !strings.HasPrefix(line, "newoperator: ") {
					t.Errorf("got stderr line %q, want each to start with newoperator: ", line)
				}
			}
			if stdout.Len() > 0 {
				t.Errorf("got stdout %q, want nothing", stdout.String())
			}
			if after := worktree.Sum(t, root); after != before {
				t.Fatal("the repository changed")
			}
		})
	}
}

// The command line itself: a flag it does not know, an argument, a root
// that is not a repository.
func TestTheCommandLine(t *testing.T) {
	notRepo := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		wantStatus int
		wantStderr string
	}{
		{name: "-h prints the usage", args: []string{"-h"}, wantStatus: 0, wantStderr: "Usage of newoperator:"},
		{name: "an unknown flag", args: []string{"-kinds", "X"}, wantStatus: 2, wantStderr: "flag provided but not defined: -kinds"},
		{name: "an argument", args: []string{"-name", "x", "extra"}, wantStatus: 2, wantStderr: `unexpected arguments ["extra"]`},
		{name: "a root that is no repository", args: []string{"-root", notRepo}, wantStatus: 2, wantStderr: notRepo + " is not a Kooper repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if status := exit(run(tt.args, &stdout, &stderr), &stderr); status != tt.wantStatus {
				t.Errorf("got exit status %d, want %d", status, tt.wantStatus)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("got stderr %q, want it to say %q", stderr.String(), tt.wantStderr)
			}
			if entries, _ := os.ReadDir(notRepo); len(entries) > 0 {
				t.Errorf("got %d entries in %s, want none", len(entries), filepath.Base(notRepo))
			}
		})
	}
}

// When make generate fails, the new directories are removed again and make
// generate is run once more to restore what it changed: here a make that
// always fails, so the repository ends as it began.
func TestAFailedGenerateLeavesTheRepositoryAsItWas(t *testing.T) {
	root := worktree.Copy(t)
	before := worktree.Sum(t, root)
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	script := "#!/bin/sh\necho \"$@\" >>" + calls + "\necho make: generate broke >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "make"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	var stdout, stderr bytes.Buffer
	err := run([]string{"-root", root, "-name", "web-demo", "-group", "webapps.example.com", "-kind", "WebApp", "-scope", "Cluster", "-owns", "Secret"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "make generate failed") || !strings.Contains(err.Error(), "the new directories were removed") {
		t.Errorf("got error %v, want make generate's failure, and the directories removed", err)
	}
	got, _ := os.ReadFile(calls)
	if want := strings.Repeat("--no-print-directory -C "+root+" generate\n", 2); string(got) != want {
		t.Errorf("got make called with\n%s\nwant\n%s", got, want)
	}
	if worktree.Sum(t, root) != before {
		t.Error("the repository changed")
	}
}
