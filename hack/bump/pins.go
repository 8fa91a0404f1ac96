package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Files that hold pins, relative to the repository root.
const (
	// controlPlaneMod builds the local control plane: k8s.io/kubernetes, etcd
	// and a replace per staging module.
	controlPlaneMod = "hack/controlplane/go.mod"
	// skewMod builds the previous minor's kube-apiserver, for the
	// version-skew run of the library's integration tests.
	skewMod = "hack/controlplane/skew/go.mod"
	// generateScript pins k8s.io/code-generator and controller-tools.
	generateScript = "hack/codegen/generate.sh"
	// benchMod pins controller-runtime, the peer the benchmarks measure.
	benchMod = "bench/go.mod"
	// makefile pins the tools make builds, promtool and prometheus among
	// them.
	makefile = "Makefile"
	// prometheusModule is built into promtool and prometheus, and its PromQL
	// parser checks the dashboards.
	prometheusModule = "github.com/prometheus/prometheus"
)

// pins is every version the repository pins that follows Kubernetes.
type pins struct {
	Kubernetes kversion // k8s.io/kubernetes of the control plane
	Staging    []string // the modules it replaces
	Etcd       string
	Skew       kversion // the previous minor's kube-apiserver

	CodeGenerator     string
	ControllerTools   string
	ControllerRuntime string

	// Prometheus does not follow Kubernetes: it is here so that one check
	// keeps one version of it everywhere (the Makefile's promtool and
	// prometheus, the modules' PromQL parser). hack/bump does not move it.
	Prometheus string
}

var (
	codegenLine = regexp.MustCompile(`(?m)^CODEGEN_VERSION=(\S+)`)
	toolsLine   = regexp.MustCompile(`(?m)^CONTROLLER_TOOLS_VERSION=(\S+)`)
	promLine    = regexp.MustCompile(`(?m)^PROMETHEUS_VERSION := (\S+)`)
)

// readPins reads the pins from the repository at root.
func readPins(ctx context.Context, root string) (*pins, error) {
	var p pins
	cp, err := readModFile(ctx, filepath.Join(root, controlPlaneMod))
	if err != nil {
		return nil, err
	}
	if p.Kubernetes, err = parseVersion(cp.require("k8s.io/kubernetes")); err != nil {
		return nil, fmt.Errorf("%s: k8s.io/kubernetes: %w", controlPlaneMod, err)
	}
	p.Etcd = cp.require("go.etcd.io/etcd/server/v3")
	for _, r := range cp.Replace {
		p.Staging = append(p.Staging, r.Old.Path)
	}
	slices.Sort(p.Staging)
	skew, err := readModFile(ctx, filepath.Join(root, skewMod))
	if err != nil {
		return nil, err
	}
	if p.Skew, err = parseVersion(skew.require("k8s.io/kubernetes")); err != nil {
		return nil, fmt.Errorf("%s: k8s.io/kubernetes: %w", skewMod, err)
	}
	script, err := os.ReadFile(filepath.Join(root, generateScript))
	if err != nil {
		return nil, err
	}
	if m := codegenLine.FindSubmatch(script); m != nil {
		p.CodeGenerator = string(m[1])
	}
	if m := toolsLine.FindSubmatch(script); m != nil {
		p.ControllerTools = string(m[1])
	}
	bench, err := readModFile(ctx, filepath.Join(root, benchMod))
	if err != nil {
		return nil, err
	}
	p.ControllerRuntime = bench.require("sigs.k8s.io/controller-runtime")
	mk, err := os.ReadFile(filepath.Join(root, makefile))
	if err != nil {
		return nil, err
	}
	if m := promLine.FindSubmatch(mk); m != nil {
		p.Prometheus = string(m[1])
	}
	return &p, nil
}

// libraryModules lists the directories (relative to root) of every go.mod
// in the repository but the control plane's: the modules that use the
// Kubernetes libraries.
func libraryModules(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "testdata" || rel == "hack/controlplane") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			dirs = append(dirs, filepath.Dir(rel))
		}
		return nil
	})
	return dirs, err
}

