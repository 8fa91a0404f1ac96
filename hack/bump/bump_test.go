package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = "../.."

// Every Kubernetes pin of the repository agrees with the control plane's
// k8s.io/kubernetes: a half-done bump cannot land. It asks the Go module
// proxy for the release's own go.mod and the generators' go.mod files.
func TestEveryPinAgrees(t *testing.T) {
	problems, err := check(context.Background(), repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Log("`make bump-kubernetes VERSION=...` moves every pin at once")
	}
}

// Each pin left behind by a hand edit is reported, naming its file.
func TestAPinLeftBehindIsReported(t *testing.T) {
	p, err := readPins(context.Background(), repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	older := p.Skew.Staging() // a staging version that is served, but not the current one
	tests := []struct {
		name  string
		edit  func(t *testing.T, root string)
		wants string
	}{{
		name: "a library go.mod still requires the previous client-go",
		edit: func(t *testing.T, root string) {
			goModEdit(t, filepath.Join(root, "grafana"), "-require=k8s.io/client-go@"+older)
		},
		wants: "grafana/go.mod: k8s.io/client-go is " + older,
	}, {
		name: "the root go.mod still requires the previous apimachinery",
		edit: func(t *testing.T, root string) {
			goModEdit(t, root, "-require=k8s.io/apimachinery@"+older)
		},
		wants: "go.mod: k8s.io/apimachinery is " + older,
	}, {
		name: "one staging replace of the control plane was not moved",
		edit: func(t *testing.T, root string) {
			goModEdit(t, filepath.Join(root, "hack/controlplane"), "-replace=k8s.io/client-go=k8s.io/client-go@"+older)
		},
		wants: "hack/controlplane/go.mod: k8s.io/client-go is replaced with " + older,
	}, {
		name: "a staging replace is missing",
		edit: func(t *testing.T, root string) {
			goModEdit(t, filepath.Join(root, "hack/controlplane"), "-dropreplace=k8s.io/kms")
		},
		wants: "hack/controlplane/go.mod replaces 32 modules",
	}, {
		name: "the control plane's etcd is not the one the release pins",
		edit: func(t *testing.T, root string) {
			goModEdit(t, filepath.Join(root, "hack/controlplane"), "-require=go.etcd.io/etcd/server/v3@v3.6.8")
		},
		wants: "go.etcd.io/etcd/server/v3 is v3.6.8",
	}, {
		name: "code-generator was not moved",
		edit: func(t *testing.T, root string) {
			replaceIn(t, filepath.Join(root, generateScript), "CODEGEN_VERSION="+p.Kubernetes.Staging(), "CODEGEN_VERSION="+older)
		},
		wants: "CODEGEN_VERSION is \"" + older + "\"",
	}, {
		name: "controller-tools is from the previous line",
		edit: func(t *testing.T, root string) {
			replaceIn(t, filepath.Join(root, generateScript), "CONTROLLER_TOOLS_VERSION="+p.ControllerTools, "CONTROLLER_TOOLS_VERSION=v0.21.0")
		},
		wants: "sigs.k8s.io/controller-tools v0.21.0 is built on k8s.io/apimachinery v0.36",
	}, {
		name: "the skew module is not the previous minor",
		edit: func(t *testing.T, root string) {
			goModEdit(t, filepath.Join(root, "hack/controlplane/skew"), "-require=k8s.io/kubernetes@"+p.Kubernetes.Kubernetes())
		},
		wants: "is not the minor before",
	}, {
		name: "grafana's PromQL parser is not the Prometheus that make builds",
		edit: func(t *testing.T, root string) {
			replaceIn(t, filepath.Join(root, "Makefile"), "PROMETHEUS_VERSION := "+p.Prometheus, "PROMETHEUS_VERSION := v0.315.1")
		},
		wants: "grafana/go.mod: github.com/prometheus/prometheus is " + p.Prometheus + ", want v0.315.1",
	}, {
		name: "the Makefile pins no Prometheus",
		edit: func(t *testing.T, root string) {
			replaceIn(t, filepath.Join(root, "Makefile"), "PROMETHEUS_VERSION := ", "PROM_VERSION := ")
		},
		wants: "Makefile: no PROMETHEUS_VERSION line",
	}, {
		name: "a doc names another patch release of the current minor",
		edit: func(t *testing.T, root string) {
			other := kversion{Minor: p.Kubernetes.Minor, Patch: p.Kubernetes.Patch + 1}
			if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("builds Kubernetes "+other.Kubernetes()+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		wants: "README.md:1: names 1." + fmt.Sprint(p.Kubernetes.Minor),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := copyPins(t)
			problems, err := check(context.Background(), root)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != 0 {
				t.Fatalf("the unedited copy has problems: %q", problems)
			}
			tt.edit(t, root)
			if problems, err = check(context.Background(), root); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range problems {
				found = found || strings.Contains(p, tt.wants)
			}
			if !found {
				t.Errorf("got problems %q, want one containing %q", problems, tt.wants)
			}
		})
	}
}

// A release the proxy does not serve fails with a clear message and
// changes nothing.
func TestAReleaseTheProxyDoesNotServeIsRefused(t *testing.T) {
	root := copyPins(t)
	before := snapshot(t, root)
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-root", root, "-version", "1.99.0"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "the Go module proxy does not serve k8s.io/kubernetes v1.99.0") {
		t.Fatalf("got error %v, want one saying the proxy does not serve k8s.io/kubernetes v1.99.0", err)
	}
	if after := snapshot(t, root); after != before {
		t.Error("the refused bump changed files")
	}
}

func TestVersionsAreReplacedAsWholeNumbersInOnePass(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	in := "Kubernetes v1.36.1 (skew v1.35.4), protobuf v1.36.12, client-go 0.36.1, etcd 3.6.8\n"
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := replaceVersions(path, map[string]string{
		"1.36.1": "1.37.2", "0.36.1": "0.37.2", "1.35.4": "1.36.1", "3.6.8": "3.7.0",
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "Kubernetes v1.37.2 (skew v1.36.1), protobuf v1.36.12, client-go 0.37.2, etcd 3.7.0\n"
	if !changed || string(got) != want {
		t.Errorf("got %q (changed %v), want %q", got, changed, want)
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    kversion
		wantErr bool
	}{
		{in: "1.38.0", want: kversion{38, 0}},
		{in: "v1.37.2", want: kversion{37, 2}},
		{in: "v0.37.2", want: kversion{37, 2}},
		{in: "1.38", wantErr: true},
		{in: "2.0.0", wantErr: true},
		{in: "1.x.0", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseVersion(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// copyPins copies every file check reads into a temporary directory.
func copyPins(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mods, err := libraryModules(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{controlPlaneMod, skewMod, generateScript, "Makefile"}
	for _, m := range mods {
		files = append(files, filepath.Join(m, "go.mod"), filepath.Join(m, "go.sum"))
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func goModEdit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"mod", "edit"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod edit %v: %v: %s", args, err, out)
	}
}

func replaceIn(t *testing.T, path, old, repl string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	if err := os.WriteFile(path, bytes.ReplaceAll(data, []byte(old), []byte(repl)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot is the content of every file under root, for comparison.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		b.WriteString(path + "\n" + string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
