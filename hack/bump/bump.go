package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// plan is every pin a bump writes, resolved from the Go module proxy before
// anything is written.
type plan struct {
	Current           *release
	Skew              *release
	ControllerTools   string
	ControllerRuntime string
}

// resolve works out the pins for Kubernetes v, failing with what the proxy
// lacks.
func resolve(ctx context.Context, v kversion, w io.Writer) (*plan, error) {
	var pl plan
	var err error
	fmt.Fprintf(w, "bump: reading k8s.io/kubernetes %s from the Go module proxy\n", v.Kubernetes())
	if pl.Current, err = fetchRelease(ctx, v); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "bump: checking the %d staging modules it requires at %s\n", len(pl.Current.Required), v.Staging())
	if err := pl.Current.checkServed(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "bump: looking for the newest complete 1.%d release (version skew)\n", v.Minor-1)
	var skipped []string
	pl.Skew, skipped, err = previousMinor(ctx, v)
	for _, s := range skipped {
		fmt.Fprintf(w, "bump: skipped: %s\n", s)
	}
	if err != nil {
		return nil, err
	}
	if pl.ControllerTools, err = newestBuiltOn(ctx, "sigs.k8s.io/controller-tools", "k8s.io/apimachinery", v.Minor); err != nil {
		return nil, err
	}
	if pl.ControllerRuntime, err = newestBuiltOn(ctx, "sigs.k8s.io/controller-runtime", "k8s.io/client-go", v.Minor); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "bump: Kubernetes %s (staging %s, etcd %s), skew %s, controller-tools %s, controller-runtime %s\n",
		v.Kubernetes(), v.Staging(), pl.Current.Etcd, pl.Skew.Version.Kubernetes(), pl.ControllerTools, pl.ControllerRuntime)
	return &pl, nil
}

// apply writes the plan into the repository at root: the control plane's
// two go.mod files, every library module, the generators' pins and the
// docs. Each go.mod is tidied. Generated code is not: `make generate` follows.
func apply(ctx context.Context, root string, pl *plan, w io.Writer) error {
	old, err := readPins(ctx, root)
	if err != nil {
		return err
	}
	for _, cp := range []struct {
		file string
		rel  *release
	}{{controlPlaneMod, pl.Current}, {skewMod, pl.Skew}} {
		fmt.Fprintf(w, "bump: %s\n", cp.file)
		if err := writeControlPlaneMod(ctx, filepath.Join(root, cp.file), cp.rel); err != nil {
			return err
		}
	}
	v := pl.Current.Version
	mods, err := libraryModules(root)
	if err != nil {
		return err
	}
	for _, dir := range mods {
		fmt.Fprintf(w, "bump: %s\n", filepath.Join(dir, "go.mod"))
		f, err := readModFile(ctx, filepath.Join(root, dir, "go.mod"))
		if err != nil {
			return err
		}
		var get []string
		for _, r := range f.Require {
			if slices.Contains(pl.Current.Staging, r.Path) {
				get = append(get, r.Path+"@"+v.Staging())
			}
			if r.Path == "sigs.k8s.io/controller-runtime" {
				get = append(get, r.Path+"@"+pl.ControllerRuntime)
			}
		}
		if len(get) == 0 {
			continue
		}
		if _, err := goCmd(ctx, filepath.Join(root, dir), append([]string{"get"}, get...)...); err != nil {
			return err
		}
		if _, err := goCmd(ctx, filepath.Join(root, dir), "mod", "tidy"); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "bump: %s\n", generateScript)
	script := filepath.Join(root, generateScript)
	data, err := os.ReadFile(script)
	if err != nil {
		return err
	}
	data = codegenLine.ReplaceAll(data, []byte("CODEGEN_VERSION="+v.Staging()))
	data = toolsLine.ReplaceAll(data, []byte("CONTROLLER_TOOLS_VERSION="+pl.ControllerTools))
	if err := os.WriteFile(script, data, 0o755); err != nil {
		return err
	}

	// The docs: each old pin becomes the new one, in one pass so that the
	// old current release can become the new skew.
	pairs := map[string]string{
		old.Kubernetes.Kubernetes()[1:]:   v.Kubernetes()[1:],
		old.Kubernetes.Staging()[1:]:      v.Staging()[1:],
		old.Skew.Kubernetes()[1:]:         pl.Skew.Version.Kubernetes()[1:],
		old.Skew.Staging()[1:]:            pl.Skew.Version.Staging()[1:],
		strings.TrimPrefix(old.Etcd, "v"): strings.TrimPrefix(pl.Current.Etcd, "v"),
		old.ControllerTools[1:]:           pl.ControllerTools[1:],
	}
	docs, err := docFiles(root)
	if err != nil {
		return err
	}
	for _, doc := range docs {
		changed, err := replaceVersions(filepath.Join(root, doc), pairs)
		if err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(w, "bump: %s\n", doc)
		}
	}
	return nil
}

