package main

import (
	"fmt"
	"go/token"
	"go/types"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// input is the command line, unchecked.
type input struct {
	Name, Group, Kind, Scope, Owns string
}

// operator is a checked input and the names derived from it: everything the
// renderers need.
type operator struct {
	// Name is a DNS label: operators/<Name>, the ServiceAccount, Lease,
	// Deployment and binary.
	Name string
	// Group is the API group, a DNS subdomain with a dot.
	Group string
	// Short is the group's first label: apis/<Short>, manifests/crds/<Short>.
	Short string
	// Kind is the custom resource's kind, UpperCamelCase.
	Kind string
	// Plural is the kind's plural as client-gen names it (WebApps); its
	// lowercase is the resource.
	Plural string
	// Cluster is true for a cluster-scoped kind.
	Cluster bool
	// Owns are the kinds the custom resource owns, in knownKinds' order.
	Owns []ownedKind
	// Module is the repository's module path.
	Module string
}

// The limit that comes from the names built from the operator's name, the
// longest of which is its children's namespace kooper-<name>-children, a
// DNS label (63); the others are shorter: its own namespace and the
// managed-by label value kooper-<name>, the metrics Service <name>-metrics.
const maxNameLen = 63 - len("kooper--children")

var (
	upperCamel = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	goPkgLabel = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
)

// reservedKinds collide with the identifiers register.go, types.go or
// code-generator declare in the API package or the generated clients.
var reservedKinds = []string{
	"Kind", "Resource", "GroupName", "SchemeGroupVersion", "SchemeBuilder", "AddToScheme",
	"ConditionReady", "ReasonReconciled", "ReasonFailed", "ReasonNotReady", "ReasonNotServed", "Interface",
}

// validate checks in against the rules of Kubernetes, Go and repo, and
// returns the operator, or every problem found.
func (in input) validate(repo repo) (operator, []string) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	op := operator{Name: in.Name, Group: in.Group, Kind: in.Kind, Module: repo.module}

	// -name
	switch {
	case in.Name == "":
		add("-name is required: the operator's name, a DNS label such as web-demo")
	case len(validation.IsDNS1035Label(in.Name)) > 0 || len(in.Name) > maxNameLen:
		add("-name %q is not a valid operator name: want a DNS label of at most %d characters (lowercase letters, digits and '-', starting with a letter), as it names the ServiceAccount, the Lease, the Service %s-metrics, the namespace kooper-%s and, for a cluster-scoped kind's children, kooper-%s-children", in.Name, maxNameLen, in.Name, in.Name, in.Name)
	case strings.HasSuffix(in.Name, "-children"):
		add("-name %q ends in -children: its namespace kooper-%s would be the children's namespace of an operator named %s: choose another name", in.Name, in.Name, strings.TrimSuffix(in.Name, "-children"))
	default:
		for _, dir := range []string{"operators/" + in.Name, "manifests/" + in.Name, "manifests/rbac/" + in.Name} {
			if repo.exists(dir) {
				add("-name %q: %s already exists: choose another name", in.Name, dir)
			}
		}
		if repo.exists("examples/" + in.Name) {
			add("-name %q: examples/%s already exists, and make build would write both to bin/%s: choose another name", in.Name, in.Name, in.Name)
		}
	}

	// -group
	first, _, _ := strings.Cut(in.Group, ".")
	switch {
	case in.Group == "":
		add("-group is required: the API group, a DNS subdomain such as webapps.example.com")
	case len(validation.IsDNS1123Subdomain(in.Group)) > 0 || !strings.Contains(in.Group, "."):
		add("-group %q is not a valid API group: want a DNS subdomain with at least one dot (lowercase letters, digits, '-' and '.'), such as webapps.example.com", in.Group)
	case !goPkgLabel.MatchString(first):
		add("-group %q: its first label %q must be lowercase letters and digits, starting with a letter: it names apis/%s and the clientset's %sV1alpha1()", in.Group, first, first, first)
	case in.Group == "k8s.io" || in.Group == "kubernetes.io" || strings.HasSuffix(in.Group, ".k8s.io") || strings.HasSuffix(in.Group, ".kubernetes.io"):
		add("-group %q: groups under k8s.io and kubernetes.io are reserved for Kubernetes' own APIs: use a domain you own", in.Group)
	default:
		op.Short = first
		for _, dir := range []string{"apis/" + first, "manifests/crds/" + first} {
			if repo.exists(dir) {
				add("-group %q: %s already exists (an API group whose first label is %s): choose another group", in.Group, dir, first)
			}
		}
		if where, ok := repo.groups[in.Group]; ok {
			add("-group %q already exists in %s", in.Group, where)
		}
	}

	// -kind
	switch {
	case in.Kind == "":
		add("-kind is required: the custom resource's kind, UpperCamelCase such as WebApp")
	case !upperCamel.MatchString(in.Kind) || strings.ToUpper(in.Kind) == in.Kind:
		add("-kind %q is not UpperCamelCase: want letters and digits, starting with a capital letter, with at least one lowercase letter (e.g. WebApp)", in.Kind)
	case strings.HasSuffix(in.Kind, "List"):
		add("-kind %q ends in List: code-generator takes <Kind>List for the kind's list type", in.Kind)
	case slices.Contains(reservedKinds, in.Kind):
		add("-kind %q collides with a name the API package or its generated client declares: choose another kind", in.Kind)
	case len(validation.IsDNS1123Label(strings.ToLower(plural(in.Kind)))) > 0:
		add("-kind %q is too long: its resource %q must be a DNS label of at most 63 characters", in.Kind, strings.ToLower(plural(in.Kind)))
	default:
		op.Plural = plural(in.Kind)
		if where, ok := repo.kinds[in.Kind]; ok {
			add("-kind %q already exists in %s: kubectl would find two resources %s; choose another kind", in.Kind, where, strings.ToLower(op.Plural))
		} else if builtinKind(in.Kind) {
			add("-kind %q is a built-in Kubernetes kind: kubectl get %s would be ambiguous; choose another kind", in.Kind, strings.ToLower(op.Plural))
		}
		if op.Short != "" && len(strings.ToLower(op.Plural))+1+len(in.Group) > validation.DNS1123SubdomainMaxLength {
			add("-kind %q with -group %q: the CRD's name %s.%s is longer than 253 characters", in.Kind, in.Group, strings.ToLower(op.Plural), in.Group)
		}
	}

	// -scope
	switch in.Scope {
	case "Cluster":
		op.Cluster = true
	case "Namespaced":
	case "":
		add("-scope is required: Cluster or Namespaced")
	default:
		add("-scope %q is neither Cluster nor Namespaced", in.Scope)
	}

	// -owns
	seen := map[string]bool{}
	for _, k := range strings.Split(in.Owns, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		switch _, ok := knownKind(k); {
		case !ok:
			hint := ""
			if known, ok := knownKindFold(k); ok {
				hint = fmt.Sprintf(" (did you mean %s?)", known.Kind)
			}
			add("-owns: unknown kind %q%s: want some of %s", k, hint, strings.Join(knownKindNames(), ", "))
		case seen[k]:
			add("-owns: %s is listed twice", k)
		default:
			seen[k] = true
		}
	}
	if seen["RoleBinding"] && !seen["Role"] {
		add("-owns: RoleBinding binds the Role of the same name, which the %s owns too: add Role", in.Kind)
	}
	for _, k := range knownKinds {
		if seen[k.Kind] {
			op.Owns = append(op.Owns, k)
		}
	}
	return op, problems
}

