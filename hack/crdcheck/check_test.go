package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoCRDs is the repository's generated CRDs, seen from this package's
// directory.
const repoCRDs = "../../manifests/crds"

// widgetCRD is a valid CRD whose spec property takes the schema given to
// it, indented by twelve spaces.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
`

// widget returns widgetCRD with specSchema (written from column 0) as the
// schema of its spec.
func widget(specSchema string) string {
	lines := strings.Split(strings.TrimSpace(specSchema), "\n")
	for i, l := range lines {
		lines[i] = strings.Repeat(" ", 12) + l
	}
	return widgetCRD + strings.Join(lines, "\n") + "\n"
}

func TestCheckDir(t *testing.T) {
	tests := []struct {
		name string
		// files are written to an empty directory, by relative path; when
		// nil, the repository's manifests/crds is checked.
		files    map[string]string
		wantCRDs int // 0: at least one
		// want holds one pattern of each problem the check must report, in
		// order: the parts of a pattern between … appear in the problem in
		// their order. None means the CRDs pass.
		want []string
	}{
		{
			name: "The repository's generated CRDs pass",
		},
		{
			name: "A valid CRD passes and a kustomization is skipped",
			files: map[string]string{
				"widgets.yaml":       widget("type: object\nproperties:\n  size:\n    type: integer"),
				"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- widgets.yaml\n",
				"README.md":          "# not YAML\n",
			},
			wantCRDs: 1,
		},
		{
			name: "A patch of the kustomization is applied, and is no CRD of its own",
			files: map[string]string{
				"widgets.yaml":       widget("type: object\nproperties:\n  size:\n    type: integer"),
				"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- widgets.yaml\npatches:\n- path: conversion.yaml\n",
				"conversion.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig:
        url: https://127.0.0.1:9443/convert
`,
			},
			wantCRDs: 1,
		},
		{
			name: "A patch that breaks the CRD is caught",
			files: map[string]string{
				"widgets.yaml":       widget("type: object\nproperties:\n  size:\n    type: integer"),
				"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- widgets.yaml\npatches:\n- path: conversion.yaml\n",
				"conversion.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  conversion:
    strategy: Webhook
`,
			},
			wantCRDs: 1,
			want: []string{
				"widgets.yaml: widgets.example.com: spec.conversion.webhookClientConfig: Required value",
				"widgets.yaml: widgets.example.com: spec.conversion.conversionReviewVersions: Required value",
			},
		},
		{
			name: "A rule over an unbounded list of unbounded strings exceeds the cost budget",
			files: map[string]string{"widgets.yaml": widget(`
type: object
properties:
  names:
    type: array
    items:
      type: string
    x-kubernetes-validations:
    - rule: "self.all(x, x.matches('^[a-z]+$'))"`)},
			wantCRDs: 1,
			want: []string{
				"widgets.yaml: widgets.example.com: spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
				"widgets.yaml: widgets.example.com: spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"widgets.yaml: widgets.example.com: spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x",
			},
		},
		{
			name: "The same rule passes once the list and its strings are bounded",
			files: map[string]string{"widgets.yaml": widget(`
type: object
properties:
  names:
    type: array
    maxItems: 16
    items:
      type: string
      maxLength: 63
    x-kubernetes-validations:
    - rule: "self.all(x, x.matches('^[a-z]+$'))"`)},
			wantCRDs: 1,
		},
		{
			name: "A rule that does not compile is refused",
			files: map[string]string{"widgets.yaml": widget(`
type: object
properties:
  size:
    type: integer
x-kubernetes-validations:
- rule: "self.size > 'big'"`)},
			wantCRDs: 1,
			// The invalid value is the rule as JSON, as the API server says it.
			want: []string{"widgets.yaml: widgets.example.com: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":…: compilation failed: ERROR: <input>:1:11: found no matching overload for '_>_' applied to '(int, string)'"},
		},
		{
			name: "A schema that is not structural is refused",
			files: map[string]string{"widgets.yaml": widget(`
type: object
properties:
  size: {}`)},
			wantCRDs: 1,
			want:     []string{"widgets.yaml: widgets.example.com: spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields"},
		},
		{
			name: "A misspelt field is refused, as kubectl's strict field validation does",
			files: map[string]string{"widgets.yaml": widget(`
type: object
x-kubernetes-validation:
- rule: "true"`)},
			wantCRDs: 1,
			want:     []string{`widgets.yaml: widgets.example.com: strict decoding error: unknown field "spec.versions[0].schema.openAPIV3Schema.properties.spec.x-kubernetes-validation"`},
		},
		{
			name: "A CRD of apiextensions.k8s.io/v1beta1 is refused",
			files: map[string]string{"widgets.yaml": strings.Replace(widget("type: object"),
				"apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1)},
			wantCRDs: 1,
			want:     []string{`widgets.yaml: widgets.example.com: apiVersion "apiextensions.k8s.io/v1beta1" is not served, want "apiextensions.k8s.io/v1"`},
		},
		{
			name: "Every CRD of a file with several documents is checked, in subdirectories too",
			files: map[string]string{"group/widgets.yaml": "---\n" + widget("type: object") + "---\n" +
				strings.ReplaceAll(widget("type: object\nproperties:\n  size: {}"), "widget", "gadget")},
			wantCRDs: 2,
			want:     []string{filepath.Join("group", "widgets.yaml") + ": gadgets.example.com: spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Required value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := repoCRDs
			if tt.files != nil {
				dir = t.TempDir()
				writeFiles(t, dir, tt.files)
			}
			res, err := checkDir(t.Context(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantCRDs == 0 && res.CRDs == 0 || tt.wantCRDs != 0 && res.CRDs != tt.wantCRDs {
				t.Errorf("got %d CRDs checked, want %d (0: at least one)", res.CRDs, tt.wantCRDs)
			}
			for i, p := range res.Problems {
				t.Logf("problem %d: %s", i, p)
				if i >= len(tt.want) {
					t.Errorf("got problem %d %q, want none", i, p)
				} else if !matches(p.String(), tt.want[i]) {
					t.Errorf("got problem %d %q, want it to match %q", i, p, tt.want[i])
				}
			}
			if len(res.Problems) < len(tt.want) {
				t.Errorf("got %d problems, want %d", len(res.Problems), len(tt.want))
			}
		})
	}
}

func TestRun(t *testing.T) {
	refused := t.TempDir()
	writeFiles(t, refused, map[string]string{"widgets.yaml": widget("type: object\nproperties:\n  size: {}")})
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		wantIs  error // if not nil, the error wraps it
		want    string
	}{
		{
			name: "Without arguments it checks the repository's CRDs",
			want: "CRDs in manifests/crds pass the API server's validation\n",
		},
		{
			name:    "It prints each problem with the directory it was given and fails",
			args:    []string{refused},
			wantErr: true,
			wantIs:  errRefused,
			want:    filepath.Join(refused, "widgets.yaml") + ": widgets.example.com: spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Required value",
		},
		{
			name:    "A directory without CRDs fails",
			args:    []string{t.TempDir()},
			wantErr: true,
		},
		{
			name: "-h prints the usage and is no error",
			args: []string{"-h"},
			want: "usage: crdcheck [DIR]",
		},
		{
			name:    "Two directories are refused",
			args:    []string{repoCRDs, repoCRDs},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), tt.args, &out)
			if (err != nil) != tt.wantErr || tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("got error %v, want one: %t (wrapping %v)", err, tt.wantErr, tt.wantIs)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("got output %q, want it to contain %q", out.String(), tt.want)
			}
		})
	}
}

func TestFindRoot(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"go.mod":                "// The library.\nmodule " + module + "\n\ngo 1.26.0\n",
		"hack/crdcheck/go.mod":  "module " + module + "/hack/crdcheck\n",
		"hack/crdcheck/x/y.txt": "",
	})
	tests := []struct {
		name    string
		dir     string
		want    string
		wantErr bool
	}{
		{name: "The root is its own root", dir: root, want: root},
		{name: "Another module's go.mod below the root is passed over", dir: filepath.Join(root, "hack", "crdcheck", "x"), want: root},
		{name: "Outside the repository there is none", dir: filepath.Dir(root), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findRoot(tt.dir)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %q, %v, want %q (error: %t)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// matches reports whether the parts of pattern between … appear in s, in
// their order.
func matches(s, pattern string) bool {
	for part := range strings.SplitSeq(pattern, "…") {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}

// writeFiles writes files (content by slash-separated path) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
