package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// kind is what the command reads of the operator and its kind.
type kind struct {
	root, module string
	// name is the operator's, namespace its own (the Lease's).
	name, namespace string
	// short is apis/<short>, the group's first label; group the API group.
	short, group string
	// Kind, plural (the resource) and the clientset's names of the group
	// and the kind's plural (WebappsV1alpha1, WebApps).
	Kind, plural, clientGroup, clientPlural string
	cluster                                 bool
	oldVersion, newVersion                  string
	// oldAlias is the operator's import name of the old version's package.
	oldAlias string
}

// The operator's files make new-operator wrote, which the command reads or
// changes.
func (k kind) operatorGo() string { return "operators/" + k.name + "/internal/operator/operator.go" }
func (k kind) mainGo() string     { return "operators/" + k.name + "/cmd/" + k.name + "/main.go" }
func (k kind) crdName() string    { return k.plural + "." + k.group }
func (k kind) newAlias() string   { return strings.TrimSuffix(k.oldAlias, k.oldVersion) + k.newVersion }
func (k kind) oldDir() string     { return "apis/" + k.short + "/" + k.oldVersion }
func (k kind) newDir() string     { return "apis/" + k.short + "/" + k.newVersion }
func (k kind) oldPkg() string     { return k.module + "/" + k.oldDir() }
func (k kind) newPkg() string     { return k.module + "/" + k.newDir() }

var (
	nameRE    = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
	resPathRE = regexp.MustCompile(`\+kubebuilder:resource:path=([a-z0-9]+),scope=(Cluster|Namespaced)`)
	groupRE   = regexp.MustCompile(`(?m)^// \+groupName=(\S+)`)
	nsRE      = regexp.MustCompile(`(?m)^\s*(?:const\s+)?DefaultNamespace\s*=\s*"([^"]+)"`)
)