// replaceVersions rewrites the version numbers of path that pairs maps
// (without the v), as whole numbers: 1.36.1 in v1.36.1 but not in 1.36.12.
// Each number is replaced once, so the old current release can become the
// new skew release in the same pass.
func replaceVersions(path string, pairs map[string]string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	out := versionNumber.ReplaceAllStringFunc(string(data), func(s string) string {
		if to, ok := pairs[s]; ok {
			return to
		}
		return s
	})
	if out == string(data) {
		return false, nil
	}
	return true, os.WriteFile(path, []byte(out), 0o644)
}

// replaceHeader introduces the generated replace block, which ends the
// control plane's go.mod files.
const replaceHeader = "// Written by hack/bump from k8s.io/kubernetes's own go.mod: every staging\n" +
	"// module it replaces with ./staging, at the published version.\n"

// writeControlPlaneMod points the go.mod at path at release r: k8s.io/kubernetes
// and etcd required at r's versions, one replace per staging module, tidied.
func writeControlPlaneMod(ctx context.Context, path string, r *release) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(data)
	i := strings.Index(text, replaceHeader)
	if i < 0 {
		return fmt.Errorf("%s: the replace block must come last, after the comment %q", path, strings.SplitN(replaceHeader, "\n", 2)[0])
	}
	var b strings.Builder
	b.WriteString(text[:i])
	b.WriteString(replaceHeader)
	b.WriteString("replace (\n")
	for _, m := range r.Staging {
		fmt.Fprintf(&b, "\t%s => %s %s\n", m, m, r.Version.Staging())
	}
	b.WriteString(")\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	args := []string{"mod", "edit", "-require=k8s.io/kubernetes@" + r.Version.Kubernetes()}
	f, err := readModFile(ctx, path)
	if err != nil {
		return err
	}
	if f.require("go.etcd.io/etcd/server/v3") != "" {
		args = append(args, "-require=go.etcd.io/etcd/server/v3@"+r.Etcd)
	}
	// Staging requirements follow the replaces; tidy drops unused ones.
	for _, req := range f.Require {
		if slices.Contains(r.Staging, req.Path) {
			args = append(args, "-require="+req.Path+"@"+r.Version.Staging())
		}
	}
	if _, err := goCmd(ctx, dir, args...); err != nil {
		return err
	}
	if _, err := goCmd(ctx, dir, "mod", "tidy"); err != nil {
		return err
	}
	// Tidy adds the staging modules k8s.io/kubernetes requires at v0.0.0;
	// the replaces decide what is built, but say the version the go.mod means.
	if f, err = readModFile(ctx, path); err != nil {
		return err
	}
	args = []string{"mod", "edit"}
	for _, req := range f.Require {
		if slices.Contains(r.Staging, req.Path) && req.Version != r.Version.Staging() {
			args = append(args, "-require="+req.Path+"@"+r.Version.Staging())
		}
	}
	if len(args) == 2 {
		return nil
	}
	if _, err := goCmd(ctx, dir, args...); err != nil {
		return err
	}
	_, err = goCmd(ctx, dir, "mod", "tidy")
	return err
}
