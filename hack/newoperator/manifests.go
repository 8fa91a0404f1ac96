package main

import (
	"fmt"
	"strings"
)

// The manifests: manifests/rbac/<name>/ (least privilege, included by)
// manifests/<name>/, the kustomization make deploy applies.

// yamlMeta is the apiVersion, kind and metadata block shared by every
// object of the operator: its name label (make undeploy selects by it) and
// part-of kooper.
func yamlMeta(apiVersion, kind, name, namespace string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", apiVersion, kind, name)
	if namespace != "" {
		fmt.Fprintf(&b, "  namespace: %s\n", namespace)
	}
	b.WriteString("  labels:\n    app.kubernetes.io/name: $Name\n    app.kubernetes.io/part-of: kooper\n")
	return b.String()
}

// rbacFiles returns manifests/rbac/<name>/, by file name.
func rbacFiles(op operator) map[string]string {
	files := map[string]string{}
	ns := string(op.NamespaceYAML)
	if ns == "" {
		ns = `# The namespace the operators run in: their ServiceAccounts, leader-election
# Leases and Deployments live here. Pod Security Admission enforces the
# restricted profile.
apiVersion: v1
kind: Namespace
metadata:
  name: kooper-system
  labels:
    app.kubernetes.io/part-of: kooper
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
    pod-security.kubernetes.io/audit: restricted
`
	}
	files["namespace.yaml"] = ns
	resources := []string{"namespace.yaml"}
	if op.Cluster && len(op.Owns) > 0 {
		files["children_namespace.yaml"] = `# Where the objects each $Kind owns are made: a namespace of their own, not
# kooper-system, so that the operator's RBAC reaches no other operator's
# objects. Pod Security Admission enforces the restricted profile on their
# pods.
` + yamlMeta("v1", "Namespace", op.childNamespace(), "") + `    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
    pod-security.kubernetes.io/audit: restricted
`
		resources = append(resources, "children_namespace.yaml # the objects $Plural own")
	}
	files["service_account.yaml"] = yamlMeta("v1", "ServiceAccount", "$Name", "kooper-system")
	resources = append(resources, "service_account.yaml")
	for _, r := range op.roles() {
		comment := ""
		for _, line := range strings.Split(r.comment, "\n") {
			comment += "# " + line + "\n"
		}
		files[r.file] = comment + yamlMeta("rbac.authorization.k8s.io/v1", r.kind, r.name, r.namespace) + yamlRules(r.rules)
		files[r.bindingFile()] = yamlMeta("rbac.authorization.k8s.io/v1", r.kind+"Binding", r.name, r.namespace) + binding(r.kind, r.name)
		entry := r.file
		if r.why != "" {
			entry += " # " + r.why
		}
		resources = append(resources, entry, r.bindingFile())
	}
	files["auth_delegator_binding.yaml"] = `# With -metrics-secure-addr, the operator serves /metrics only to clients
# the API server vouches for: it sends each bearer token in a TokenReview
# (who is it?) and then a SubjectAccessReview (may they get /metrics?). The
# built-in ClusterRole system:auth-delegator grants exactly those two
# creates.
` + yamlMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "kooper-$Name-auth-delegator", "") + binding("ClusterRole", "system:auth-delegator")
	files["metrics_reader_role.yaml"] = `# Who may scrape the operator's /metrics (served over HTTPS with
# -metrics-secure-addr): the operator asks the API server whether the
# scraper may get the non-resource URL /metrics, which this role grants.
# The same rule lets its holders read the API server's own /metrics too, as
# Prometheus usually does anyway.
` + yamlMeta("rbac.authorization.k8s.io/v1", "ClusterRole", "kooper-$Name-metrics-reader", "") + `rules:
  - nonResourceURLs: ["/metrics"]
    verbs: ["get"]
`
	files["metrics_reader_role_binding.yaml"] = `# The ServiceAccount Prometheus scrapes with: prometheus in the namespace
# monitoring, where the NetworkPolicy expects Prometheus too. Adjust the
# subject to your Prometheus's ServiceAccount (kube-prometheus names it
# prometheus-k8s), e.g. with a kustomize patch; manifests/rbac/README.md
# shows one.
` + yamlMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "kooper-$Name-metrics-reader", "") + `roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kooper-$Name-metrics-reader
subjects:
  - kind: ServiceAccount
    name: prometheus
    namespace: monitoring
`
	resources = append(resources,
		"auth_delegator_binding.yaml # TokenReviews, SubjectAccessReviews: who may read /metrics",
		"metrics_reader_role.yaml # get /metrics, for Prometheus",
		"metrics_reader_role_binding.yaml # Prometheus's ServiceAccount: adjust to yours")
	if len(op.Owns) > 0 {
		files["children_policy.yaml"] = childrenPolicy(op)
		resources = append(resources, "children_policy.yaml # writes only objects it labels as its own")
	}
	files["kustomization.yaml"] = `# The $Name operator's namespace, ServiceAccount, roles and bindings` + policyNote(op) + `.
# Included by manifests/$Name (kubectl apply -k manifests/$Name installs
# everything); apply alone with kubectl apply -k manifests/rbac/$Name.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
` + list(resources)
	return files
}

