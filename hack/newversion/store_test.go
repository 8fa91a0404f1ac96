package main

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// handlerGo uses the old version every way an operator's code does: the
// API package under a name and without one, an apply configuration, the
// clientset's and the informers' version methods.
const handlerGo = `package handler

import (
	webappsac "example.com/shop/apis/client/applyconfiguration/webapps/v1alpha1"
	"example.com/shop/apis/client/informers/externalversions"
	"example.com/shop/apis/webapps/v1alpha1"
	webappsv1alpha1 "example.com/shop/apis/webapps/v1alpha1"
)

// Handle handles a v1alpha1 WebApp (a comment keeps its words).
func Handle(wa *webappsv1alpha1.WebApp, f externalversions.SharedInformerFactory) *v1alpha1.WebApp {
	_ = webappsac.WebApp(wa.Name, wa.Namespace)
	_ = f.Webapps().V1alpha1().WebApps()
	_ = client.WebappsV1alpha1().WebApps(wa.Namespace)
	return wa
}
`

// stubBuild replaces the operator's build for the test with one that
// returns err, and counts its calls.
func stubBuild(t *testing.T, err error) *int {
	t.Helper()
	calls := 0
	saved := build
	build = func(string, string, io.Writer, io.Writer) error {
		calls++
		return err
	}
	t.Cleanup(func() { build = saved })
	return &calls
}

// withVersion writes the fixture, with a handler, and runs make
// new-version on it.
func withVersion(t *testing.T) string {
	t.Helper()
	stubGenerate(t)
	root := writeFixture(t, func(f map[string]string) {
		f["operators/web-demo/internal/handler/handler.go"] = handlerGo
		f["operators/web-demo/example.yaml"] = "apiVersion: webapps.example.com/v1alpha1\nkind: WebApp\n"
		f["operators/web-demo/README.md"] = "# web-demo\n\nScaffolded by `make new-operator`: a namespaced\n" +
			"`WebApp` (`webapps.example.com/v1alpha1`, [`apis/webapps/v1alpha1`](../../apis/webapps/v1alpha1/types.go)) that owns a Deployment.\n"
	})
	var stderr bytes.Buffer
	if err := run([]string{"-root", root, "-name", "web-demo", "-version", "v1beta1"}, io.Discard, &stderr); err != nil {
		t.Fatalf("make new-version: %v\n%s", err, stderr.String())
	}
	return root
}

func TestTheNewVersionIsStoredAndRead(t *testing.T) {
	root := withVersion(t)
	before := tree(t, root)
	generated, built := stubGenerate(t), stubBuild(t, nil)
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-root", root, "-store", "-name", "web-demo", "-version", "v1beta1"}, &stdout, &stderr); err != nil {
		t.Fatalf("make store-version: %v\n%s", err, stderr.String())
	}
	if *generated != 1 || *built != 1 {
		t.Errorf("make generate ran %d times and the build %d, want once each", *generated, *built)
	}
	got := tree(t, root)
	tests := []struct {
		file      string
		has, lost []string
	}{
		{"apis/webapps/v1alpha1/types.go", nil, []string{storageMarker}},
		{"operators/web-demo/example.yaml", []string{"apiVersion: webapps.example.com/v1beta1\n"}, []string{"v1alpha1"}},
		{"operators/web-demo/README.md", []string{"`WebApp` (`webapps.example.com/v1beta1`, stored, and `v1alpha1`, still served; [`apis/webapps/v1beta1`](../../apis/webapps/v1beta1/types.go)) that owns a Deployment.\n"}, []string{"(`webapps.example.com/v1alpha1`,"}},
		{"apis/webapps/v1beta1/types.go", []string{storageMarker + "\ntype WebApp struct {"}, nil},
		{"operators/web-demo/internal/operator/operator.go", []string{
			`webappsv1beta1 "example.com/shop/apis/webapps/v1beta1"`,
			`client.WebappsV1beta1().WebApps("")`,
		}, []string{"v1alpha1", "V1alpha1"}},
		{"operators/web-demo/internal/handler/handler.go", []string{
			`webappsac "example.com/shop/apis/client/applyconfiguration/webapps/v1beta1"`,
			"\t\"example.com/shop/apis/webapps/v1beta1\"\n",
			`webappsv1beta1 "example.com/shop/apis/webapps/v1beta1"`,
			"func Handle(wa *webappsv1beta1.WebApp, f externalversions.SharedInformerFactory) *v1beta1.WebApp {",
			"webappsac.WebApp(wa.Name, wa.Namespace)",
			"f.Webapps().V1beta1().WebApps()",
			"client.WebappsV1beta1().WebApps(wa.Namespace)",
			"// Handle handles a v1alpha1 WebApp (a comment keeps its words).",
		}, nil},
	}
	for _, tt := range tests {
		for _, want := range tt.has {
			if !strings.Contains(got[tt.file], want) {
				t.Errorf("%s does not hold %q:\n%s", tt.file, want, got[tt.file])
			}
		}
		for _, gone := range tt.lost {
			if strings.Contains(got[tt.file], gone) {
				t.Errorf("%s still holds %q:\n%s", tt.file, gone, got[tt.file])
			}
		}
	}
	// What uses both versions stays as it was.
	for _, file := range []string{"operators/web-demo/internal/operator/conversion.go", "operators/web-demo/integration/versions_test.go", "apis/webapps/v1alpha1/conversion.go"} {
		if got[file] != before[file] {
			t.Errorf("%s, which uses both versions, changed", file)
		}
	}
	for _, want := range []string{"WebApp v1beta1 is the version stored now, and the operator reads it", "make migrate-storage CRD=webapps.webapps.example.com"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the next steps do not say %q:\n%s", want, stdout.String())
		}
	}

	// Once is enough: a second run refuses, and changes nothing.
	refused(t, root, []string{"-store", "-name", "web-demo", "-version", "v1beta1"}, "the operator reads v1beta1 already")
}