// builtinKind reports whether kind is a kind of client-go's scheme, the
// Kubernetes API's own.
func builtinKind(kind string) bool {
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.Kind == kind {
			return true
		}
	}
	return false
}

// plural returns the plural of kind as code-generator's namer makes it
// (k8s.io/gengo/v2/namer), so that the CRD's resource, which the types
// name explicitly (+kubebuilder:resource:path), and the clientset agree.
func plural(kind string) string {
	if len(kind) < 2 {
		return kind
	}
	last, before := kind[len(kind)-1], kind[len(kind)-2]
	consonant := strings.IndexByte("bcdfghjklmnpqrstvwxyz", before) >= 0
	switch {
	case last == 's' || last == 'x' || last == 'z':
		return kind + "es"
	case last == 'y' && consonant:
		return kind[:len(kind)-1] + "ies"
	case last == 'h' && (before == 'c' || before == 's'):
		return kind + "es"
	case last == 'e' && before == 'f':
		return kind[:len(kind)-2] + "ves"
	case last == 'f':
		return kind[:len(kind)-1] + "ves"
	}
	return kind + "s"
}

// Derived names.

// alias is the import alias of the API package, e.g. webappsv1alpha1.
func (o operator) alias() string { return o.Short + "v1alpha1" }

// apiPkg is the API package's import path.
func (o operator) apiPkg() string { return path.Join(o.Module, "apis", o.Short, "v1alpha1") }

// acAlias is the import alias of the API group's generated apply
// configurations, e.g. webappsac.
func (o operator) acAlias() string { return o.Short + "ac" }

// acPkg is the import path of the API group's generated apply
// configurations.
func (o operator) acPkg() string {
	return path.Join(o.Module, "apis", "client", "applyconfiguration", o.Short, "v1alpha1")
}

// opPkg is the operator's import path.
func (o operator) opPkg() string { return path.Join(o.Module, "operators", o.Name) }

// groupGo is the group's name in the clientset: WebappsV1alpha1().
func (o operator) groupGo() string { return strings.ToUpper(o.Short[:1]) + o.Short[1:] }

// resource is the custom resource's resource, e.g. webapps.
func (o operator) resource() string { return strings.ToLower(o.Plural) }

// scope is the CRD's scope.
func (o operator) scope() string {
	if o.Cluster {
		return "Cluster"
	}
	return "Namespaced"
}

