package main

import (
	"fmt"
	"strings"
)

// rule is one RBAC rule of the operator, with the comment its manifest
// gives it. The manifests and the operator's RBAC test, which compares them
// with a list written out in Go, are both rendered from these.
type rule struct {
	comment   string
	groups    []string
	resources []string
	// names, when set, limits the rule to objects of these names.
	names []string
	verbs []string
}

// role is one role of the operator: its manifest, which holds its binding
// too, and where it applies.
type role struct {
	// file is the role's manifest in manifests/rbac/<name>/.
	file string
	// kind is ClusterRole or Role; namespace is a Role's.
	kind, namespace string
	// name is the role's and its binding's.
	name string
	// goVar names its rules in the RBAC test.
	goVar string
	// comment heads the manifest; why is the kustomization's comment.
	comment, why string
	rules        []rule
}

// servedNamespace is the namespace a namespaced kind's operator serves by
// default (DefaultServedNamespaces in its internal/operator).
const servedNamespace = "default"

// childVerbs are what the handler and the controller's sources do with each
// owned kind: list and watch (the sources' caches), create and patch (a
// server-side apply creates a missing object, patches an existing one).
var childVerbs = []string{"create", "list", "patch", "watch"}

// namespace is the operator's own namespace ($Namespace in templates): its
// ServiceAccount, Deployment, Lease and Services live there, and nothing of
// another operator, so that its Role and a stolen token reach no other
// operator's Lease or Secrets.
func (o operator) namespace() string { return "kooper-" + o.Name }

// childNamespace is where a cluster-scoped kind's children are made by
// default: a namespace of their own, so that the operator may write there
// and neither in its own namespace, next to its Deployment and Lease, nor
// where other workloads live. validate refuses an operator name ending in
// -children, whose namespace would be another operator's children's.
func (o operator) childNamespace() string { return o.namespace() + "-children" }

// roles returns the operator's roles: a ClusterRole, a Role in its namespace
// (leader election), for a cluster-scoped kind owning others a Role in the
// children's namespace, and for a cluster-scoped kind a Role for its Events
// in default.
func (o operator) roles() []role {
	cluster := role{
		file: "cluster_role.yaml", kind: "ClusterRole", name: "kooper-$Name", goVar: "needed",
		comment: "Exactly what the $Name operator needs cluster-wide. A test compares these\nrules with a hand-written list and checks them by impersonating the\nServiceAccount (operators/$Name/integration/rbac_test.go).",
		rules: []rule{
			{
				comment:   "Read $Plural (the controller's list and watch); apply their status\nthrough the status subresource only.",
				groups:    []string{o.Group},
				resources: []string{o.resource()},
				verbs:     []string{"list", "watch"},
			},
			{groups: []string{o.Group}, resources: []string{o.resource() + "/status"}, verbs: []string{"patch"}},
		},
	}
	if len(o.Owns) > 0 {
		cluster.rules = append(cluster.rules, rule{
			comment:   "Owner references with blockOwnerDeletion need this where the\nOwnerReferencesPermissionEnforcement admission plugin is on.",
			groups:    []string{o.Group},
			resources: []string{o.resource() + "/finalizers"},
			verbs:     []string{"update"},
		})
	}
	lease := role{
		file: "role.yaml", kind: "Role", namespace: o.namespace(), name: "kooper-$Name", goVar: "neededInNamespace",
		comment: "Leader election: the Lease lives in the operator's own namespace only.",
		rules: []rule{{
			comment:   "create cannot be limited to a name (the object does not exist yet).",
			groups:    []string{"coordination.k8s.io"},
			resources: []string{"leases"},
			verbs:     []string{"create"},
		}, {
			comment:   "Its own Lease only: no other operator's election or shard Lease.\nwatch: a standby sees a clean release at once and takes over.",
			groups:    []string{"coordination.k8s.io"},
			resources: []string{"leases"},
			names:     []string{"$Name"},
			verbs:     []string{"get", "update", "watch"},
		}},
	}

	children := o.childRules()
	roles := []role{cluster, lease}
	if len(children) > 0 {
		children[0].comment = "The resources of handler.Owned: watched by the $Kind controller's\nsources (list, watch) and applied (create, patch); never deleted: the\ngarbage collector does it. The policies below let the operator write\nonly objects a $Kind controls."
		if o.Cluster {
			roles = append(roles, role{
				file: "children.yaml", kind: "Role", namespace: o.childNamespace(), name: "kooper-$Name-children", goVar: "neededForChildren",
				comment: "The objects each $Kind owns, made in this namespace only (the\noperator's -child-namespace; to make them elsewhere, move this Role and\nits binding there).",
				why:     "the objects $Plural own, in " + o.childNamespace() + " only, and the policies keeping the operator's writes to those a $Kind controls",
				rules:   children,
			})
		} else {
			// Never cluster-wide: a token that may read every Secret, or
			// write every ConfigMap, of the cluster would take it over.
			roles = append(roles, role{
				file: "children.yaml", kind: "Role", namespace: servedNamespace, name: "kooper-$Name-children", goVar: "neededForChildren",
				comment: "The objects each $Kind owns, read and written in the namespaces the\noperator serves only (its -served-namespaces, default " + servedNamespace + "): to serve\nanother namespace, add it there and copy this Role and its binding to it.",
				why:     "the objects $Plural own, in the served namespace " + servedNamespace + " only, and the policies keeping the operator's writes to those a $Kind controls",
				rules:   children,
			})
		}
	}

	events := rule{groups: []string{""}, resources: []string{"events"}, verbs: []string{"create", "patch"}}
	if o.Cluster {
		events.comment = "patch: repeated Events are folded into one with a count."
		roles = append(roles, role{
			file: "events_role.yaml", kind: "Role", namespace: "default", name: "kooper-$Name-events", goVar: "neededInDefault",
			comment: "Events about $Plural. A $Kind is cluster-scoped, and client-go's\nrecorder writes the Events of an object without a namespace in default:\nthe operator writes Events there and nowhere else.",
			why:     "Events in default only, where client-go writes those of cluster-scoped objects",
			rules:   []rule{events},
		})
	} else {
		events.comment = "Events about $Plural, in their namespaces. patch: repeated Events are\nfolded into one with a count."
		roles[0].rules = append(roles[0].rules, events)
	}
	return roles
}