// read finds the operator's kind and checks that a version can be added to
// it, or with store that version, which make new-version added, can become
// the one stored; it returns every reason it cannot. With store, oldVersion
// is the version stored and read now, newVersion the one to store.
func read(root, name, version string, store bool) (kind, []string) {
	var problems []string
	if !nameRE.MatchString(name) {
		problems = append(problems, fmt.Sprintf("-name %q: the name of an operator under operators/, as make new-operator made it", name))
	}
	if !versionRE.MatchString(version) {
		problems = append(problems, fmt.Sprintf("-version %q: want v<major>, v<major>alpha<n> or v<major>beta<n> (v1beta1, v2), as Kubernetes orders versions", version))
	}
	if len(problems) > 0 {
		return kind{}, problems
	}
	k := kind{root: root, name: name, newVersion: version}
	mod, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return k, []string{err.Error()}
	}
	k.module = mod
	opSrc, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(k.operatorGo())))
	if err != nil {
		return k, []string{fmt.Sprintf("operator %s: could not read %s (make new-version works on an operator that make new-operator made): %v", name, k.operatorGo(), err)}
	}
	// The kind's API package is the one API import of the operator's
	// wiring.
	f, err := parser.ParseFile(token.NewFileSet(), k.operatorGo(), opSrc, parser.ImportsOnly)
	if err != nil {
		return k, []string{fmt.Sprintf("%s: %v", k.operatorGo(), err)}
	}
	var apis []*ast.ImportSpec
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if rest, ok := strings.CutPrefix(p, mod+"/apis/"); ok && !strings.HasPrefix(rest, "client/") && strings.Count(rest, "/") == 1 {
			apis = append(apis, imp)
		}
	}
	if len(apis) != 1 || apis[0].Name == nil {
		return k, []string{fmt.Sprintf("%s imports %d API packages (want one, named, as make new-operator writes it): add the version by hand (docs/tutorial-api-versions.md)", k.operatorGo(), len(apis))}
	}
	p, _ := strconv.Unquote(apis[0].Path.Value)
	k.short, k.oldVersion, _ = strings.Cut(strings.TrimPrefix(p, mod+"/apis/"), "/")
	k.oldAlias = apis[0].Name.Name
	if m := nsRE.FindSubmatch(opSrc); m != nil {
		k.namespace = string(m[1])
	} else {
		problems = append(problems, k.operatorGo()+" declares no DefaultNamespace (the operator's own namespace)")
	}
	if !strings.HasSuffix(k.oldAlias, k.oldVersion) {
		problems = append(problems, fmt.Sprintf("%s imports %s as %s: want <group>%s, as make new-operator writes it", k.operatorGo(), p, k.oldAlias, k.oldVersion))
	}

	// The group holds one version: the old one.
	entries, err := os.ReadDir(filepath.Join(root, "apis", k.short))
	if err != nil {
		return k, append(problems, err.Error())
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() {
			versions = append(versions, e.Name())
		}
	}
	_, err = os.Stat(filepath.Join(root, "apis", k.short, "conversion.yaml"))
	converts := err == nil
	switch {
	case store && version == k.oldVersion:
		problems = append(problems, fmt.Sprintf("-version %s: the operator reads %s already, and it is stored (apis/%s/%s/types.go)", version, version, k.short, version))
	case store && (len(versions) != 2 || !slices.Contains(versions, version)):
		problems = append(problems, fmt.Sprintf("apis/%s holds the versions %s, and the operator reads %s: make store-version stores the version that make new-version added beside it (run that first)", k.short, strings.Join(versions, ", "), k.oldVersion))
	case store && !converts:
		problems = append(problems, fmt.Sprintf("apis/%s/conversion.yaml is missing: nothing would convert what is stored in %s (make new-version writes it)", k.short, k.oldVersion))
	case store:
	case len(versions) != 1:
		problems = append(problems, fmt.Sprintf("apis/%s holds the versions %s: make new-version adds a second version to a kind that has one (a third converts to and from a hub version, by hand)", k.short, strings.Join(versions, ", ")))
	case version == k.oldVersion:
		problems = append(problems, fmt.Sprintf("-version %s: %s is the version apis/%s has already", version, version, k.short))
	case converts:
		problems = append(problems, fmt.Sprintf("apis/%s/conversion.yaml exists: the kind converts already", k.short))
	}

	// The kind: the old version's one +genclient type.
	types, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(k.oldDir()), "types.go"))
	if err != nil {
		return k, append(problems, err.Error())
	}
	tf, err := parser.ParseFile(token.NewFileSet(), "types.go", types, parser.ParseComments)
	if err != nil {
		return k, append(problems, fmt.Sprintf("%s/types.go: %v", k.oldDir(), err))
	}
	var kinds []string
	for _, decl := range tf.Decls {
		if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.TYPE && g.Doc != nil && strings.Contains(g.Doc.Text(), "+genclient") {
			for _, s := range g.Specs {
				kinds = append(kinds, s.(*ast.TypeSpec).Name.Name)
			}
		}
	}
	if len(kinds) != 1 {
		return k, append(problems, fmt.Sprintf("%s/types.go declares %d kinds (+genclient): make new-version adds a version to a group of one kind", k.oldDir(), len(kinds)))
	}
	k.Kind = kinds[0]
	marked := bytes.Contains(types, []byte(storageMarker))
	switch {
	case !store && marked:
		problems = append(problems, k.oldDir()+"/types.go is marked +kubebuilder:storageversion already")
	case store && !marked:
		problems = append(problems, k.oldDir()+"/types.go is not marked +kubebuilder:storageversion: make store-version moves that mark, as make new-version left it, to "+k.newDir()+"/types.go")
	case store:
		if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(k.newDir()), "types.go")); err != nil {
			problems = append(problems, err.Error())
		} else if bytes.Contains(b, []byte(storageMarker)) {
			problems = append(problems, k.newDir()+"/types.go is marked +kubebuilder:storageversion already: two versions cannot both be stored")
		}
	}
	m := resPathRE.FindSubmatch(types)
	if m == nil {
		return k, append(problems, k.oldDir()+"/types.go has no +kubebuilder:resource:path=<plural>,scope=<scope> marker")
	}
	k.plural, k.cluster = string(m[1]), string(m[2]) == "Cluster"
	doc, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(k.oldDir()), "doc.go"))
	if err != nil {
		return k, append(problems, err.Error())
	}
	g := groupRE.FindSubmatch(doc)
	if g == nil {
		return k, append(problems, k.oldDir()+"/doc.go has no +groupName marker")
	}
	k.group = string(g[1])
	// The clientset's names, as the operator calls them.
	call := regexp.MustCompile(`\.([A-Z][A-Za-z0-9]*)` + regexp.QuoteMeta(goVersion(k.oldVersion)) + `\(\)\.([A-Z][A-Za-z0-9]*)\(`).FindSubmatch(opSrc)
	if call == nil {
		return k, append(problems, fmt.Sprintf("%s never calls the clientset's %s() (client.<Group>%s().<Plural>(...))", k.operatorGo(), goVersion(k.oldVersion), goVersion(k.oldVersion)))
	}
	k.clientGroup, k.clientPlural = string(call[1]), string(call[2])
	return k, problems
}

// goVersion is a version as the clientset's method names spell it: V1beta1.
func goVersion(v string) string { return strings.ToUpper(v[:1]) + v[1:] }

