package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/kooperkit/kooper/hack/internal/markdown"
)

// ErrNoOperator is returned when the operator to remove is not one of the
// repository's.
var ErrNoOperator = errors.New("no such operator")

// A Plan is the removal of one operator: what goes with it, what changes,
// and what stops it. Planning changes nothing; Apply does the rest.
type Plan struct {
	// Operator is the operator removed.
	Operator string
	// Groups are the API groups that go with it: those its code imports
	// and no other operator's does.
	Groups []Group
	// Kept are the API groups its code imports that another operator's
	// code imports too, as "group (operator)": they stay.
	Kept []string
	// Remove are the files and directories that go, slash-separated,
	// sorted, with why each is the operator's.
	Remove []Removal
	// Edit holds the files that change, by path: their new content.
	Edit map[string][]byte
	// Unlinked are the Markdown links to what goes, left outside what goes
	// and turned into their text, as "file:line: target".
	Unlinked []string
	// Mentions are the files left that still name the operator, as
	// "file (n)": prose to review.
	Mentions []string
	// Problems stop the removal: an include of a file that goes, left
	// outside what goes, or a malformed marker.
	Problems []string
}

// A Removal is a file or a directory that goes with the operator.
type Removal struct {
	Path string // slash-separated, relative to the root
	Why  string
}