func policyNote(op operator) string {
	if len(op.Owns) == 0 {
		return ""
	}
	return ", and the admission policy that narrows what RBAC cannot (Kubernetes 1.30+)"
}

// childrenPolicy is the ValidatingAdmissionPolicy that lets the operator's
// ServiceAccount write only the objects it labels as its own.
func childrenPolicy(op operator) string {
	var rules strings.Builder
	var names []string
	for _, r := range op.childRules() {
		names = append(names, r.resources...)
		fmt.Fprintf(&rules, "      - apiGroups: [%s]\n        apiVersions: [\"v1\"]\n        operations: [\"CREATE\", \"UPDATE\"]\n        resources: [%s]\n", quoted(r.groups), quoted(r.resources))
	}
	where := "in every namespace (a $Kind's children are in its namespace)"
	if op.Cluster {
		where = "in " + op.childNamespace()
	}
	return `# RBAC lets the $Name operator create and update ` + andList(names) + `
# ` + where + `, whoever made them: it cannot say which objects. This policy does,
# for the operator's ServiceAccount only: an object of those kinds may be
# created only labelled app.kubernetes.io/managed-by=kooper-$Name, as the
# operator labels its children, and updated only if it was labelled so
# already. A stolen token can then change no object the operator did not
# make, such as another workload's Deployment or Secret.
#
# Needs ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, on by
# default since Kubernetes 1.30).
` + yamlMeta("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "kooper-$Name-children", "") + `spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
` + rules.String() + `  matchConditions:
    - name: $Name-service-account
      expression: "request.userInfo.username == 'system:serviceaccount:kooper-system:$Name'"
  validations:
    - expression: >-
        has(object.metadata.labels) &&
        'app.kubernetes.io/managed-by' in object.metadata.labels &&
        object.metadata.labels['app.kubernetes.io/managed-by'] == 'kooper-$Name' &&
        (request.operation == 'CREATE' ||
        (has(oldObject.metadata.labels) &&
        'app.kubernetes.io/managed-by' in oldObject.metadata.labels &&
        oldObject.metadata.labels['app.kubernetes.io/managed-by'] == 'kooper-$Name'))
      messageExpression: >-
        'the $Name operator may write only ' + request.resource.resource +
        ' labelled app.kubernetes.io/managed-by=kooper-$Name, not ' + object.metadata.name
      reason: Forbidden
---
` + yamlMeta("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "kooper-$Name-children", "") + `spec:
  policyName: kooper-$Name-children
  validationActions: ["Deny"]
`
}

// binding is a binding's roleRef and subjects: the operator's
// ServiceAccount.
func binding(kind, role string) string {
	return fmt.Sprintf(`roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: %s
  name: %s
subjects:
  - kind: ServiceAccount
    name: $Name
    namespace: kooper-system
`, kind, role)
}

func list(items []string) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "  - %s\n", it)
	}
	return b.String()
}

// deployFiles returns manifests/<name>/, by file name.
func deployFiles(op operator) map[string]string {
	files := map[string]string{}
	files["kustomization.yaml"] = `# Everything the $Name operator needs, and nothing another operator owns:
#
#   kubectl apply -k manifests/$Name
#
# or make deploy OPERATOR=$Name IMG=<your image> (manifests/deploy.sh), which
# sets the image in a temporary overlay of this directory.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../crds/$Short # the $Kind CRD only (generated by make manifests)
  - ../rbac/$Name # namespace kooper-system, ServiceAccount, roles, bindings
  - deployment.yaml
  - metrics_service.yaml # /metrics over HTTPS, port https-metrics
  - network_policy.yaml # ingress: /metrics from Prometheus only
  - pdb.yaml # at most one replica down in a drain
images:
  - name: kooper/$Name
    newName: ghcr.io/kooperkit/$Name
    newTag: latest
`
	files["deployment.yaml"] = `# The $Name operator: two replicas, one acting (it holds the Lease
# kooper-system/$Name), the other standing by.
# Part of manifests/$Name/kustomization.yaml: kubectl apply -k manifests/$Name.
` + yamlMeta("apps/v1", "Deployment", "$Name", "kooper-system") + `spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: $Name
  template:
    metadata:
      labels:
        app.kubernetes.io/name: $Name
        app.kubernetes.io/part-of: kooper
    spec:
      serviceAccountName: $Name
      # A replica stops handling, drains and releases the Lease in a few
      # seconds; the standby takes over at once.
      terminationGracePeriodSeconds: 15
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    app.kubernetes.io/name: $Name
      containers:
        - name: operator
          # Set by the kustomization's images: (make deploy IMG=... overrides it).
          image: kooper/$Name
          args:
            - -http-addr=:8080
            # /metrics over HTTPS, only for clients the API server lets get
            # it (Prometheus: kooper-$Name-metrics-reader); port http keeps
            # /healthz and /readyz for the probes.
            - -metrics-secure-addr=:8443
            - -log-format=json
          env:
            # The Lease lives here.
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            # Go's soft memory limit: the garbage collector works harder as
            # the heap nears the container's limit.
            - name: GOMEMLIMIT
              valueFrom:
                resourceFieldRef:
                  resource: limits.memory
          ports:
            - name: http
              containerPort: 8080
            - name: https-metrics
              containerPort: 8443
          # Ready when every controller's cache has synced, or while the
          # replica stands by (leader election).
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
            periodSeconds: 5
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 10
          # A memory limit (a leak cannot take the node) but no CPU limit: CPU
          # throttling would delay Lease renewals and probes.
          resources:
            requests:
              cpu: 10m
              memory: 64Mi
            limits:
              memory: 256Mi
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
`
	files["metrics_service.yaml"] = `# How Prometheus finds the replicas: a ServiceMonitor selecting
# app.kubernetes.io/component: metrics scrapes /metrics on the port named
# https-metrics, over HTTPS with a bearer token (see manifests/README.md).
# Every replica serves it, whether it leads or stands by, to the clients the
# API server lets get /metrics (kooper-$Name-metrics-reader), and answers
# 401 or 403 to the others.
apiVersion: v1
kind: Service
metadata:
  name: $Name-metrics
  namespace: kooper-system
  labels:
    app.kubernetes.io/name: $Name
    app.kubernetes.io/part-of: kooper
    app.kubernetes.io/component: metrics
spec:
  selector:
    app.kubernetes.io/name: $Name
  ports:
    - name: https-metrics
      port: 8443
      targetPort: https-metrics
`
	files["network_policy.yaml"] = `# Ingress to the $Name operator's pods: /metrics for Prometheus, nothing
# else (the operator serves no webhook). Only a cluster whose network plugin
# enforces NetworkPolicies applies it; elsewhere it changes nothing.
#
# The https-metrics port (/metrics over HTTPS, for authorized tokens only)
# admits only pods labelled app.kubernetes.io/name=prometheus (as the
# Prometheus Operator labels them) in the namespace monitoring. Elsewhere,
# patch the two selectors in your overlay (see manifests/README.md). The
# http port (/healthz, /readyz) admits no pod: the kubelet's probes are not
# affected, since traffic from the pod's own node is always allowed.
` + yamlMeta("networking.k8s.io/v1", "NetworkPolicy", "$Name", "kooper-system") + `spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: $Name
  policyTypes: ["Ingress"]
  ingress:
    - from:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: monitoring
          podSelector:
            matchLabels:
              app.kubernetes.io/name: prometheus
      ports:
        - port: https-metrics
          protocol: TCP
`
	files["pdb.yaml"] = `# At most one replica down at a time for voluntary disruptions (a node
# drain, a cluster upgrade): the other holds or takes over the Lease.
# maxUnavailable rather than minAvailable: 1, so that a Deployment scaled
# to one replica can still be drained.
` + yamlMeta("policy/v1", "PodDisruptionBudget", "$Name", "kooper-system") + `spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: $Name
`
	files["README.md"] = `# Deploying the $Name operator

` + "```sh" + `
kubectl apply -k manifests/$Name
# or, with your image:
make deploy OPERATOR=$Name IMG=registry.example/$Name:v0.1.0
` + "```" + `

installs the $Kind CRD (and no other), ` + installsNamespaces(op) + `, the
operator's RBAC` + installsPolicy(op) + ` ([` + "`manifests/rbac/$Name`" + `](../rbac/$Name/kustomization.yaml)) and the
files below. Images, ` + "`IMG`" + ` and undeploy are described in
[` + "`manifests/README.md`" + `](../README.md).

| file | what |
|---|---|
| ` + "`kustomization.yaml`" + ` | the list, and the image: ` + "`kooper/$Name`" + ` becomes ` + "`ghcr.io/kooperkit/$Name:latest`" + ` |
| ` + "`deployment.yaml`" + ` | 2 replicas with leader election (Lease ` + "`kooper-system/$Name`" + `): one acts, the other is ready to take over. Non-root, read-only root filesystem, no capabilities, no privilege escalation, RuntimeDefault seccomp; CPU and memory requests, a memory limit but no CPU limit. ` + "`/healthz`, `/readyz`" + ` on port ` + "`http`" + ` (8080), ` + "`/metrics`" + ` over HTTPS on port ` + "`https-metrics`" + ` (8443, ` + "`-metrics-secure-addr`" + `), for authorized clients only. |
| ` + "`metrics_service.yaml`" + ` | ` + "`$Name-metrics`" + `: port ` + "`https-metrics`" + ` to every replica's ` + "`/metrics`" + `, for a ServiceMonitor selecting ` + "`app.kubernetes.io/component: metrics`" + ` that scrapes with a bearer token ([` + "`manifests/README.md`" + `](../README.md)). |
| ` + "`network_policy.yaml`" + ` | ingress to the replicas: port ` + "`https-metrics`" + ` from Prometheus in namespace ` + "`monitoring`" + ` only. |
| ` + "`pdb.yaml`" + ` | at most one replica down at a time in a drain or an upgrade. |

Who may read ` + "`/metrics`" + `: the ServiceAccount ` + "`prometheus`" + ` in ` + "`monitoring`" + `, bound to the
ClusterRole ` + "`kooper-$Name-metrics-reader`" + ` by
[` + "`metrics_reader_role_binding.yaml`" + `](../rbac/$Name/metrics_reader_role_binding.yaml): point it
at your Prometheus's ServiceAccount. The operator asks the API server about each token, as
its ServiceAccount bound to ` + "`system:auth-delegator`" + `.

` + "`operators/$Name/integration/rbac_test.go`" + ` checks the RBAC and that the API
server accepts these manifests; ` + "`metrics_test.go`" + ` that only Prometheus's
token reads the metrics.
`
	return files
}

// installsNamespaces says which namespaces make deploy installs.
func installsNamespaces(op operator) string {
	if op.Cluster && len(op.Owns) > 0 {
		return "the namespaces `kooper-system` and `" + op.childNamespace() + "` (where the objects $Plural own are made)"
	}
	return "the namespace `kooper-system`"
}

// installsPolicy names the admission policy make deploy installs, if any.
func installsPolicy(op operator) string {
	if len(op.Owns) == 0 {
		return ""
	}
	return " and the admission policy that keeps its writes to the objects it labels (Kubernetes 1.30+)"
}
