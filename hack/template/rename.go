package main

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/module"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kooperkit/kooper/hack/internal/inventory"
)

// kept are the files a rename leaves as they are: the history and the
// license.
var kept = []string{"CHANGELOG.md", "LICENSE"}

// names are what a rename changes: each old name and its new one. An
// empty pair, or an unchanged one, is left alone.
type names struct {
	oldModule, newModule     string
	oldSuffix, newSuffix     string
	oldRegistry, newRegistry string
}

// registryRE matches an image repository prefix: a registry host (with a
// port, perhaps) and path components, lowercase, as image references want.
var registryRE = regexp.MustCompile(`^[a-z0-9]+(?:[.-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)

// imageRegistryRE finds the Makefile's IMAGE_REGISTRY default.
var imageRegistryRE = regexp.MustCompile(`(?m)^IMAGE_REGISTRY \?= *(\S+)\s*$`)

// rename is the rename command.
func rename(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rename", flag.ContinueOnError)
	fs.SetOutput(stderr)
	newModule := fs.String("module", "", "the new module path, e.g. example.com/acme/platform")
	newSuffix := fs.String("group-suffix", "", "the new suffix of the API groups, a DNS name you own: chaos.<old suffix> becomes chaos.<this>, e.g. acme.example.com")
	newRegistry := fs.String("registry", "", "the new image registry and path of the images, e.g. ghcr.io/acme (default: ghcr.io/<owner> for a module on github.com, else the module path without its last element)")
	oldSuffix := fs.String("from-group-suffix", "", "the suffix to replace (default: the one most API groups of apis/ share)")
	root := fs.String("root", "", "the repository (default: the one holding the working directory)")
	dryRun := fs.Bool("dry-run", false, "print what would change, and change nothing")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "template: rename: unexpected arguments %q: every input is a flag\n", fs.Args())
		return errUsage
	}
	refuse := func(problems ...string) error {
		for _, p := range problems {
			fmt.Fprintln(stderr, "template: rename:", p)
		}
		fmt.Fprintln(stderr, "template: rename: nothing was changed")
		return errUsage
	}
	dir, err := findRoot(cmp.Or(*root, "."), *root == "")
	if err != nil {
		return refuse(err.Error())
	}
	repo, err := inventory.Open(dir)
	if err != nil {
		return refuse(err.Error())
	}
	makefile, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	if err != nil {
		return refuse(fmt.Sprintf("could not read the Makefile, whose IMAGE_REGISTRY is the registry to replace: %v", err))
	}
	n, problems := resolve(repo, string(makefile), *newModule, *newSuffix, *newRegistry, *oldSuffix)
	if len(problems) > 0 {
		return refuse(problems...)
	}
	rules := renameRules(n.oldModule, n.newModule, n.oldSuffix, n.newSuffix, n.oldRegistry, n.newRegistry)
	changes, counts, err := plan(repo, rules)
	if err != nil {
		return fmt.Errorf("could not read the repository (nothing was changed): %w", err)
	}
	for _, c := range [][3]string{{"module path", n.oldModule, n.newModule}, {"API group suffix", n.oldSuffix, n.newSuffix}, {"image registry", n.oldRegistry, n.newRegistry}} {
		if c[1] != c[2] {
			fmt.Fprintf(stdout, "%s: %s -> %s\n", c[0], c[1], c[2])
		}
	}
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "nothing to rename: no file names what would change")
		return nil
	}
	for _, what := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(stdout, "  %d × %s\n", counts[what], what)
	}
	fmt.Fprintf(stdout, "in %d files\n", len(changes))
	if *dryRun {
		for _, f := range slices.Sorted(maps.Keys(changes)) {
			fmt.Fprintf(stdout, "  %s\n", f)
		}
		fmt.Fprintln(stdout, "dry run: nothing was changed")
		return nil
	}

	undo, err := write(dir, changes)
	if err != nil {
		return err
	}
	files := slices.Sorted(maps.Keys(changes))
	for _, step := range []func() error{
		func() error { return gofmt(dir, files, stdout, stderr) },
		func() error { return generate(dir, stdout, stderr) },
		func() error { return tidy(dir, stdout, stderr) },
	} {
		if err := step(); err != nil {
			return restore(dir, fmt.Errorf("the rename failed, and was undone: %w", err), undo, stdout, stderr)
		}
	}
	fmt.Fprintln(stdout, "\nrenamed; make test checks the result.")
	left, err := leftovers(dir, n)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		fmt.Fprintln(stdout, "\nLeft to you: these files still hold an old name, in a form the rename does not know:")
		for _, l := range left {
			fmt.Fprintf(stdout, "  %s\n", l)
		}
	}
	fmt.Fprintln(stdout, "\nAlso left to you: a CRD with a new group is a new API to a cluster; objects made under the old groups are not moved.")
	return nil
}

// resolve checks the new names and finds the old ones: the module path of
// go.mod, the API groups' suffix (given, or the one most groups share) and
// the Makefile's IMAGE_REGISTRY. It returns why it cannot.
func resolve(repo *inventory.Repo, makefile, newModule, newSuffix, newRegistry, oldSuffix string) (names, []string) {
	n := names{oldModule: repo.Module, newModule: repo.Module}
	var problems []string
	if newModule == "" && newSuffix == "" && newRegistry == "" {
		return n, []string{"nothing to do: give -module, -group-suffix or -registry (make rename MODULE=... GROUP_SUFFIX=...)"}
	}
	if newModule != "" {
		if err := module.CheckPath(newModule); err != nil {
			problems = append(problems, fmt.Sprintf("-module %q is not a valid module path: %v", newModule, err))
		} else {
			n.newModule = newModule
		}
	}

	if oldSuffix == "" {
		var err error
		if oldSuffix, err = commonSuffix(repo); err != nil && newSuffix != "" {
			problems = append(problems, err.Error())
		}
	}
	n.oldSuffix, n.newSuffix = oldSuffix, oldSuffix
	if newSuffix != "" {
		if p := checkSuffix(newSuffix, repo); len(p) > 0 {
			problems = append(problems, p...)
		} else {
			n.newSuffix = newSuffix
		}
	}

	m := imageRegistryRE.FindStringSubmatch(makefile)
	if m == nil {
		problems = append(problems, "the Makefile sets no IMAGE_REGISTRY ?= ...: the registry to replace")
	} else {
		n.oldRegistry, n.newRegistry = m[1], m[1]
	}
	switch {
	case newRegistry != "" && !registryRE.MatchString(newRegistry):
		problems = append(problems, fmt.Sprintf("-registry %q is not an image registry and path: want lowercase host[:port]/path, e.g. ghcr.io/acme", newRegistry))
	case newRegistry != "":
		n.newRegistry = newRegistry
	case n.newModule != n.oldModule:
		if r := registryOf(n.newModule); registryRE.MatchString(r) {
			n.newRegistry = r
		} else {
			problems = append(problems, fmt.Sprintf("no image registry follows from module %q (%q is none): give -registry", n.newModule, r))
		}
	}
	return n, problems
}

// checkSuffix returns what is wrong with suffix as the API groups' suffix.
func checkSuffix(suffix string, repo *inventory.Repo) []string {
	var problems []string
	if errs := validation.IsDNS1123Subdomain(suffix); len(errs) > 0 {
		return []string{fmt.Sprintf("-group-suffix %q is not a DNS name: %s", suffix, strings.Join(errs, "; "))}
	}
	if !strings.Contains(suffix, ".") {
		problems = append(problems, fmt.Sprintf("-group-suffix %q has one label: want a domain you own, such as acme.example.com", suffix))
	}
	for _, reserved := range []string{"k8s.io", "kubernetes.io"} {
		if suffix == reserved || strings.HasSuffix(suffix, "."+reserved) {
			problems = append(problems, fmt.Sprintf("-group-suffix %q: groups under %s are reserved for Kubernetes", suffix, reserved))
		}
	}
	for _, g := range repo.Groups {
		label, _, _ := strings.Cut(g.Name, ".")
		if errs := validation.IsDNS1123Subdomain(label + "." + suffix); len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("-group-suffix %q: the group %s.%s would not be valid: %s", suffix, label, suffix, strings.Join(errs, "; ")))
		}
	}
	return problems
}

// commonSuffix returns the suffix (all but the first label) that most of
// the repository's API groups share.
func commonSuffix(repo *inventory.Repo) (string, error) {
	count := map[string]int{}
	for _, g := range repo.Groups {
		if _, s, ok := strings.Cut(g.Name, "."); ok {
			count[s]++
		}
	}
	if len(count) == 0 {
		return "", errors.New("apis/ has no API group to take the suffix to replace from: give -from-group-suffix")
	}
	suffixes := slices.SortedFunc(maps.Keys(count), func(a, b string) int { return cmp.Or(count[b]-count[a], strings.Compare(a, b)) })
	if len(suffixes) > 1 && count[suffixes[0]] == count[suffixes[1]] {
		return "", fmt.Errorf("the API groups have suffixes %s as often each: give the one to replace with -from-group-suffix", strings.Join(suffixes, ", "))
	}
	return suffixes[0], nil
}

// registryOf is the default image registry of a module: ghcr.io/<owner>
// for one on github.com, else the module path without its last element.
func registryOf(mod string) string {
	elems := strings.Split(strings.ToLower(mod), "/")
	switch {
	case elems[0] == "github.com" && len(elems) >= 2:
		return "ghcr.io/" + elems[1]
	case len(elems) >= 2:
		return strings.Join(elems[:len(elems)-1], "/")
	}
	return elems[0]
}

// plan applies rules to every text file of the repository but kept, and
// returns the new content of each file that changes, and what was
// replaced how often.
func plan(repo *inventory.Repo, rules []rule) (map[string][]byte, map[string]int, error) {
	changes := map[string][]byte{}
	counts := map[string]int{}
	for _, f := range repo.Files {
		if slices.Contains(kept, f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repo.Root, filepath.FromSlash(f)))
		if err != nil {
			return nil, nil, err
		}
		if bytes.Contains(b[:min(len(b), 8<<10)], []byte{0}) {
			continue // not text
		}
		out, c := apply(string(b), rules)
		if len(c) == 0 {
			continue
		}
		changes[f] = []byte(out)
		for what, k := range c {
			counts[what] += k
		}
	}
	return changes, counts, nil
}

// write writes changes (by slash-separated path under root) and returns a
// function that puts the files back as they were.
func write(root string, changes map[string][]byte) (undo func() error, err error) {
	type saved struct {
		b    []byte
		mode fs.FileMode
	}
	before := map[string]saved{}
	for f := range changes {
		p := filepath.Join(root, filepath.FromSlash(f))
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("could not read %s (nothing was changed): %w", f, err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("could not read %s (nothing was changed): %w", f, err)
		}
		before[p] = saved{b, fi.Mode().Perm()}
	}
	undo = func() error {
		var errs []error
		for p, s := range before {
			if err := os.WriteFile(p, s.b, s.mode); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for f, b := range changes {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.WriteFile(p, b, before[p].mode); err != nil {
			return nil, errors.Join(fmt.Errorf("could not write %s: %w", f, err), undo())
		}
	}
	return undo, nil
}

// leftovers lists the files of the renamed tree, but kept, that still hold
// an old name, or the old suffix's first label (the old organisation's
// name, as in shopco.example), as "file:line".
func leftovers(root string, n names) ([]string, error) {
	repo, err := inventory.Open(root)
	if err != nil {
		return nil, err
	}
	var needles []string
	for _, p := range [][2]string{{n.oldModule, n.newModule}, {n.oldSuffix, n.newSuffix}, {n.oldRegistry, n.newRegistry}} {
		if p[0] != "" && p[0] != p[1] {
			needles = append(needles, p[0])
		}
	}
	if n.oldSuffix != n.newSuffix {
		if label, _, _ := strings.Cut(n.oldSuffix, "."); label != "" && !strings.Contains(n.newSuffix+n.newModule+n.newRegistry, label) {
			needles = append(needles, label)
		}
	}
	var out []string
	for _, f := range repo.Files {
		if slices.Contains(kept, f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		s := bufio.NewScanner(bytes.NewReader(b))
		s.Buffer(make([]byte, 1<<20), 1<<24)
		for line := 1; s.Scan(); line++ {
			if slices.ContainsFunc(needles, func(nd string) bool { return strings.Contains(s.Text(), nd) }) {
				out = append(out, fmt.Sprintf("%s:%d", f, line))
			}
		}
	}
	return out, nil
}
