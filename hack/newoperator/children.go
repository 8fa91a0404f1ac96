package main

import (
	"fmt"
	"strings"
)

// The operator's internal/handler/children.go, with -owns: everything about
// the kinds a custom resource owns, so that adding a child is one Go file
// (and its RBAC, manifests/rbac/<name>/children.yaml): the list of owned
// resources, the sources watching them, and apply, which writes each child
// with server-side apply.

func childrenGo(op operator) *goFile {
	f := newGoFile(op, "handler")
	f.code(`// Labels of every child: the sources watch only objects labelled
// ManagedByLabel=ManagedBy; OwnerLabel names the $Kind` + map[bool]string{true: ", and selects its pods", false: ""}[op.owns("Deployment") || op.owns("Service")] + `.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "kooper-$Name"
	OwnerLabel     = "$Group/$kind"
)
`)
	if op.owns("Deployment") {
		f.code(`
// PlaceholderImage is the image of the Deployment's container until you
// choose yours: it serves nothing, and runs as any user.
const PlaceholderImage = "registry.k8s.io/pause:3.10"
`)
	}
	f.code(`
// Owned are the resources a $Kind owns: Sources watches each, apply writes
// each, and the operator's RBAC grants exactly these
// (manifests/rbac/$Name/children.yaml; integration/rbac_test.go checks it).
var Owned = []schema.GroupVersionResource{
`)
	for _, k := range op.Owns {
		f.printf("\t%s.WithResource(%q),\n", k.groupVersion(), k.Resource)
	}
	f.code(`}

// Sources returns the $Kind controller's sources in namespace, one per
// resource of Owned: caches of the children labelled as the operator's,
// whose changes and deletions queue the $Kind that controls them.
func (h *Handler) Sources(namespace string) []controller.Source {
`)
	if op.owns("Deployment") {
		f.code(`	deployments := controller.Owns[*appsv1.Deployment](managed[*appsv1.DeploymentList](h.Kube.AppsV1().Deployments(namespace)))
	if h.Deployments == nil { // the handler reads their state from this cache
		h.deployments = map[string]*controller.Watched[*appsv1.Deployment]{}
		h.Deployments = func($v *$Alias.$Kind) []*appsv1.Deployment { return h.deployments[h.namespace($v)].Of($v) }
	}
	h.deployments[namespace] = deployments
`)
	}
	f.code("\treturn []controller.Source{\n")
	for _, k := range op.Owns {
		if k.Kind == "Deployment" {
			f.code("\t\tdeployments,\n")
			continue
		}
		f.printf("\t\tcontroller.Owns[%s](managed[%sList](h.Kube.%s(namespace))),\n", k.goType(), k.goType(), k.Client)
	}
	f.code(`	}
}

// managed returns a retriever of the objects of c labelled as the
// operator's, and only those.
func managed[L runtime.Object](c interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}) controller.Retriever {
	selected := func(opts metav1.ListOptions) metav1.ListOptions {
		opts.LabelSelector = ManagedByLabel + "=" + ManagedBy
		return opts
	}
	return controller.NewRetriever(
		func(ctx context.Context, opts metav1.ListOptions) (L, error) { return c.List(ctx, selected(opts)) },
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) { return c.Watch(ctx, selected(opts)) })
}

// apply writes $v's children, in order, with server-side apply: each named
// after $v, labelled as the operator's and $v's, with $v as its controller
// owner. The fields set here are the operator's (its field manager's):
// applied again, they are restored if someone changed them, and the
// fields set by others (the API server's defaults, other controllers) stay.
// It returns what keeps the children from being ready, or "".
func (h *Handler) apply(ctx context.Context, $v *$Alias.$Kind) (notReady string, _ error) {
	ns, opts := h.namespace($v), metav1.ApplyOptions{FieldManager: h.FieldManager, Force: true}
	labels := map[string]string{ManagedByLabel: ManagedBy, OwnerLabel: $v.Name}
	owner := metav1ac.OwnerReference().WithAPIVersion($Alias.SchemeGroupVersion.String()).WithKind("$Kind").
		WithName($v.Name).WithUID($v.UID).WithController(true).WithBlockOwnerDeletion(true)
`)
	if op.owns("Deployment") || op.owns("Service") {
		f.code("\tpods := map[string]string{OwnerLabel: $v.Name}\n")
	}
	for _, k := range op.Owns {
		f.printf("\n\t// %s\n", applyComment(op, k))
		call := fmt.Sprintf("h.Kube.%s(ns).Apply(ctx, %s.%s($v.Name, ns).WithLabels(labels).WithOwnerReferences(owner)%s, opts)",
			k.Client, k.AC, k.Kind, applyFields(op, k))
		if k.Kind == "Deployment" {
			f.code(deploymentPod(op))
			f.printf("\tdeployment, err := %s\n\tif err != nil {\n", call)
		} else {
			f.printf("\tif _, err := %s; err != nil {\n", call)
		}
		f.printf("\t\treturn \"\", fmt.Errorf(\"could not apply %s %%s/%%s: %%w\", ns, $v.Name, err)\n\t}\n", k.Kind)
	}
	if op.owns("Deployment") {
		f.code(`	return rollingOut(deployment, h.Deployments($v)), nil
}

// rollingOut says what keeps the Deployment from being ready, as the cache
// of its source holds it (the state applied carries the generation to
// await): its controller has not handled the latest spec, or not every
// replica is updated and available yet. It returns "" once it is ready.
func rollingOut(applied *appsv1.Deployment, cached []*appsv1.Deployment) string {
	if len(cached) == 0 || cached[0].Generation < applied.Generation {
		return "Deployment " + applied.Name + ": the change applied is not seen yet"
	}
	d, want := cached[0], ptr.Deref(cached[0].Spec.Replicas, 1)
	if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < want || d.Status.AvailableReplicas < want {
		return fmt.Sprintf("Deployment %s: %d of %d replicas updated, %d available", d.Name, d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas)
	}
	return ""
}
`)
	} else {
		f.code("\treturn \"\", nil\n}\n")
	}
	return f
}