// modelPkg is the OpenAPI model package of the API package
// (+k8s:openapi-model-package): the module path reversed, like Java's, e.g.
// com.github.kooperkit.kooper.apis.webapps.v1alpha1.
func (o operator) modelPkg() string {
	host, rest, _ := strings.Cut(o.Module, "/")
	parts := strings.Split(host, ".")
	slices.Reverse(parts)
	parts = append(parts, strings.Split(rest, "/")...)
	parts = append(parts, "apis", o.Short, "v1alpha1")
	return strings.ReplaceAll(strings.Join(parts, "."), "-", "_")
}

// v is the variable naming one custom resource in the generated code: the
// kind's initials (wa for WebApp), or cr when those would shadow something.
func (o operator) v() string {
	var initials []rune
	for _, r := range o.Kind {
		if r >= 'A' && r <= 'Z' {
			initials = append(initials, r-'A'+'a')
		}
	}
	name := string(initials)
	_, pkg := packages[name]
	reserved := token.IsKeyword(name) || types.Universe.Lookup(name) != nil || pkg || slices.Contains(generatedIdents, name) ||
		slices.Contains([]string{o.alias(), o.acAlias(), "v1alpha1", "handler", "operator", "main", "integration"}, name)
	if reserved {
		return "cr"
	}
	return name
}

// generatedIdents are the identifiers of only lowercase letters that the
// generated code declares or uses, besides Go's predeclared ones and the
// packages it imports: the custom resource's variable must be none of them.
// A test renders every shape of operator and fails on one missing here.
var generatedIdents = []string{
	"a", "account", "app", "args", "change", "asked", "before", "began", "body", "burst", "c", "cancel", "cfg", "child", "children",
	"client", "cluster", "conflicts", "controlled", "cr", "created", "crs", "ctx", "cur", "d",
	"defaults", "deleting", "demo", "denied", "deployment", "e", "ensure", "err", "errs", "ev", "events", "existing",
	"failed", "file", "fs", "got", "groups", "h", "i", "k", "key", "kind", "kube", "kubeconfig", "kubectl", "l",
	"labels", "list", "logger", "m", "managed", "md", "meta", "messages", "mine", "mount", "msg", "msgs", "n",
	"name", "namespace", "needed", "now", "ns", "o", "obj", "object", "objs", "obs", "ok", "old", "opts",
	"out", "p", "pod", "pods", "pprof", "primary", "ps", "qps", "ready", "reason", "reasons", "recorder", "ref",
	"refs", "refused", "registry", "res", "resp", "resync", "run", "runner", "s", "scheme", "secret",
	"sel", "served", "service", "set", "sources", "srv", "st", "stderr", "stdout", "stop", "stored", "t", "tests", "theirs", "touched", "handlings", "spans", "tp",
	"tpl", "traced", "tt", "typed", "user", "v", "version", "want", "was", "what", "writer", "lease", "reviews",
	"ac", "adopt", "after", "again", "applied", "apply", "available", "cached", "conds", "deployments", "first", "flat",
	"g", "get", "patch", "r", "rules", "selected", "versions",
}

// dirs are the directories the generator creates, relative to the root,
// slash-separated.
func (o operator) dirs() []string {
	return []string{"apis/" + o.Short, "operators/" + o.Name, "manifests/rbac/" + o.Name, "manifests/" + o.Name}
}

// owns reports whether the custom resource owns kind.
// servesNamespaces reports whether the operator serves a list of
// namespaces: a namespaced kind owning others reads and writes its children
// in those namespaces only, with a Role in each.
func (o operator) servesNamespaces() bool { return !o.Cluster && len(o.Owns) > 0 }

func (o operator) owns(kind string) bool {
	return slices.ContainsFunc(o.Owns, func(k ownedKind) bool { return k.Kind == kind })
}

// purpose says what the operator does with a custom resource, for prose
// following "a $Kind": "from which the operator makes a ConfigMap".
func (o operator) purpose() string {
	if len(o.Owns) == 0 {
		return "that the $Name operator reconciles; so far it writes its status only"
	}
	return "from which the $Name operator makes " + o.ownedList()
}

// ownedList names the owned kinds for prose: "a ConfigMap, a Service and a
// Deployment".
func (o operator) ownedList() string {
	if len(o.Owns) == 0 {
		return "nothing yet"
	}
	var names []string
	for _, k := range o.Owns {
		names = append(names, "a "+k.Kind)
	}
	return andList(names)
}

// andList joins items for prose: "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// todos are what the generator leaves to be done by hand. Everything else
// finds the new operator by its directory: make build, deploy and run
// (operators/*/cmd), the Grafana dashboards, the docs index and the
// manifests tests.
func (o operator) todos() []string {
	return []string{
		fmt.Sprintf("apis/README.md, manifests/README.md and manifests/rbac/README.md describe each API group and operator: add %s (%s), marking each of those lines with <!-- +kooper:operator=%s --> at its end, so that make remove-operator takes them along (docs/template.md)", o.Name, o.Group, o.Name),
		"CHANGELOG.md: a line under Unreleased",
	}
}