func TestStoreRefusals(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		change func(root string)
		want   string
	}{
		{"a version the kind does not have", []string{"-version", "v2"}, nil,
			"apis/webapps holds the versions v1alpha1, v1beta1, and the operator reads v1alpha1: make store-version stores the version that make new-version added"},
		{"no conversion", []string{"-version", "v1beta1"}, func(root string) {
			remove(t, root, "apis/webapps/conversion.yaml")
		}, "apis/webapps/conversion.yaml is missing: nothing would convert what is stored in v1alpha1"},
		{"the old version not marked stored", []string{"-version", "v1beta1"}, func(root string) {
			edit(t, root, "apis/webapps/v1alpha1/types.go", storageMarker+"\n", "")
		}, "apis/webapps/v1alpha1/types.go is not marked +kubebuilder:storageversion"},
		{"both marked stored", []string{"-version", "v1beta1"}, func(root string) {
			edit(t, root, "apis/webapps/v1beta1/types.go", "type WebApp struct {", storageMarker+"\ntype WebApp struct {")
		}, "apis/webapps/v1beta1/types.go is marked +kubebuilder:storageversion already"},
		{"the operator reading both versions", []string{"-version", "v1beta1"}, func(root string) {
			edit(t, root, "operators/web-demo/internal/handler/handler.go", "v1alpha1", "v1beta1")
			edit(t, root, "operators/web-demo/internal/operator/operator.go", `webappsv1alpha1 "example.com/shop/apis/webapps/v1alpha1"`, `webappsv1alpha1 "example.com/shop/apis/webapps/v1alpha1"
	webappsv1beta1 "example.com/shop/apis/webapps/v1beta1"`)
		}, "operators/web-demo/internal/operator/operator.go imports 2 API packages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := withVersion(t)
			if tt.change != nil {
				tt.change(root)
			}
			generated, built := stubGenerate(t), stubBuild(t, nil)
			refused(t, root, append([]string{"-store", "-name", "web-demo"}, tt.args...), tt.want)
			if *generated != 0 || *built != 0 {
				t.Errorf("make generate ran %d times and the build %d, want never", *generated, *built)
			}
		})
	}
}

// An operator that does not build on the new version (its fields differ)
// is reported, and the switch is left for the user to finish; a make
// generate that fails puts every file back.
func TestStoreFailures(t *testing.T) {
	t.Run("the build", func(t *testing.T) {
		root := withVersion(t)
		stubGenerate(t)
		stubBuild(t, errors.New("exit status 1"))
		err := run([]string{"-root", root, "-store", "-name", "web-demo", "-version", "v1beta1"}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "the operator does not build on v1beta1 yet") {
			t.Fatalf("got %v, want the failed build named", err)
		}
		if got := tree(t, root)["apis/webapps/v1beta1/types.go"]; !strings.Contains(got, storageMarker) {
			t.Error("the switch was not left written")
		}
	})
	t.Run("make generate", func(t *testing.T) {
		root := withVersion(t)
		before := tree(t, root)
		generated := stubGenerate(t, errors.New("controller-gen failed"))
		stubBuild(t, nil)
		err := run([]string{"-root", root, "-store", "-name", "web-demo", "-version", "v1beta1"}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "every file was put back as it was") {
			t.Fatalf("got %v, want make generate's failure, saying every file was put back", err)
		}
		if after := tree(t, root); !maps.Equal(before, after) {
			t.Error("the repository is not as it was")
		}
		if *generated != 2 {
			t.Errorf("make generate ran %d times, want twice (the failure, then to restore)", *generated)
		}
	})
}

// edit replaces old, which must be there, with new in root's file.
func edit(t *testing.T, root, file, old, new string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(file))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not hold %q", file, old)
	}
	if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte(old), []byte(new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, root, file string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(file))); err != nil {
		t.Fatal(err)
	}
}