// applyComment says what apply writes of kind k.
func applyComment(op operator, k ownedKind) string {
	switch k.Kind {
	case "ConfigMap":
		return "The ConfigMap: its data holds the greeting."
	case "Secret":
		return "The Secret: its data holds the greeting. Keep what must stay secret\n\t// here: a generated password, a token."
	case "ServiceAccount":
		return "The ServiceAccount: its token is not mounted unless a pod asks."
	case "Role":
		return "The Role: whoever it is bound to may list and watch $Plural. RBAC lets\n\t// the operator grant only what it holds; children.yaml's admission\n\t// policy refuses any rule on another API group."
	case "RoleBinding":
		subject := "a ServiceAccount named after $v (yours to make)"
		if op.owns("ServiceAccount") {
			subject = "$v's ServiceAccount"
		}
		return "The RoleBinding: $v's Role, to " + subject + ". The\n\t// admission policy refuses another role or subject."
	case "Service":
		what := "pods labelled OwnerLabel=<name>, yours"
		if op.owns("Deployment") {
			what = "the Deployment's pods"
		}
		return "The Service: port 80 to the port named http of " + what + "."
	case "Deployment":
		return "The Deployment: one replica of a container named app, the placeholder\n\t// image until you choose yours, with the greeting in its environment,\n\t// locked down as the restricted Pod Security level requires."
	}
	return "The " + k.Kind + "."
}

// applyFields is Go code of the With calls setting what kind k's apply
// configuration holds besides its metadata.
func applyFields(op operator, k ownedKind) string {
	switch k.Kind {
	case "ConfigMap":
		return `.
		WithData(map[string]string{"greeting": $v.Spec.Greeting})`
	case "Secret":
		return `.
		WithType(corev1.SecretTypeOpaque).WithData(map[string][]byte{"greeting": []byte($v.Spec.Greeting)})`
	case "ServiceAccount":
		return `.
		WithAutomountServiceAccountToken(false)`
	case "Role":
		return `.
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups($Alias.GroupName).WithResources("$plural").WithVerbs("list", "watch"))`
	case "RoleBinding":
		return `.
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName($v.Name)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName($v.Name).WithNamespace(ns))`
	case "Service":
		return `.
		WithSpec(corev1ac.ServiceSpec().WithSelector(pods).WithPorts(corev1ac.ServicePort().
			WithName("http").WithProtocol(corev1.ProtocolTCP).WithPort(80).WithTargetPort(intstr.FromString("http"))))`
	case "Deployment":
		return `.
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).WithSelector(metav1ac.LabelSelector().WithMatchLabels(pods)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(pods).WithSpec(pod)))`
	}
	panic(fmt.Sprintf("no apply configuration for %s", k.Kind))
}

// deploymentPod is Go code declaring pod, the Deployment's pod spec.
func deploymentPod(op operator) string {
	var b strings.Builder
	b.WriteString("\tpod := corev1ac.PodSpec().")
	if op.owns("ServiceAccount") {
		b.WriteString("WithServiceAccountName($v.Name).")
	}
	b.WriteString(`WithAutomountServiceAccountToken(false).
		WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).WithRunAsUser(65532).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(corev1ac.Container().WithName("app").WithImage(PlaceholderImage).
			WithEnv(corev1ac.EnvVar().WithName("GREETING").WithValue($v.Spec.Greeting)).
			WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(8080).WithProtocol(corev1.ProtocolTCP)).
			WithResources(corev1ac.ResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}).
				WithLimits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")})).
			WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).
				WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))))
`)
	return b.String()
}
