package main

import (
	"fmt"
	"slices"
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
	files["namespace.yaml"] = `# The $Name operator's own namespace: its ServiceAccount, leader-election
# Lease, Deployment and metrics Service live here, and nothing of another
# operator, so that its Role (its Lease) reaches no other operator's
# objects. make undeploy removes it with the operator (it selects it by the
# app.kubernetes.io/name label).
#
# Pod Security Admission enforces the restricted profile: a pod that is not
# locked down (non-root, RuntimeDefault seccomp, no capabilities, no
# privilege escalation) is refused, and kubectl apply warns about such a
# Deployment before any pod is made.
` + yamlMeta("v1", "Namespace", "$Namespace", "") + restricted
	resources := []string{"namespace.yaml"}
	if op.Cluster && len(op.Owns) > 0 {
		files["children_namespace.yaml"] = `# Where the objects each $Kind owns are made: a namespace of their own, not
# the operator's ($Namespace), so that its RBAC reaches neither its own
# Lease nor another workload's objects. Pod Security Admission enforces the
# restricted profile on their pods.
` + yamlMeta("v1", "Namespace", op.childNamespace(), "") + restricted
		resources = append(resources, "children_namespace.yaml # the objects $Plural own")
	}
	files["service_account.yaml"] = yamlMeta("v1", "ServiceAccount", "$Name", "$Namespace")
	resources = append(resources, "service_account.yaml")
	for _, r := range op.roles() {
		comment := ""
		for _, line := range strings.Split(r.comment, "\n") {
			comment += "# " + line + "\n"
		}
		files[r.file] = comment + yamlMeta("rbac.authorization.k8s.io/v1", r.kind, r.name, r.namespace) + yamlRules(r.rules) +
			"---\n" + yamlMeta("rbac.authorization.k8s.io/v1", r.kind+"Binding", r.name, r.namespace) + binding(r.kind, r.name)
		if r.file == "children.yaml" {
			files[r.file] += "---\n" + childrenPolicy(op)
		}
		entry := r.file + " # with its binding"
		if r.why != "" {
			entry = r.file + " # " + r.why
		}
		resources = append(resources, entry)
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
	files["kustomization.yaml"] = `# The $Name operator's namespace, ServiceAccount, roles and bindings` + policyNote(op) + `.
# Included by manifests/$Name (kubectl apply -k manifests/$Name installs
# everything); apply alone with kubectl apply -k manifests/rbac/$Name.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
` + list(resources)
	return files
}

// restricted are a namespace's labels by which Pod Security Admission
// enforces the restricted profile (and warns and audits at it), following
// yamlMeta's labels.
const restricted = `    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
    pod-security.kubernetes.io/audit: restricted
`

func policyNote(op operator) string {
	if len(op.Owns) == 0 {
		return ""
	}
	return ", and the admission policy that narrows what RBAC cannot (Kubernetes 1.30+)"
}

// childrenPolicy is the end of children.yaml: the ValidatingAdmissionPolicies
// that keep the operator's ServiceAccount to the objects its custom
// resources control. One policy checks what every owned kind has (metadata);
// one per kind with more to check (a Secret's type, a Deployment's pods, a
// Role's rules, a RoleBinding's role and subjects) matches that kind only,
// so that the API server type-checks each expression against the kind's
// schema (status.typeChecking, which the operator's RBAC test reads).
func childrenPolicy(op operator) string {
	var rules strings.Builder
	var names []string
	for _, r := range op.childRules() {
		names = append(names, r.resources...)
		rules.WriteString(resourceRule(r.groups[0], r.resources...))
	}
	where := "in the namespaces it serves"
	if op.Cluster {
		where = "in " + op.childNamespace()
	}
	out := `# RBAC lets the $Name operator create and patch ` + andList(names) + `
# ` + where + `, whoever made them: it cannot say which objects. These
# policies do, for the operator's ServiceAccount only: it may create and
# change only objects a $Kind controls (a controller owner reference, set at
# creation and never changed), set no finalizer, and write nothing in the
# cluster's system namespaces or in its own, $Namespace; the policies after
# the first check what else a kind could give away. A stolen token can then
# change no object the operator did not make, such as another workload's
# Deployment or Secret, and adopt none.
#
# Needs ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, on by
# default since Kubernetes 1.30).
` + policy("children", rules.String(), "", `    # Only objects a $Kind controls: an owner reference the operator sets
    # when it creates a child, and never changes.
    - expression: >-
        object.metadata.?ownerReferences.orValue([]).exists(r, r.?controller.orValue(false) &&
        r.apiVersion.startsWith('$Group/') && r.kind == '$Kind')
      messageExpression: >-
        'the $Name operator writes only objects a $Kind controls: ' +
        request.resource.resource + ' ' + request.name + ' has no controller owner reference to one'
      reason: Forbidden
    # No adoption, no garbage collection by a forged owner: the owner
    # references of an object are set at its creation, and kept.
    - expression: >-
        request.operation == 'CREATE' ||
        object.metadata.?ownerReferences == oldObject.metadata.?ownerReferences
      messageExpression: >-
        'the $Name operator may not change the owner references of ' +
        request.resource.resource + ' ' + request.name
      reason: Forbidden
    # Finalizers neither: one added to an object would hold its deletion.
    - expression: >-
        request.operation == 'CREATE' ? size(object.metadata.?finalizers.orValue([])) == 0 :
        object.metadata.?finalizers == oldObject.metadata.?finalizers
      messageExpression: >-
        'the $Name operator may not set finalizers on ' + request.resource.resource + ' ' + request.name
      reason: Forbidden
    # Never in the cluster's own namespaces, nor in the operator's, next
    # to its Deployment and Lease.
    - expression: >-
        !(request.namespace in ['kube-system', 'kube-public', 'kube-node-lease', '$Namespace'])
      messageExpression: >-
        'the $Name operator writes nothing in namespace ' + request.namespace
      reason: Forbidden
`)
	if op.owns("Secret") {
		out += "---\n# A token Secret would be filled with the token of the account it names.\n" +
			policy("secrets", resourceRule("", "secrets"), "", `    - expression: >-
        object.?type.orValue('') != 'kubernetes.io/service-account-token'
      message: "the $Name operator may not write ServiceAccount token Secrets"
      reason: Forbidden
`)
	}
	if op.owns("Deployment") {
		out += "---\n# Pods at the restricted Pod Security level only: no host namespaces, ports\n" +
			"# or paths, not root, no privilege, no added capability but\n# NET_BIND_SERVICE, the runtime's seccomp profile.\n" +
			policy("deployments", resourceRule("apps", "deployments"), `  variables:
    - name: pod
      expression: object.spec.template.spec
    - name: containers
      expression: >-
        object.spec.template.spec.containers + object.spec.template.spec.?initContainers.orValue([])
`, `    - expression: >-
        !variables.pod.?hostNetwork.orValue(false) && !variables.pod.?hostPID.orValue(false) &&
        !variables.pod.?hostIPC.orValue(false) &&
        variables.pod.?volumes.orValue([]).all(v, !has(v.hostPath))
      message: "the $Name operator writes no Deployment whose pods use the host's network, PID or IPC namespace, or a hostPath volume"
      reason: Forbidden
    - expression: >-
        variables.pod.?securityContext.?runAsNonRoot.orValue(false) &&
        variables.pod.?securityContext.?runAsUser.orValue(1) != 0 &&
        variables.pod.?securityContext.?seccompProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost']
      message: "the $Name operator writes only Deployments whose pods run as non-root (runAsNonRoot) with the RuntimeDefault or a Localhost seccomp profile"
      reason: Forbidden
    - expression: >-
        variables.containers.all(c,
        c.?ports.orValue([]).all(p, p.?hostPort.orValue(0) == 0) &&
        !c.?securityContext.?privileged.orValue(false) &&
        c.?securityContext.?allowPrivilegeEscalation.orValue(true) == false &&
        c.?securityContext.?runAsUser.orValue(1) != 0 &&
        c.?securityContext.?runAsNonRoot.orValue(true) &&
        'ALL' in c.?securityContext.?capabilities.?drop.orValue([]) &&
        c.?securityContext.?capabilities.?add.orValue([]).all(a, a == 'NET_BIND_SERVICE'))
      message: "the $Name operator writes only Deployments whose containers drop ALL capabilities (NET_BIND_SERVICE may be added back), forbid privilege escalation, are not privileged, not root, and use no host port"
      reason: Forbidden
`)
	}
	if op.owns("Role") {
		out += "---\n# Roles on its own API group only (RBAC also lets it grant only what it\n# holds).\n" +
			policy("roles", resourceRule("rbac.authorization.k8s.io", "roles"), "", `    - expression: >-
        object.?rules.orValue([]).all(r, r.?apiGroups.orValue([]).all(g, g == '$Group'))
      message: "the $Name operator writes only Roles whose rules are on $Group"
      reason: Forbidden
`)
	}
	if op.owns("RoleBinding") {
		out += "---\n# A binding of the Role of its own name, to ServiceAccounts of its namespace:\n" +
			"# never to system:authenticated, a user, a group, or another role.\n" +
			policy("rolebindings", resourceRule("rbac.authorization.k8s.io", "rolebindings"), "", `    - expression: >-
        object.roleRef.kind == 'Role' && object.roleRef.name == request.name
      messageExpression: >-
        'the $Name operator binds only the Role named like the binding, ' + request.name
      reason: Forbidden
    - expression: >-
        object.?subjects.orValue([]).all(s, s.kind == 'ServiceAccount' &&
        has(s.namespace) && s.namespace == request.namespace)
      messageExpression: >-
        'the $Name operator binds Roles only to ServiceAccounts of namespace ' + request.namespace
      reason: Forbidden
`)
	}
	return out
}

// policyNames are the names of the operator's admission policies.
func (o operator) policyNames() []string {
	names := []string{"kooper-" + o.Name + "-children"}
	for kind, suffix := range map[string]string{"Secret": "secrets", "Deployment": "deployments", "Role": "roles", "RoleBinding": "rolebindings"} {
		if o.owns(kind) {
			names = append(names, "kooper-"+o.Name+"-"+suffix)
		}
	}
	slices.Sort(names[1:])
	return names
}

// resourceRule is one entry of a policy's resourceRules: CREATE and UPDATE
// of resources of group at v1.
func resourceRule(group string, resources ...string) string {
	return fmt.Sprintf("      - apiGroups: [%q]\n        apiVersions: [\"v1\"]\n        operations: [\"CREATE\", \"UPDATE\"]\n        resources: [%s]\n",
		group, quoted(resources))
}

// policy is the ValidatingAdmissionPolicy kooper-$Name-<suffix> of the
// operator's ServiceAccount on rules, with variables and validations
// (YAML, indented), and its binding.
func policy(suffix, rules, variables, validations string) string {
	name := "kooper-$Name-" + suffix
	return yamlMeta("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", name, "") + `spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
` + rules + `  matchConditions:
    - name: $Name-service-account
      expression: "request.userInfo.username == 'system:serviceaccount:$Namespace:$Name'"
` + variables + `  validations:
` + validations + `---
` + yamlMeta("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", name, "") + `spec:
  policyName: ` + name + `
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
    namespace: $Namespace
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
  - ../rbac/$Name # namespace $Namespace, ServiceAccount, roles, bindings
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
# $Namespace/$Name), the other standing by.
# Part of manifests/$Name/kustomization.yaml: kubectl apply -k manifests/$Name.
` + yamlMeta("apps/v1", "Deployment", "$Name", "$Namespace") + `spec:
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
          # Ready when the controller's caches have synced, or while the
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
  namespace: $Namespace
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
` + yamlMeta("networking.k8s.io/v1", "NetworkPolicy", "$Name", "$Namespace") + `spec:
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
` + yamlMeta("policy/v1", "PodDisruptionBudget", "$Name", "$Namespace") + `spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: $Name
`
	return files
}