// childRules are the rules on the owned kinds, one per API group.
func (o operator) childRules() []rule {
	var children []rule
	for _, k := range o.Owns {
		if n := len(children); n > 0 && children[n-1].groups[0] == k.Group {
			children[n-1].resources = append(children[n-1].resources, k.Resource)
			continue
		}
		children = append(children, rule{groups: []string{k.Group}, resources: []string{k.Resource}, verbs: childVerbs})
	}
	return children
}

// yamlRules renders rules as a role's rules: list.
func yamlRules(rules []rule) string {
	var b strings.Builder
	b.WriteString("rules:\n")
	for _, r := range rules {
		if r.comment != "" {
			for _, line := range strings.Split(r.comment, "\n") {
				fmt.Fprintf(&b, "  # %s\n", line)
			}
		}
		fmt.Fprintf(&b, "  - apiGroups: [%s]\n    resources: [%s]\n", quoted(r.groups), quoted(r.resources))
		if len(r.names) > 0 {
			fmt.Fprintf(&b, "    resourceNames: [%s]\n", quoted(r.names))
		}
		fmt.Fprintf(&b, "    verbs: [%s]\n", quoted(r.verbs))
	}
	return b.String()
}

// goRules renders rules as a Go []rbacv1.PolicyRule literal's elements.
func goRules(rules []rule) string {
	var b strings.Builder
	for _, r := range rules {
		names := ""
		if len(r.names) > 0 {
			names = fmt.Sprintf(" ResourceNames: []string{%s},", quoted(r.names))
		}
		fmt.Fprintf(&b, "\t{APIGroups: []string{%s}, Resources: []string{%s},%s Verbs: []string{%s}},\n", quoted(r.groups), quoted(r.resources), names, quoted(r.verbs))
	}
	return b.String()
}

// quoted returns items double-quoted and comma-separated: valid YAML flow
// and Go alike.
func quoted(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// describeRules is a one-line summary of rules for prose.
func describeRules(rules []rule) string {
	var parts []string
	for _, r := range rules {
		parts = append(parts, fmt.Sprintf("%s (%s)", strings.Join(r.resources, ", "), strings.Join(r.verbs, ", ")))
	}
	return strings.Join(parts, "; ")
}