// PlanRemoval plans the removal of operator name.
func (r *Repo) PlanRemoval(name string) (*Plan, error) {
	if !slices.Contains(r.Operators, name) {
		return nil, fmt.Errorf("%w %q: operators/%s/cmd/%s does not exist; the operators are %s",
			ErrNoOperator, name, name, name, strings.Join(r.Operators, ", "))
	}
	p := &Plan{Operator: name, Edit: map[string][]byte{}}
	own, err := r.GroupsOf(name)
	if err != nil {
		return nil, err
	}
	used := map[string]string{} // group → another operator importing it
	for _, other := range r.Operators {
		if other == name {
			continue
		}
		gs, err := r.GroupsOf(other)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			used[g] = other
		}
	}

	// Directories, and the packages of what goes: an import of one of
	// them takes its file along.
	dirs := map[string]string{
		"operators/" + name:      "its code",
		"manifests/" + name:      "its deploy manifests",
		"manifests/rbac/" + name: "its RBAC",
	}
	pkgs := []string{r.Module + "/operators/" + name}
	for _, g := range own {
		if other, ok := used[g]; ok {
			p.Kept = append(p.Kept, fmt.Sprintf("%s (%s)", r.Groups[g].Name, other))
			continue
		}
		p.Groups = append(p.Groups, r.Groups[g])
		group := r.Groups[g].Name
		dirs["apis/"+g] = "its API group " + group
		pkgs = append(pkgs, r.Module+"/apis/"+g)
		for _, l := range clientLayouts {
			dirs["apis/client/"+l+"/"+g] = "the generated clients of its API group " + group
			pkgs = append(pkgs, r.Module+"/apis/client/"+l+"/"+g)
		}
		dirs["manifests/crds/"+g] = "the generated CRDs of its API group " + group
	}
	gone := map[string]bool{} // what goes: files and directories
	for d, why := range dirs {
		if slices.ContainsFunc(r.Files, func(f string) bool { return strings.HasPrefix(f, d+"/") }) {
			p.Remove = append(p.Remove, Removal{Path: d, Why: why})
			gone[d] = true
		}
	}
	goes := func(f string) bool {
		for d := f; d != "."; d = path.Dir(d) {
			if gone[d] {
				return true
			}
		}
		return false
	}
	removedImport := func(im string) bool {
		return slices.ContainsFunc(pkgs, func(pkg string) bool { return im == pkg || strings.HasPrefix(im, pkg+"/") })
	}
	dashboard := []byte(`controller=~\"` + name + `.*\"`)

	var markdownFiles []string
	content := map[string][]byte{} // the files left, as they will be
	for _, f := range r.Files {
		if goes(f) || strings.HasPrefix(f, "apis/client/") {
			continue // gone, or generated: make generate rewrites it
		}
		b, err := r.read(f)
		if err != nil {
			return nil, err
		}
		if !isText(b) {
			continue
		}
		if path.Ext(f) == ".go" {
			ims, err := r.imports(f)
			if err != nil {
				return nil, err
			}
			if i := slices.IndexFunc(ims, removedImport); i >= 0 {
				p.Remove = append(p.Remove, Removal{Path: f, Why: "it imports " + strings.TrimPrefix(ims[i], r.Module+"/")})
				gone[f] = true
				continue
			}
		}
		if path.Dir(f) == "grafana/dashboards" && path.Ext(f) == ".json" && strings.Contains(string(b), string(dashboard)) {
			p.Remove = append(p.Remove, Removal{Path: f, Why: "its Grafana dashboard"})
			gone[f] = true
			continue
		}
		lines := strings.Split(string(b), "\n")
		ms, problems := marks(lines)
		for _, pr := range problems {
			p.Problems = append(p.Problems, f+": "+pr)
		}
		if ownerOf(ms) == name {
			p.Remove = append(p.Remove, Removal{Path: f, Why: "marked as its own"})
			gone[f] = true
			continue
		}
		if slices.ContainsFunc(ms, func(m mark) bool { return m.name == name }) {
			b = []byte(strings.Join(cut(lines, ms, name), "\n"))
			p.Edit[f] = b
		}
		content[f] = b
		if path.Ext(f) == ".md" {
			markdownFiles = append(markdownFiles, f)
		}
	}

	// What the Markdown left quotes or links of what goes.
	for _, f := range markdownFiles {
		lines := strings.Split(string(content[f]), "\n")
		for _, in := range markdown.Includes(lines) {
			src := path.Clean(in.Path)
			if goes(src) {
				p.Problems = append(p.Problems, fmt.Sprintf("%s:%d: quotes %s, which goes with %s: mark the section that quotes it (+kooper:operator-begin=%s ... +kooper:operator-end=%s)",
					f, in.Line, in.Path, name, name, name))
				continue
			}
			edited, ok := p.Edit[src]
			if in.Region != "" && ok && !regionRE(in.Region).Match(edited) {
				p.Problems = append(p.Problems, fmt.Sprintf("%s:%d: quotes %s#%s, a region that goes with %s: mark the section that quotes it (+kooper:operator-begin=%s ... +kooper:operator-end=%s)",
					f, in.Line, in.Path, in.Region, name, name, name))
			}
		}
		changed := false
		generated := markdown.InGeneratedList(lines) // make generate rewrites those
		for _, l := range markdown.Links(lines) {
			target, err := markdown.Resolve(f, l.Target)
			if err != nil || target == "" || !goes(target) || generated[l.Line-1] {
				continue
			}
			unlinked, ok := unlink(lines[l.Line-1], l.Target)
			if !ok {
				p.Problems = append(p.Problems, fmt.Sprintf("%s:%d: links %s, which goes with %s: mark the line or section", f, l.Line, l.Target, name))
				continue
			}
			lines[l.Line-1] = unlinked
			changed = true
			p.Unlinked = append(p.Unlinked, fmt.Sprintf("%s:%d: %s", f, l.Line, l.Target))
		}
		if changed {
			content[f] = []byte(strings.Join(lines, "\n"))
			p.Edit[f] = content[f]
		}
	}

	// Prose left that names it, or its kinds: its name without dashes
	// matches a kind's name in any case (Shop for shop, ShoppingCart for
	// shopping-cart).
	mention := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(name) + `|` + regexp.QuoteMeta(strings.ReplaceAll(name, "-", "")))
	for f, b := range content {
		if n := len(mention.FindAllIndex(b, -1)); n > 0 {
			p.Mentions = append(p.Mentions, fmt.Sprintf("%s (%d)", f, n))
		}
	}
	slices.SortFunc(p.Remove, func(a, b Removal) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(p.Unlinked)
	slices.Sort(p.Mentions)
	slices.Sort(p.Problems)
	return p, nil
}

