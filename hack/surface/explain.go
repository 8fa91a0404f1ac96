package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path"
	"strings"
	"testing/fstest"
)

// explain writes why -check failed: each budget over its limit, with its
// packages' counts (or Config's fields) compared with those at the git
// revision base of the repository at root, and what to do.
func explain(w io.Writer, m measurement, over []overrun, root, base string) {
	var before *measurement
	var beforeErr error
	if base != "" {
		b, err := measureRevision(root, base)
		if err != nil {
			beforeErr = err
		} else {
			before = &b
		}
	}
	for _, o := range over {
		fmt.Fprintf(w, "surface budget `%s` is %d, over its limit %d (target %d).\n", o.Limit.Budget, o.Count, o.Limit.Max, o.Limit.Target)
		if o.Limit.Budget == configBudget {
			explainConfig(w, m, before, base)
		} else {
			explainSet(w, m, o.Limit.Budget, before, base)
		}
		if beforeErr != nil {
			fmt.Fprintf(w, "(no comparison with %s: %v)\n", base, beforeErr)
		}
		fmt.Fprintf(w, "Shrink the surface, or raise the limit in hack/surface/budget.go in a commit whose CHANGELOG.md entry says why and holds the line \"surface budget `%s` %d\".\n\n",
			o.Limit.Budget, o.Count)
	}
}

// explainSet writes the per-package counts of the set named name, and
// which packages grew since before, if known.
func explainSet(w io.Writer, m measurement, name string, before *measurement, base string) {
	now, _ := m.Set(name)
	was := map[string]int{}
	if before != nil {
		if b, ok := before.Set(name); ok {
			for _, p := range b.Packages {
				was[p.Dir] = len(p.Names)
			}
		}
	}
	grew := 0
	fmt.Fprintf(w, "%-32s %5s", "package", "names")
	if before != nil {
		fmt.Fprintf(w, " %8s", "at "+base)
	}
	fmt.Fprintln(w)
	for _, p := range now.Packages {
		fmt.Fprintf(w, "%-32s %5d", p.Dir, len(p.Names))
		if before != nil {
			old, ok := was[p.Dir]
			switch {
			case !ok:
				fmt.Fprintf(w, " %8s  new package", "-")
				grew++
			case len(p.Names) > old:
				fmt.Fprintf(w, " %8d  grew by %d", old, len(p.Names)-old)
				grew++
			default:
				fmt.Fprintf(w, " %8d", old)
			}
		}
		fmt.Fprintln(w)
	}
	if before != nil && grew == 0 {
		fmt.Fprintf(w, "No package grew since %s: compare with an earlier revision (-base HEAD~1, -base origin/main).\n", base)
	}
}

// explainConfig writes the fields of controller.Config that are new since
// before, or all of them if before is unknown or none is new.
func explainConfig(w io.Writer, m measurement, before *measurement, base string) {
	var added []string
	if before != nil {
		had := map[string]bool{}
		for _, f := range before.Config {
			had[f] = true
		}
		for _, f := range m.Config {
			if !had[f] {
				added = append(added, f)
			}
		}
	}
	if len(added) > 0 {
		fmt.Fprintf(w, "controller.Config's fields new since %s: %s\n", base, strings.Join(added, ", "))
		return
	}
	if before != nil {
		fmt.Fprintf(w, "No field of controller.Config is new since %s: compare with an earlier revision (-base HEAD~1, -base origin/main).\n", base)
	}
	fmt.Fprintf(w, "controller.Config's fields: %s\n", strings.Join(m.Config, ", "))
}

// measureRevision measures the library as it is at the git revision rev of
// the repository at root.
func measureRevision(root, rev string) (measurement, error) {
	fsys, err := revisionFS(root, rev)
	if err != nil {
		return measurement{}, err
	}
	lib, err := countLibrary(fsys)
	if err != nil {
		return measurement{}, fmt.Errorf("could not count the library at %s: %w", rev, err)
	}
	return measure(lib)
}

// revisionFS returns the library's go.mod and Go files at the git revision
// rev of the repository at root, rooted at the library's directory.
func revisionFS(root, rev string) (fs.FS, error) {
	cmd := exec.Command("git", "-C", root, "archive", "--format=tar", rev, "--", libraryDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("could not read %s at %s: %w: %s", libraryDir, rev, err, strings.TrimSpace(stderr.String()))
	}
	fsys := fstest.MapFS{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("could not read git archive's output: %w", err)
		}
		name, ok := strings.CutPrefix(h.Name, libraryDir+"/")
		goFile := strings.HasSuffix(name, ".go") || path.Base(name) == "go.mod"
		if !ok || h.Typeflag != tar.TypeReg || !goFile {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("could not read %s from git archive's output: %w", h.Name, err)
		}
		fsys[name] = &fstest.MapFile{Data: data}
	}
	return fsys, nil
}
