package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// kversion is a Kubernetes release: k8s.io/kubernetes v1.<Minor>.<Patch>,
// whose staging modules (k8s.io/client-go, ...) are published as
// v0.<Minor>.<Patch>.
type kversion struct{ Minor, Patch int }

// parseVersion reads "1.38.0", "v1.38.0" or a staging version "v0.38.0".
func parseVersion(s string) (kversion, error) {
	t := strings.TrimPrefix(s, "v")
	parts := strings.Split(t, ".")
	if len(parts) != 3 || (parts[0] != "1" && parts[0] != "0") {
		return kversion{}, fmt.Errorf("%q is not a Kubernetes release version: want 1.MINOR.PATCH, e.g. 1.38.0", s)
	}
	minor, err1 := strconv.Atoi(parts[1])
	patch, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || minor < 0 || patch < 0 {
		return kversion{}, fmt.Errorf("%q is not a Kubernetes release version: want 1.MINOR.PATCH, e.g. 1.38.0", s)
	}
	return kversion{Minor: minor, Patch: patch}, nil
}

// Kubernetes is the k8s.io/kubernetes version, e.g. v1.37.2.
func (v kversion) Kubernetes() string { return fmt.Sprintf("v1.%d.%d", v.Minor, v.Patch) }

// Staging is the version of its staging modules, e.g. v0.37.2.
func (v kversion) Staging() string { return fmt.Sprintf("v0.%d.%d", v.Minor, v.Patch) }

// release is what a Kubernetes release's own go.mod says.
type release struct {
	Version kversion
	// Staging lists the modules k8s.io/kubernetes replaces with
	// ./staging/src/...: a module that builds it must replace each with the
	// published version.
	Staging []string
	// Required lists the staging modules it also requires: the ones a build
	// downloads. (Its go.mod replaces k8s.io/sample-cli-plugin and
	// k8s.io/sample-controller without requiring them, and the proxy does not
	// serve them at every release.)
	Required []string
	// Etcd is the go.etcd.io/etcd/server/v3 version it pins.
	Etcd string
}

// fetchRelease reads the go.mod of k8s.io/kubernetes at v from the Go module
// proxy.
func fetchRelease(ctx context.Context, v kversion) (*release, error) {
	d, err := downloadAll(ctx, "k8s.io/kubernetes@"+v.Kubernetes())
	if err != nil {
		return nil, err
	}
	if d[0].Error != "" {
		return nil, fmt.Errorf("the Go module proxy does not serve k8s.io/kubernetes %s: %s", v.Kubernetes(), reason(d[0].Error))
	}
	f, err := readModFile(ctx, d[0].GoMod)
	if err != nil {
		return nil, err
	}
	r := &release{Version: v, Etcd: f.require("go.etcd.io/etcd/server/v3")}
	for _, rep := range f.Replace {
		if strings.HasPrefix(rep.New.Path, "./staging/") {
			r.Staging = append(r.Staging, rep.Old.Path)
			if f.require(rep.Old.Path) != "" {
				r.Required = append(r.Required, rep.Old.Path)
			}
		}
	}
	slices.Sort(r.Staging)
	slices.Sort(r.Required)
	if len(r.Staging) == 0 || r.Etcd == "" {
		return nil, fmt.Errorf("k8s.io/kubernetes %s: its go.mod has no ./staging replaces or no go.etcd.io/etcd/server/v3 requirement", v.Kubernetes())
	}
	return r, nil
}

// checkServed downloads every staging module the release requires, at its
// version, and names each one the proxy refuses.
func (r *release) checkServed(ctx context.Context) error {
	mods := make([]string, len(r.Required))
	for i, m := range r.Required {
		mods[i] = m + "@" + r.Version.Staging()
	}
	res, err := downloadAll(ctx, mods...)
	if err != nil {
		return err
	}
	var missing []string
	for _, d := range res {
		if d.Error != "" {
			missing = append(missing, fmt.Sprintf("  %s %s: %s", d.Path, d.Version, reason(d.Error)))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the Go module proxy does not serve %d of the %d staging modules k8s.io/kubernetes %s requires, so it cannot be built:\n%s",
			len(missing), len(r.Required), r.Version.Kubernetes(), strings.Join(missing, "\n"))
	}
	return nil
}

// previousMinor returns the newest release of the minor before v whose
// staging modules the proxy all serves, and why newer patches were skipped.
func previousMinor(ctx context.Context, v kversion) (*release, []string, error) {
	all, err := versions(ctx, "k8s.io/kubernetes")
	if err != nil {
		return nil, nil, err
	}
	var candidates []kversion
	for _, s := range all {
		if strings.Contains(s, "-") {
			continue // pre-release
		}
		if c, err := parseVersion(s); err == nil && c.Minor == v.Minor-1 {
			candidates = append(candidates, c)
		}
	}
	slices.SortFunc(candidates, func(a, b kversion) int { return b.Patch - a.Patch })
	var skipped []string
	for _, c := range candidates {
		r, err := fetchRelease(ctx, c)
		if err == nil {
			err = r.checkServed(ctx)
		}
		if err == nil {
			return r, skipped, nil
		}
		skipped = append(skipped, err.Error())
	}
	return nil, skipped, fmt.Errorf("the Go module proxy serves no complete release of Kubernetes 1.%d (for the version-skew tests)", v.Minor-1)
}

// newestBuiltOn returns the newest release of module path whose go.mod
// requires module on at a version of the given minor (v0.<minor>.*).
func newestBuiltOn(ctx context.Context, path, on string, minor int) (string, error) {
	all, err := versions(ctx, path)
	if err != nil {
		return "", err
	}
	prefix := fmt.Sprintf("v0.%d.", minor)
	for _, s := range slices.Backward(all) {
		if strings.Contains(s, "-") {
			continue
		}
		d, err := downloadAll(ctx, path+"@"+s)
		if err != nil {
			return "", err
		}
		if d[0].Error != "" {
			continue
		}
		f, err := readModFile(ctx, d[0].GoMod)
		if err != nil {
			return "", err
		}
		if got := f.require(on); strings.HasPrefix(got, prefix) {
			return s, nil
		}
	}
	return "", fmt.Errorf("no release of %s served by the Go module proxy requires %s %s*", path, on, prefix)
}

// reason shortens a go command error to what the proxy said.
func reason(e string) string {
	if i := strings.LastIndex(e, "server response: "); i >= 0 {
		return strings.TrimSpace(e[i+len("server response: "):])
	}
	lines := strings.Split(strings.TrimSpace(e), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