// docFiles lists the files (relative to root) whose prose quotes the pins:
// every Markdown file and the Makefile, except the CHANGELOG and the
// benchmark results, which record the versions they were written or measured
// with.
func docFiles(root string) ([]string, error) {
	files := []string{"Makefile"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasSuffix(rel, ".md") && rel != "CHANGELOG.md" && rel != "bench/README.md" {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// check reports every pin of the repository at root that disagrees with the
// control plane's k8s.io/kubernetes, one sentence each. Where it needs a
// release's own go.mod it asks the Go module proxy.
func check(ctx context.Context, root string) ([]string, error) {
	p, err := readPins(ctx, root)
	if err != nil {
		return nil, err
	}
	k, staging := p.Kubernetes.Kubernetes(), p.Kubernetes.Staging()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	// The control plane: every staging replace, and the etcd, of the release.
	rel, err := fetchRelease(ctx, p.Kubernetes)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(p.Staging, rel.Staging) {
		bad("%s replaces %d modules, k8s.io/kubernetes %s has %d staging modules: want exactly %s",
			controlPlaneMod, len(p.Staging), k, len(rel.Staging), strings.Join(rel.Staging, ", "))
	}
	if p.Etcd != rel.Etcd {
		bad("%s: go.etcd.io/etcd/server/v3 is %s, k8s.io/kubernetes %s pins %s", controlPlaneMod, p.Etcd, k, rel.Etcd)
	}
	problems = append(problems, checkControlPlaneMod(ctx, root, controlPlaneMod, p.Kubernetes)...)
	problems = append(problems, checkControlPlaneMod(ctx, root, skewMod, p.Skew)...)
	if p.Skew.Minor != p.Kubernetes.Minor-1 {
		bad("%s: k8s.io/kubernetes %s is not the minor before %s", skewMod, p.Skew.Kubernetes(), k)
	}

	// Every other module requires the staging modules at one version.
	mods, err := libraryModules(root)
	if err != nil {
		return nil, err
	}
	for _, dir := range mods {
		f, err := readModFile(ctx, filepath.Join(root, dir, "go.mod"))
		if err != nil {
			return nil, err
		}
		for _, r := range f.Require {
			if slices.Contains(p.Staging, r.Path) && r.Version != staging {
				bad("%s: %s is %s, want %s (k8s.io/kubernetes %s)", filepath.Join(dir, "go.mod"), r.Path, r.Version, staging, k)
			}
			if r.Path == "k8s.io/kubernetes" {
				bad("%s requires k8s.io/kubernetes: only %s may", filepath.Join(dir, "go.mod"), controlPlaneMod)
			}
			if r.Path == prometheusModule && r.Version != p.Prometheus {
				bad("%s: %s is %s, want %s, the %s's PROMETHEUS_VERSION (promtool and prometheus): one Prometheus everywhere",
					filepath.Join(dir, "go.mod"), r.Path, r.Version, p.Prometheus, makefile)
			}
		}
	}

	if p.Prometheus == "" {
		bad("%s: no PROMETHEUS_VERSION line (the promtool and prometheus that make builds)", makefile)
	}

	// The generators and the benchmarks' controller-runtime.
	if p.CodeGenerator != staging {
		bad("%s: CODEGEN_VERSION is %q, want %s", generateScript, p.CodeGenerator, staging)
	}
	for _, dep := range []struct{ file, path, version, on string }{
		{generateScript, "sigs.k8s.io/controller-tools", p.ControllerTools, "k8s.io/apimachinery"},
		{benchMod, "sigs.k8s.io/controller-runtime", p.ControllerRuntime, "k8s.io/client-go"},
	} {
		if msg, err := builtOn(ctx, dep.path, dep.version, dep.on, p.Kubernetes.Minor); err != nil {
			return nil, err
		} else if msg != "" {
			bad("%s: %s", dep.file, msg)
		}
	}

	// The docs quote no other release of the two minors in use.
	docs, err := docFiles(root)
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		problems = append(problems, checkDoc(root, doc, p)...)
	}
	return problems, nil
}

// checkControlPlaneMod checks that the go.mod at rel builds k8s.io/kubernetes
// at v with every staging module replaced and required at v's staging
// version.
func checkControlPlaneMod(ctx context.Context, root, rel string, v kversion) []string {
	f, err := readModFile(ctx, filepath.Join(root, rel))
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, r := range f.Replace {
		if r.New.Version != v.Staging() {
			problems = append(problems, fmt.Sprintf("%s: %s is replaced with %s, want %s (k8s.io/kubernetes %s)",
				rel, r.Old.Path, r.New.Version, v.Staging(), v.Kubernetes()))
		}
	}
	for _, r := range f.Require {
		if f.replacement(r.Path) != "" && r.Version != v.Staging() {
			problems = append(problems, fmt.Sprintf("%s: %s is required at %s, want %s", rel, r.Path, r.Version, v.Staging()))
		}
	}
	return problems
}

// builtOn says what is wrong when module path at version does not require
// module on at v0.<minor>.*, and "" when it does.
func builtOn(ctx context.Context, path, version, on string, minor int) (string, error) {
	if version == "" {
		return fmt.Sprintf("no version of %s found", path), nil
	}
	d, err := downloadAll(ctx, path+"@"+version)
	if err != nil {
		return "", err
	}
	if d[0].Error != "" {
		return fmt.Sprintf("%s %s: %s", path, version, reason(d[0].Error)), nil
	}
	f, err := readModFile(ctx, d[0].GoMod)
	if err != nil {
		return "", err
	}
	if got := f.require(on); !strings.HasPrefix(got, fmt.Sprintf("v0.%d.", minor)) {
		return fmt.Sprintf("%s %s is built on %s %s, want the 0.%d line", path, version, on, got, minor), nil
	}
	return "", nil
}

// versionNumber matches a whole dotted number: 1.36.1 in v1.36.1, all of
// 1.36.12.
var versionNumber = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)+`)

// checkDoc reports the releases of the control plane's and the skew's
// minors (1.MINOR.PATCH, or 0.MINOR.PATCH for staging modules) that the doc
// names other than the pinned ones: what a bump left behind.
func checkDoc(root, doc string, p *pins) []string {
	data, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for i, line := range strings.Split(string(data), "\n") {
		for _, m := range versionNumber.FindAllString(line, -1) {
			v, err := parseVersion(m)
			if err != nil || (v.Minor != p.Kubernetes.Minor && v.Minor != p.Skew.Minor) {
				continue
			}
			if v != p.Kubernetes && v != p.Skew {
				problems = append(problems, fmt.Sprintf("%s:%d: names %s; the pinned releases are %s and (skew) %s",
					doc, i+1, m, p.Kubernetes.Kubernetes(), p.Skew.Kubernetes()))
			}
		}
	}
	return problems
}