// modulePath returns the module path the go.mod file declares.
func modulePath(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	if m := modfile.ModulePath(b); m != "" {
		return m, nil
	}
	return "", fmt.Errorf("%s declares no module", file)
}

// changeSet collects the files a command writes, before and after, and
// every reason it cannot write them.
type changeSet struct {
	root     string
	c        map[string]change
	problems []string
}

func newChangeSet(root string) *changeSet {
	return &changeSet{root: root, c: map[string]change{}}
}

// create adds a new file, which must not exist.
func (cs *changeSet) create(p string, content string) {
	if _, err := os.Stat(filepath.Join(cs.root, filepath.FromSlash(p))); !errors.Is(err, fs.ErrNotExist) {
		cs.problems = append(cs.problems, p+" exists already")
		return
	}
	cs.c[p] = change{after: []byte(content)}
}

// edit changes a file with f; a Go file is formatted after.
func (cs *changeSet) edit(p string, f func(string) (string, error)) {
	before, err := os.ReadFile(filepath.Join(cs.root, filepath.FromSlash(p)))
	if err != nil {
		cs.problems = append(cs.problems, fmt.Sprintf("could not read %s: %v", p, err))
		return
	}
	after, err := f(string(before))
	if err != nil {
		cs.problems = append(cs.problems, fmt.Sprintf("%s: %v", p, err))
		return
	}
	if strings.HasSuffix(p, ".go") {
		b, err := format.Source([]byte(after))
		if err != nil {
			cs.problems = append(cs.problems, fmt.Sprintf("%s does not parse once changed: %v", p, err))
			return
		}
		after = string(b)
	}
	cs.c[p] = change{before: before, after: []byte(after)}
}

// changes returns every file the command writes, or why it cannot.
func (k kind) changes() (map[string]change, []string) {
	cs := newChangeSet(k.root)
	create, edit := cs.create, cs.edit

	// The new version: the old one's hand-written files, renamed.
	for _, f := range []string{"doc.go", "register.go", "types.go"} {
		b, err := os.ReadFile(filepath.Join(k.root, filepath.FromSlash(k.oldDir()), f))
		if err != nil {
			cs.problems = append(cs.problems, err.Error())
			continue
		}
		create(path.Join(k.newDir(), f), strings.ReplaceAll(string(b), k.oldVersion, k.newVersion))
	}
	edit(path.Join(k.oldDir(), "types.go"), k.markStorage)
	create(path.Join(k.oldDir(), "conversion.go"), k.render(conversionGo))
	create(path.Join(k.oldDir(), "conversion_test.go"), k.render(conversionTestGo))
	create("apis/"+k.short+"/conversion.yaml", k.render(conversionYAML))

	op := "operators/" + k.name
	create(op+"/internal/operator/conversion.go", k.render(operatorConversionGo))
	edit(k.operatorGo(), func(s string) (string, error) {
		s, err := insertAt(s, "+kooper:scaffold:config", k.render(operatorConfigField))
		if err != nil {
			return "", err
		}
		return insertAt(s, "+kooper:scaffold:serve", k.render(operatorServe))
	})
	edit(k.mainGo(), func(s string) (string, error) {
		var err error
		for _, e := range []struct{ marker, text string }{
			{"+kooper:scaffold:flags", mainFlags},
			{"+kooper:scaffold:setup", mainSetup},
			{"+kooper:scaffold:config", mainConfig},
		} {
			if s, err = insertAt(s, e.marker, k.render(e.text)); err != nil {
				return "", err
			}
		}
		cli := strconv.Quote(k.module + "/operators/internal/cli")
		if !strings.Contains(s, "\t"+cli+"\n") {
			return "", fmt.Errorf("it no longer imports %s, after which the dev loop's package goes", cli)
		}
		return strings.Replace(s, "\t"+cli+"\n", "\t"+cli+"\n\t"+strconv.Quote(k.module+"/operators/internal/devloop")+"\n", 1), nil
	})
	tests, err := filepath.Glob(filepath.Join(k.root, filepath.FromSlash(op), "integration", "*_test.go"))
	if err != nil {
		cs.problems = append(cs.problems, err.Error())
	}
	marked := 0
	for _, t := range tests {
		b, err := os.ReadFile(t)
		if err != nil || !bytes.Contains(b, []byte("+kooper:scaffold:test-config")) {
			continue
		}
		marked++
		rel, _ := filepath.Rel(k.root, t)
		edit(filepath.ToSlash(rel), func(s string) (string, error) {
			return insertAt(s, "+kooper:scaffold:test-config", "\t\tConversion: conversionWebhook(t),\n")
		})
	}
	if marked == 0 {
		cs.problems = append(cs.problems, op+"/integration: no test marks its operator's Config (+kooper:scaffold:test-config): its operators would not serve the conversion webhook the CRD names")
	}
	create(op+"/integration/versions_test.go", k.render(versionsTestGo))
	edit(op+"/README.md", func(s string) (string, error) {
		return strings.TrimRight(s, "\n") + "\n\n" + k.render(readmeVersions), nil
	})

	create("manifests/"+k.name+"/conversion_webhook.yaml", k.render(serviceYAML))
	edit("manifests/"+k.name+"/kustomization.yaml", func(s string) (string, error) {
		return addResource(s, "conversion_webhook.yaml # the conversion webhook's Service (its port and ingress: deployment.yaml, network_policy.yaml)")
	})
	edit("manifests/"+k.name+"/network_policy.yaml", func(s string) (string, error) {
		s = strings.Replace(s, "(the operator serves no webhook)", "(and the conversion webhook, from any source)", 1)
		return insertAfter(s, "\n  ingress:\n", networkPolicyRule)
	})
	edit("manifests/"+k.name+"/deployment.yaml", func(s string) (string, error) {
		s, err := insertAfter(s, "\n          args:\n", "            - -conversion-webhook-addr=:9443\n")
		if err != nil {
			return "", err
		}
		return insertAfter(s, "\n          ports:\n", "            - name: webhook\n              containerPort: 9443\n")
	})
	create("manifests/rbac/"+k.name+"/conversion_secret_role.yaml", k.render(secretRoleYAML))
	create("manifests/rbac/"+k.name+"/conversion_crd_role.yaml", k.render(crdRoleYAML))
	edit("manifests/rbac/"+k.name+"/kustomization.yaml", func(s string) (string, error) {
		s, err := addResource(s, "conversion_secret_role.yaml # with its binding: the conversion webhook's certificate, in a Secret")
		if err != nil {
			return "", err
		}
		return addResource(s, "conversion_crd_role.yaml # with its binding: its CA into the CRD, and a policy allowing nothing else")
	})
	return cs.c, cs.problems
}

