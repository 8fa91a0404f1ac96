package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is the part of an operator make new-operator made that
// newversion reads or changes, cut down to what it looks at. The
// integration journey (hack/template/integration) runs it on a real
// scaffold, then builds and tests the result.
var fixture = map[string]string{
	"go.mod":                   "module example.com/shop\n\ngo 1.26\n",
	"hack/codegen/generate.sh": "#!/bin/sh\n",
	"apis/webapps/v1alpha1/doc.go": `// Package v1alpha1 is version v1alpha1 of the webapps.example.com API.
//
// +groupName=webapps.example.com
package v1alpha1
`,
	"apis/webapps/v1alpha1/register.go": `package v1alpha1

var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}
`,
	"apis/webapps/v1alpha1/types.go": `package v1alpha1

// WebApp is a namespaced resource.
//
// +genclient
// +kubebuilder:resource:path=webapps,scope=Namespaced,categories=webapps
type WebApp struct {
	Spec WebAppSpec
}

// WebAppSpec is what a WebApp asks for.
type WebAppSpec struct {
	Greeting string
}
`,
	"operators/web-demo/internal/operator/operator.go": `package operator

import (
	webappsv1alpha1 "example.com/shop/apis/webapps/v1alpha1"
	"example.com/shop/apis/client/clientset/versioned"
)

const DefaultNamespace = "kooper-web-demo"

type Config struct {
	Name string
	// +kooper:scaffold:config (make new-version adds the conversion webhook's settings)
}

func Run(ctx context.Context, cfg Config) error {
	crs := client.WebappsV1alpha1().WebApps("")
	ready := runner.Ready
	// +kooper:scaffold:serve (make new-version serves the conversion webhook here)
	return nil
}
`,
	"operators/web-demo/cmd/web-demo/main.go": `package main

import (
	"example.com/shop/operators/internal/cli"
	"example.com/shop/operators/web-demo/internal/operator"
)

func run() error {
	var (
		kubeconfig = fs.String("kubeconfig", "", "")
		// +kooper:scaffold:flags (make new-version adds the conversion webhook's)
	)
	// +kooper:scaffold:setup (make new-version finds the dev loop's certificate here)
	return operator.Run(ctx, operator.Config{
		Name: "web-demo",
		// +kooper:scaffold:config (make new-version adds the conversion webhook's)
	})
}
`,
	"operators/web-demo/integration/e2e_test.go": `package integration_test

func TestEndToEnd(t *testing.T) {
	cfg := operator.Config{
		Name: "web-demo",
		// +kooper:scaffold:test-config (make new-version serves the conversion webhook)
	}
	_ = cfg
}
`,
	"operators/web-demo/README.md": "# web-demo\n\nThe operator.\n",
	"manifests/web-demo/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../crds/webapps
  - deployment.yaml # the operator
images:
  - name: kooper/web-demo
`,
	"manifests/web-demo/network_policy.yaml": "# nothing else (the operator serves no webhook).\nkind: NetworkPolicy\nspec:\n  ingress:\n    - from: []\n",
	"manifests/web-demo/deployment.yaml": `kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: operator
          args:
            - -http-addr=:8080
          ports:
            - name: http
              containerPort: 8080
`,
	"manifests/rbac/web-demo/kustomization.yaml": `kind: Kustomization
resources:
  - namespace.yaml
  - role.yaml # with its binding
`,
}

// writeFixture writes fixture, changed by change, into a new directory.
func writeFixture(t *testing.T, change func(map[string]string)) string {
	t.Helper()
	files := maps.Clone(fixture)
	if change != nil {
		change(files)
	}
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

// tree returns every file under root, and every directory as "<dir>/".
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[filepath.ToSlash(rel)+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stubGenerate replaces make generate for the test with one that returns
// errs in turn (nil once they are used up), and counts its calls.
func stubGenerate(t *testing.T, errs ...error) *int {
	t.Helper()
	calls := 0
	saved := generate
	generate = func(string, io.Writer, io.Writer) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}
	t.Cleanup(func() { generate = saved })
	return &calls
}

func TestAVersionIsAdded(t *testing.T) {
	calls := stubGenerate(t)
	root := writeFixture(t, nil)
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-root", root, "-name", "web-demo", "-version", "v1beta1"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if *calls != 1 {
		t.Errorf("make generate ran %d times, want once", *calls)
	}
	got := tree(t, root)
	contains := map[string][]string{
		"apis/webapps/v1beta1/types.go":    {"package v1beta1", "type WebApp struct"},
		"apis/webapps/v1beta1/register.go": {`Version: "v1beta1"`},
		"apis/webapps/v1alpha1/types.go":   {"// +kubebuilder:storageversion\ntype WebApp struct {"},
		"apis/webapps/v1alpha1/conversion.go": {
			"func (in *WebApp) ConvertTo(dst *webappsv1beta1.WebApp) {",
			"\t// dst.Spec = webappsv1beta1.WebAppSpec(*in.Spec.DeepCopy())",
			`webappsv1beta1 "example.com/shop/apis/webapps/v1beta1"`,
		},
		"apis/webapps/v1alpha1/conversion_test.go": {"func TestConversionRoundTrips(t *testing.T) {"},
		"apis/webapps/conversion.yaml":             {"name: webapps.webapps.example.com", "name: web-demo-webhook", "namespace: kooper-web-demo"},
		"operators/web-demo/internal/operator/conversion.go": {
			`CRDName = "webapps.webapps.example.com"`,
			"conversion.Between[webappsv1alpha1.WebApp, webappsv1beta1.WebApp]",
		},
		"operators/web-demo/internal/operator/operator.go": {
			"\tConversion ConversionWebhook\n\t// +kooper:scaffold:config",
			"\tdefer stopConversion()\n\t// +kooper:scaffold:serve",
		},
		"operators/web-demo/cmd/web-demo/main.go": {
			`fs.String("conversion-webhook-addr", ":9443",`,
			"devloop.CertDir(*kubeconfig, restConfig)",
			"Conversion: operator.ConversionWebhook{",
			"\t\"example.com/shop/operators/internal/cli\"\n\t\"example.com/shop/operators/internal/devloop\"\n",
		},
		"operators/web-demo/integration/e2e_test.go":          {"\t\tConversion: conversionWebhook(t),\n\t\t// +kooper:scaffold:test-config"},
		"operators/web-demo/integration/versions_test.go":     {"clients.WebappsV1beta1().WebApps(\"default\")", "func TestBothVersionsServeTheSameObjects("},
		"operators/web-demo/README.md":                        {"# web-demo\n\nThe operator.\n\n## Versions\n", "make migrate-storage CRD=webapps.webapps.example.com"},
		"manifests/web-demo/kustomization.yaml":               {"  - deployment.yaml # the operator\n  - conversion_webhook.yaml # "},
		"manifests/web-demo/conversion_webhook.yaml":          {"kind: Service", "targetPort: webhook"},
		"manifests/web-demo/network_policy.yaml":              {"(and the conversion webhook, from any source)", "  ingress:\n    # The conversion webhook", "    - ports:\n        - port: webhook\n"},
		"manifests/web-demo/deployment.yaml":                  {"          args:\n            - -conversion-webhook-addr=:9443\n", "          ports:\n            - name: webhook\n              containerPort: 9443\n"},
		"manifests/rbac/web-demo/kustomization.yaml":          {"  - role.yaml # with its binding\n  - conversion_secret_role.yaml # ", "\n  - conversion_crd_role.yaml # "},
		"manifests/rbac/web-demo/conversion_secret_role.yaml": {`resourceNames: ["web-demo-webhook-tls"]`},
		"manifests/rbac/web-demo/conversion_crd_role.yaml": {
			`resourceNames: ["webapps.webapps.example.com"]`,
			"'system:serviceaccount:kooper-web-demo:web-demo'",
		},
	}
	for file, wants := range contains {
		content, ok := got[file]
		if !ok {
			t.Errorf("%s was not written", file)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(content, want) {
				t.Errorf("%s does not hold %q:\n%s", file, want, content)
			}
		}
	}
	for file, content := range got {
		if strings.Contains(content, "«") {
			t.Errorf("%s holds a placeholder left unfilled:\n%s", file, content)
		}
	}
	if strings.Contains(got["apis/webapps/v1beta1/types.go"], "v1alpha1") {
		t.Errorf("the new version's types name the old version:\n%s", got["apis/webapps/v1beta1/types.go"])
	}
	if !strings.Contains(stdout.String(), "WebApp v1beta1 is served beside v1alpha1, which is still stored.") {
		t.Errorf("the next steps are not printed:\n%s", stdout.String())
	}

	// Once is enough: a second run refuses, and changes nothing.
	refused(t, root, []string{"-name", "web-demo", "-version", "v2"}, "apis/webapps holds the versions v1alpha1, v1beta1")
}

// refused runs the command in root with args and checks that it refuses
// them, saying want and that nothing was written, and changes nothing.
func refused(t *testing.T, root string, args []string, want string) {
	t.Helper()
	before := tree(t, root)
	var stderr bytes.Buffer
	if err := run(append([]string{"-root", root}, args...), io.Discard, &stderr); !errors.Is(err, errUsage) {
		t.Fatalf("got %v, want the command line refused", err)
	}
	if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "nothing was written") {
		t.Errorf("it says:\n%s\nwant %q and that nothing was written", stderr.String(), want)
	}
	if after := tree(t, root); !maps.Equal(before, after) {
		t.Error("a refused run changed the repository")
	}
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		change func(map[string]string)
		want   string
	}{
		{"no name", []string{"-version", "v1beta1"}, nil, `-name "": the name of an operator`},
		{"a version that is not one", []string{"-name", "web-demo", "-version", "beta"}, nil, `-version "beta": want v<major>`},
		{"an operator that is not there", []string{"-name", "shop", "-version", "v1beta1"}, nil, "operator shop: could not read operators/shop/internal/operator/operator.go"},
		{"the version it has", []string{"-name", "web-demo", "-version", "v1alpha1"}, nil, "v1alpha1 is the version apis/webapps has already"},
		{"a kind with two versions", []string{"-name", "web-demo", "-version", "v2"}, func(f map[string]string) {
			f["apis/webapps/v1beta1/types.go"] = "package v1beta1\n"
		}, "apis/webapps holds the versions v1alpha1, v1beta1: make new-version adds a second version to a kind that has one"},
		{"a marker gone", []string{"-name", "web-demo", "-version", "v1beta1"}, func(f map[string]string) {
			f["operators/web-demo/internal/operator/operator.go"] = strings.Replace(f["operators/web-demo/internal/operator/operator.go"], "// +kooper:scaffold:serve", "// served here", 1)
		}, `operators/web-demo/internal/operator/operator.go: the line "// +kooper:scaffold:serve", where make new-version adds its code, is gone`},
		{"a marker twice", []string{"-name", "web-demo", "-version", "v1beta1"}, func(f map[string]string) {
			f["operators/web-demo/cmd/web-demo/main.go"] = strings.Replace(f["operators/web-demo/cmd/web-demo/main.go"], "\treturn operator.Run", "\t// +kooper:scaffold:setup\n\treturn operator.Run", 1)
		}, `the line "// +kooper:scaffold:setup" is there 2 times, want once`},
		{"no test starts the operator", []string{"-name", "web-demo", "-version", "v1beta1"}, func(f map[string]string) {
			delete(f, "operators/web-demo/integration/e2e_test.go")
		}, "no test marks its operator's Config"},
		{"a kind stored in a version marked already", []string{"-name", "web-demo", "-version", "v1beta1"}, func(f map[string]string) {
			f["apis/webapps/v1alpha1/types.go"] = strings.Replace(f["apis/webapps/v1alpha1/types.go"], "// +genclient", "// +genclient\n// +kubebuilder:storageversion", 1)
		}, "marked +kubebuilder:storageversion already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := stubGenerate(t)
			refused(t, writeFixture(t, tt.change), tt.args, tt.want)
			if *calls != 0 {
				t.Errorf("make generate ran %d times, want never", *calls)
			}
		})
	}
}

// When make generate fails, every file is as it was, and make generate
// runs again to match.
func TestAFailedGenerateLeavesTheRepositoryAsItWas(t *testing.T) {
	calls := stubGenerate(t, errors.New("controller-gen: a marker it cannot read"))
	root := writeFixture(t, nil)
	before := tree(t, root)
	err := run([]string{"-root", root, "-name", "web-demo", "-version", "v1beta1"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "every file was put back as it was") {
		t.Fatalf("got %v, want make generate's failure, saying every file was put back", err)
	}
	if after := tree(t, root); !maps.Equal(before, after) {
		for name := range after {
			if _, ok := before[name]; !ok {
				t.Errorf("%s is left", name)
			} else if before[name] != after[name] {
				t.Errorf("%s is changed", name)
			}
		}
		for name := range before {
			if _, ok := after[name]; !ok {
				t.Errorf("%s is gone", name)
			}
		}
	}
	if *calls != 2 {
		t.Errorf("make generate ran %d times, want twice (the failure, then to restore)", *calls)
	}
}
