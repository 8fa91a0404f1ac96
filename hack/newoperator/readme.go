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
		where := "in the `$Kind`'s namespace (an owner reference cannot cross namespaces), if the operator serves it (`-served-namespaces`, default `" + servedNamespace + "`)"
		if op.Cluster {
			where = "in the namespace `-child-namespace` (default `" + op.childNamespace() + "`, which the RBAC manifests create and limit the operator's writes to: a cluster-scoped owner may own objects in any namespace)"
		}
		p("| child | name | from |\n|---|---|---|\n")
		for _, k := range op.Owns {
			from := map[string]string{
				"ConfigMap":      "`data.greeting`: `spec.greeting`",
				"Secret":         "`data.greeting`: `spec.greeting`",
				"ServiceAccount": "its token is not mounted unless a pod asks",
				"Service":        "port 80 to the port `http` of the pods labelled `$Group/$kind=<name>`",
				"Deployment":     "one replica of the placeholder image (`handler.PlaceholderImage`), `GREETING` from `spec.greeting`, locked down",
				"Role":           "lets its subjects list and watch `$plural`",
				"RoleBinding":    "binds the `$Kind`'s Role to the ServiceAccount of its name",
			}[k.Kind]
			p("| %s | the `$Kind`'s | %s |\n", k.Kind, from)
		}
		p("\nEach child is made %s, labelled `app.kubernetes.io/managed-by=kooper-$Name`, and\n", where)
		p("carries a controller owner reference to its `$Kind`: deleting the `$Kind` deletes them\n")
		p("(the garbage collector). An object of a child's name that the `$Kind` does not control is\n")
		p("never taken over: the `$Kind` is `Ready=False` with reason `Conflict`.\n\n")
		p("What a stolen token of the operator can do is what its children need, no more.\n")
		if op.Cluster {
			p("Its RBAC lets it read and write the owned kinds in `-child-namespace` only.\n")
		} else {
			p("Its RBAC lets it read and write the owned kinds in the namespaces it serves only, with a\n")
			p("Role in each ([`children_role.yaml`](../../manifests/rbac/$Name/children_role.yaml)): never cluster-wide,\n")
			p("where reading every Secret or writing every ConfigMap would take the cluster over. To serve\n")
			p("another namespace, add it to `-served-namespaces` and copy that Role and its binding to it;\n")
			p("a `$Kind` in a namespace not served is `Ready=False` with reason `NotServed`.\n")
		}
		p("An admission policy ([`children_policy.yaml`](../../manifests/rbac/$Name/children_policy.yaml)) lets it\n")
		p("create and update only objects a `$Kind` controls, their owner references set at creation\n")
		p("and kept (no adoption), with no finalizer, never in `kube-*` or its own namespace `$Namespace`")
		if op.owns("Secret") {
			p(", never a\nServiceAccount token Secret")
		}
		if op.owns("Deployment") {
			p(", never a Deployment whose pods are below the restricted Pod\nSecurity level")
		}
		if op.owns("RoleBinding") {
			p(", never a RoleBinding of another role or to a subject other than a\nServiceAccount of its namespace")
		}
		p(".\n\n")
	}
	p("`kubectl get $plural` shows each `$Kind`'s readiness; `status.observedGeneration` is\n")
	p("the generation the status describes, and an Event is recorded when `Ready` changes.\n\n")

	p("## How it is built\n\n| package | role |\n|---|---|\n")
	p("| [`cmd/$Name`](cmd/$Name/main.go) | flags → `operator.Config` |\n")
	if len(op.Owns) > 0 {
		per := "owned kind"
		if op.servesNamespaces() {
			per = "owned kind and served namespace"
		}
		p("| [`internal/operator`](internal/operator/operator.go) | the `$Kind` controller with a source per %s, Events, metrics, health, leader election |\n", per)
		p("| [`internal/handler`](internal/handler/handler.go) | the `$Kind` handler: creates and updates each child ([`children.go`](internal/handler/children.go)), writes status |\n\n")
		p("The domain logic runs in the `$Kind` controller's workers, one worker per `$Kind` at a time.\n")
		p("Each owned kind is a source of that controller ([`controller.Owns`](../../kooper/controller/owned.go),\n")
		p("given to `controller.New`): a cache with no queue or workers of its own that watches only the\n")
		p("metadata of the operator's children (a label selector) and never resyncs. A child's change\n")
		p("or deletion queues its `$Kind`, named by its controller owner reference, in the controller's\n")
		p("one queue: a child edited or deleted by hand is restored at once. The controller starts\n")
		p("handling once every source has synced.\n")
		p("Children are written with create and update: only the fields the operator sets are\n")
		p("compared and written, so the API server's defaults and other writers' fields stay.\n\n")
	} else {
		p("| [`internal/operator`](internal/operator/operator.go) | the `$Kind` controller, Events, metrics, health, leader election |\n")
		p("| [`internal/handler`](internal/handler/handler.go) | the `$Kind` handler: writes status; make the world match the spec here |\n\n")
		p("To make objects from a `$Kind`, give each an owner reference (`owner.SetController`), and\n")
		p("the `$Kind` controller a source of its kind ([`controller.Owns`](../../kooper/controller/owned.go),\n")
		p("given to `controller.New`) so that its changes and deletions queue the `$Kind`; `make new-operator`\n")
		p("with `OWNS=` writes both, as an example to copy from.\n\n")
	}

	p("## Flags\n\n| flag | default | |\n|---|---|---|\n")
	p("| `-kubeconfig` | in-cluster, else `$KUBECONFIG`, `~/.kube/config` | |\n")
	p("| `-kube-api-qps`, `-kube-api-burst` | 50, 100 | |\n")
	p("| `-http-addr` | `:8080` | `/metrics` (unless `-metrics-secure-addr`), `/healthz`, `/readyz` |\n")
	p("| `-metrics-secure-addr` | empty: `/metrics` on `-http-addr` | HTTPS address serving `/metrics` only to clients the API server authenticates and authorizes (`get` on the non-resource URL `/metrics`), e.g. `:8443` as in [`manifests/$Name`](../../manifests/$Name/README.md); the operator's ServiceAccount needs `system:auth-delegator` to ask |\n")
	p("| `-leader-elect` | true | Lease `<namespace>/$Name`; turn it off only for a single replica |\n")
	p("| `-namespace` | `$POD_NAMESPACE`, else `$Namespace` | the operator's own: where the Lease lives |\n")
	if op.Cluster && len(op.Owns) > 0 {
		p("| `-child-namespace` | `%s` | where the children are made; the RBAC must allow it |\n", op.childNamespace())
	}
	if op.servesNamespaces() {
		p("| `-served-namespaces` | `%s` | comma-separated: the namespaces whose `$Plural` get children; the operator needs a Role in each |\n", servedNamespace)
	}
	p("| `-resync` | 10m | the `$Kind` controller's safety-net resync |\n")
	p("| `-log-level`, `-log-format` | `info`, `text` | |\n")
	p("| `-tracing` | `off` | `stdout` or `otlp`: a span per handling, its API calls as children |\n")
	p("| `-pprof` | false | Go's profiles under `/debug/pprof/` on `-http-addr` |\n")
	p("| `-version` | | |\n\n")

	p("RBAC ([`manifests/rbac/$Name`](../../manifests/rbac/$Name/kustomization.yaml)), exactly what it does:\n\n")
	for _, r := range op.roles() {
		where := "cluster-wide"
		if r.namespace != "" {
			where = "in `" + r.namespace + "`"
		}
		p("- %s ([`%s`](../../manifests/rbac/$Name/%s)): %s\n", where, r.file, r.file, describeRules(r.rules))
	}
	p("- for `-metrics-secure-addr`: `system:auth-delegator` ([`auth_delegator_binding.yaml`](../../manifests/rbac/$Name/auth_delegator_binding.yaml)),\n")
	p("  to ask the API server about each scraper's token; `get` on `/metrics` for the ServiceAccount\n")
	p("  `prometheus` in `monitoring` ([`metrics_reader_role.yaml`](../../manifests/rbac/$Name/metrics_reader_role.yaml)\n")
	p("  and its binding: point it at your Prometheus)\n")
	if len(op.Owns) > 0 {
		p("- [`children_policy.yaml`](../../manifests/rbac/$Name/children_policy.yaml), a ValidatingAdmissionPolicy:\n")
		p("  the operator may create and update only objects labelled `app.kubernetes.io/managed-by=kooper-$Name`,\n")
		p("  so a stolen token can change no object the operator did not make.\n")
	}
	p("\nDeployment: [`manifests/$Name`](../../manifests/$Name/README.md), in the operator's own namespace\n`$Namespace`.\n\n")

	p("## Tests\n\n")
	p("- `internal/handler`: table-driven, on the fake clientsets: ")
	if len(op.Owns) > 0 {
		p("a new `$Kind` gets its children and is\n  Ready, a child changed by hand is restored, an object it does not control is never taken\n  over (terminal `Conflict`), a refused write is retried (`Failed`), and a second handling\n  writes nothing.\n")
	} else {
		p("a new `$Kind` is Ready for its generation, one\n  being deleted is left alone, and a second handling writes nothing.\n")
	}
	p("- `cmd/$Name`: the command line as a shell sees it.\n")
	p("- [`integration/`](integration/) on the local control plane, the operator running as its\n")
	p("  ServiceAccount with leader election: a `$Kind` becomes Ready")
	if len(op.Owns) > 0 {
		p(" with its children, a child\n  changed by hand is restored and a deleted one made again")
	}
	p(", a spec change is Ready for its generation, a handling that finds everything in place\n")
	p("  makes no write (checked from its trace), an Event is recorded, `/readyz` and the metrics\n")
	p("  (`promtool check metrics`); with `-metrics-secure-addr`, `/metrics` over HTTPS answers\n")
	p("  Prometheus's ServiceAccount token only (real tokens, reviewed by the API server). The RBAC is\n")
	p("  compared with a hand-written list and checked by\n")
	p("  SubjectAccessReviews")
	if len(op.Owns) > 0 {
		p(", the admission policy refuses writes to objects no `$Kind` controls (adoption included)")
	}
	p(", and the deploy manifests pass a server-side dry run.\n")
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