// regionRE matches the line that begins region name in a source file, as
// hack/docs reads it.
func regionRE(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*(?://|#)\s*region:\s*` + regexp.QuoteMeta(name) + `\s*$`)
}

// unlink returns line with each inline link [text](target) to target
// replaced by its text, and whether there was one (a reference definition
// or an HTML link is left to the reader).
func unlink(line, target string) (string, bool) {
	re := regexp.MustCompile(`(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?` + regexp.QuoteMeta(target) + `>?(?:\s+"[^"]*")?\s*\)`)
	if !re.MatchString(line) {
		return line, false
	}
	return re.ReplaceAllStringFunc(line, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if sub[1] == "!" {
			return "" // an image of what goes goes too
		}
		return sub[2]
	}), true
}

// saved is a file as it was before Apply, to put it back.
type saved struct {
	content []byte
	mode    fs.FileMode
}

// Apply carries the plan out in the repository at root: it removes what
// goes and writes what changes. It returns a function that puts every file
// it removed or changed back as it was. A plan with problems is refused.
func (p *Plan) Apply(root string) (undo func() error, err error) {
	if len(p.Problems) > 0 {
		return nil, fmt.Errorf("the removal of %s has %d problems: nothing was changed", p.Operator, len(p.Problems))
	}
	before := map[string]saved{}
	save := func(rel string) error {
		abs := filepath.Join(root, filepath.FromSlash(rel))
		return filepath.WalkDir(abs, func(f string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			before[f] = saved{b, fi.Mode().Perm()}
			return nil
		})
	}
	for _, rm := range p.Remove {
		if err := save(rm.Path); err != nil {
			return nil, fmt.Errorf("could not read %s (nothing was changed): %w", rm.Path, err)
		}
	}
	for f := range p.Edit {
		if err := save(f); err != nil {
			return nil, fmt.Errorf("could not read %s (nothing was changed): %w", f, err)
		}
	}
	undo = func() error {
		var errs []error
		for f, s := range before {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.WriteFile(f, s.content, s.mode); err != nil {
				errs = append(errs, fmt.Errorf("could not restore %s: %w", f, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, rm := range p.Remove {
		if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(rm.Path))); err != nil {
			return nil, errors.Join(fmt.Errorf("could not remove %s: %w", rm.Path, err), undo())
		}
	}
	for f, b := range p.Edit {
		abs := filepath.Join(root, filepath.FromSlash(f))
		if err := os.WriteFile(abs, b, before[abs].mode); err != nil {
			return nil, errors.Join(fmt.Errorf("could not write %s: %w", f, err), undo())
		}
	}
	return undo, nil
}

// Check returns what would stop or spoil the removal of any of the
// repository's operators: the problems of each plan, each link a removal
// would turn into text (mark it instead), and each marker that names no
// operator.
func (r *Repo) Check() ([]string, error) {
	var out []string
	for _, name := range r.Operators {
		p, err := r.PlanRemoval(name)
		if err != nil {
			return nil, err
		}
		for _, pr := range p.Problems {
			out = append(out, "removing "+name+": "+pr)
		}
		for _, l := range p.Unlinked {
			out = append(out, fmt.Sprintf("removing %s: %s: links what goes with %s, outside what is marked as its own: mark the line or section", name, l, name))
		}
	}
	for _, f := range r.Files {
		if strings.HasPrefix(f, "apis/client/") {
			continue
		}
		b, err := r.read(f)
		if err != nil {
			return nil, err
		}
		if !isText(b) {
			continue
		}
		ms, _ := marks(strings.Split(string(b), "\n"))
		for _, m := range ms {
			if !slices.Contains(r.Operators, m.name) {
				out = append(out, fmt.Sprintf("%s:%d: marker of %s, which is no operator of the repository", f, m.line+1, m.name))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