// markStorage marks the old version's kind as the one stored.
func (k kind) markStorage(s string) (string, error) {
	decl := "\ntype " + k.Kind + " struct {"
	if strings.Count(s, decl) != 1 {
		return "", fmt.Errorf("want one declaration of %s", k.Kind)
	}
	return strings.Replace(s, decl, "\n"+storageMarker+decl, 1), nil
}

// storageMarker marks the version of a kind that the API server stores.
const storageMarker = "// +kubebuilder:storageversion"

// insertAt inserts text before the line holding the comment "// "+marker,
// which must be there once, as make new-operator wrote it.
func insertAt(s, marker, text string) (string, error) {
	re := regexp.MustCompile(`(?m)^[ \t]*// ` + regexp.QuoteMeta(marker) + `( .*)?$`)
	found := re.FindAllStringIndex(s, -1)
	switch len(found) {
	case 0:
		return "", fmt.Errorf("the line %q, where make new-version adds its code, is gone: put it back, or add the conversion webhook by hand", "// "+marker)
	case 1:
		return s[:found[0][0]] + text + s[found[0][0]:], nil
	}
	return "", fmt.Errorf("the line %q is there %d times, want once", "// "+marker, len(found))
}

// insertAfter inserts text after anchor, which must be there once.
func insertAfter(s, anchor, text string) (string, error) {
	if n := strings.Count(s, anchor); n != 1 {
		return "", fmt.Errorf("want the line %q once, as make new-operator wrote it, found it %d times: add the conversion webhook's part by hand", strings.Trim(anchor, "\n"), n)
	}
	i := strings.Index(s, anchor) + len(anchor)
	return s[:i] + text + s[i:], nil
}

// addResource adds a line to a kustomization's resources, after its last.
func addResource(s, resource string) (string, error) {
	lines := strings.SplitAfter(s, "\n")
	in, last := false, -1
	for i, l := range lines {
		switch {
		case strings.TrimSpace(l) == "resources:":
			in = true
		case in && strings.HasPrefix(l, "  - "):
			last = i
		case in && strings.TrimSpace(l) != "" && !strings.HasPrefix(l, " "):
			in = false
		}
	}
	if last < 0 {
		return "", errors.New("it has no resources list")
	}
	lines = append(lines[:last+1], append([]string{"  - " + resource + "\n"}, lines[last+1:]...)...)
	return strings.Join(lines, ""), nil
}
