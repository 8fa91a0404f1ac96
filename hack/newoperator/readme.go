package main

import (
	"fmt"
	"strings"
)

// operatorREADME is operators/<name>/README.md.
func operatorREADME(op operator) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	scope := "namespaced"
	if op.Cluster {
		scope = "cluster-scoped"
	}
	p("# $Name\n\n")
	p("Scaffolded by `make new-operator` ([`hack/newoperator`](../../hack/newoperator/main.go)): a %s\n", scope)
	p("`$Kind` (`$Group/v1alpha1`, [`apis/$Short/v1alpha1`](../../apis/$Short/v1alpha1/types.go)) %s.\n", op.purpose())
	p("Replace the example field `greeting` and what is made of it with your own.\n\n")
	p("[`example.yaml`](example.yaml), which `make run` applies and awaits until Ready:\n\n")
	p("<!-- include: operators/$Name/example.yaml -->\n```yaml\n%s```\n\n", exampleYAML(op))

	if len(op.Owns) > 0 {
		where := "in the `$Kind`'s namespace, if the operator serves it (`-served-namespaces`, default `" + servedNamespace + "`)"
		if op.Cluster {
			where = "in the namespace `-child-namespace` (default `" + op.childNamespace() + "`, which the RBAC manifests create)"
		}
		p("| child | from |\n|---|---|\n")
		for _, k := range op.Owns {
			from := map[string]string{
				"ConfigMap":      "`data.greeting`: `spec.greeting`",
				"Secret":         "`data.greeting`: `spec.greeting`",
				"ServiceAccount": "its token is not mounted unless a pod asks",
				"Service":        "port 80 to the port `http` of the pods labelled `$Group/$kind=<name>`",
				"Deployment":     "one replica of `handler.PlaceholderImage`, `GREETING` from `spec.greeting`, locked down; the `$Kind` is Ready once it is",
				"Role":           "lets its subjects list and watch `$plural`",
				"RoleBinding":    "binds the `$Kind`'s Role to the ServiceAccount of its name",
			}[k.Kind]
			p("| %s | %s |\n", k.Kind, from)
		}
		p("\nEach child is named after its `$Kind`, made %s, labelled\n", where)
		p("`app.kubernetes.io/managed-by=kooper-$Name`, and controlled by its `$Kind`: the garbage collector\n")
		p("deletes it with the `$Kind`. The handler writes each with server-side apply (field manager\n")
		p("`$Name`): the fields it sets are restored if changed by hand, the others (the API server's\n")
		p("defaults, other writers') stay, and a handling that finds everything in place changes nothing.\n")
		p("Each owned kind is a source of the `$Kind` controller ([`controller.Owns`](../../kooper/controller/owned.go)): a\n")
		p("child's change queues its `$Kind`, and the handler reads children's state from the source's\n")
		p("cache (`Of`), with no API call.\n\n")
		p("A stolen token of the operator can do what its children need, no more: RBAC lets it write\n")
		if op.Cluster {
			p("the owned kinds in `-child-namespace` only, and admission policies\n")
		} else {
			p("the owned kinds in the namespaces it serves only, never cluster-wide (to serve another,\n")
			p("add it to `-served-namespaces` and copy the Role of `children.yaml` there), and admission policies\n")
		}
		p("([`children.yaml`](../../manifests/rbac/$Name/children.yaml)) only objects a `$Kind` controls, owner\n")
		p("references set at creation and kept (no adoption: an object of a child's name that no `$Kind`\n")
		p("controls stays untouched, and the `$Kind` `Ready=False`), no finalizer, nothing in `kube-*` or\n")
		p("`$Namespace`")
		if op.owns("Secret") {
			p(", no ServiceAccount token Secret")
		}
		if op.owns("Deployment") {
			p(", no pod below the restricted Pod Security level")
		}
		if op.owns("RoleBinding") {
			p(", no binding of another role or to a subject other than a ServiceAccount of its namespace")
		}
		p(".\n\n")
		p("## Add a field and a child\n\n")
		p("1. [`apis/$Short/v1alpha1/types.go`](../../apis/$Short/v1alpha1/types.go): the field, with its\n")
		p("   default and validation markers; then `make generate`.\n")
		p("2. [`internal/handler/children.go`](internal/handler/children.go): the child's resource in `Owned`,\n")
		p("   its source in `Sources`, its apply configuration in `apply`, made from the field.\n")
		p("3. [`manifests/rbac/$Name/children.yaml`](../../manifests/rbac/$Name/children.yaml): its resource in the\n")
		p("   Role and in the first policy's `resourceRules`.\n\n")
		p("The tests check every resource of `Owned` alike: the RBAC test that the Role grants exactly\n")
		p("those, the handler's and the end-to-end tests that each child is made, controlled and\n")
		p("labelled.\n\n")
	} else {
		p("To make objects from a `$Kind`, apply each with the `$Kind` as its controller owner, and give\n")
		p("the `$Kind` controller a source of its kind ([`controller.Owns`](../../kooper/controller/owned.go)):\n")
		p("`make new-operator` with `OWNS=` writes both, as an example to copy from.\n\n")
	}
	p("`kubectl get $plural` shows each `$Kind`'s readiness for the generation\n")
	p("`status.observedGeneration`; an Event is recorded when `Ready` changes.\n\n")

	p("## Flags\n\n| flag | default | |\n|---|---|---|\n")
	p("| `-kubeconfig` | in-cluster, else `$KUBECONFIG`, `~/.kube/config` | |\n")
	p("| `-kube-api-qps`, `-kube-api-burst` | 50, 100 | |\n")
	p("| `-http-addr` | `:8080` | `/metrics` (unless `-metrics-secure-addr`), `/healthz`, `/readyz` |\n")
	p("| `-metrics-secure-addr` | | HTTPS `/metrics` for the clients the API server lets get it ([`manifests/$Name`](../../manifests/$Name/kustomization.yaml) uses `:8443`) |\n")
	p("| `-leader-elect` | true | Lease `<namespace>/$Name`; off only for a single replica |\n")
	p("| `-namespace` | `$POD_NAMESPACE`, else `$Namespace` | the operator's own: its Lease |\n")
	if op.Cluster && len(op.Owns) > 0 {
		p("| `-child-namespace` | `%s` | where the children are made; the RBAC must allow it |\n", op.childNamespace())
	}
	if op.servesNamespaces() {
		p("| `-served-namespaces` | `%s` | comma-separated: whose `$Plural` get children; a Role in each |\n", servedNamespace)
	}
	p("| `-resync` | 10m | the `$Kind` controller's safety-net resync |\n")
	p("| `-log-level`, `-log-format` | `info`, `text` | |\n")
	p("| `-tracing` | `off` | `stdout` or `otlp`: a span per handling, its API calls as children |\n")
	p("| `-pprof`, `-version` | | |\n\n")

	p("RBAC ([`manifests/rbac/$Name`](../../manifests/rbac/$Name/kustomization.yaml)), exactly what it does:\n\n")
	for _, r := range op.roles() {
		where := "cluster-wide"
		if r.namespace != "" {
			where = "in `" + r.namespace + "`"
		}
		p("- %s ([`%s`](../../manifests/rbac/$Name/%s)): %s\n", where, r.file, r.file, describeRules(r.rules))
	}
	p("- for `-metrics-secure-addr`: `system:auth-delegator`, and `get` on `/metrics` for Prometheus's\n")
	p("  ServiceAccount (`prometheus` in `monitoring`: point it at yours)\n\n")

	p("## Tests\n\n")
	p("- `internal/handler`, on the fake clientsets: ")
	if len(op.Owns) > 0 {
		p("a new `$Kind` gets its children")
		if op.owns("Deployment") {
			p(" and is Ready once\n  its Deployment is, not before")
		} else {
			p(" and is Ready")
		}
		p(", a refused apply is retried (`Failed`), a second handling writes no status.\n")
	} else {
		p("a new `$Kind` is Ready for its generation, one\n  being deleted is left alone, a second handling writes no status.\n")
	}
	p("- [`integration/`](integration/), on a local control plane")
	if len(op.Owns) > 0 {
		p(" with kube-controller-manager and a kwok node")
	}
	p(", the operator running as\n  its ServiceAccount: ")
	if op.owns("Deployment") {
		p("the example is Ready once its Deployment's pods are, and not before,")
	} else {
		p("the example becomes Ready,")
	}
	if len(op.Owns) > 0 {
		p(" a child changed by hand\n  is restored and a deleted one made again, deleting the `$Kind` deletes its children,")
	}
	p(" a spec\n  change, a handling that finds everything in place changes nothing, Events, `/readyz`,\n")
	p("  the metrics and secure metrics; the RBAC")
	if len(op.Owns) > 0 {
		p(" and the admission policies")
	}
	p(", with SubjectAccessReviews and\n  the operator's token.\n")
	return b.String()
}

// exampleYAML is operators/<name>/example.yaml: a custom resource to try,
// quoted by the README (hack/docs checks the quote).
func exampleYAML(op operator) string {
	var b strings.Builder
	b.WriteString("apiVersion: $Group/v1alpha1\nkind: $Kind\nmetadata:\n  name: demo\n")
	if !op.Cluster {
		b.WriteString("  namespace: default\n")
	}
	b.WriteString("spec:\n  greeting: hello # 1 to 256 characters; the default\n")
	return b.String()
}
