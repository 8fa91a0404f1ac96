package main

import "strings"

// ownedKind is a built-in kind a custom resource may own: where its API
// lives and how client-go reaches it.
type ownedKind struct {
	Kind string
	// Group and Version of its API; Group "" is the core group.
	Group, Version string
	// Resource is its plural resource, as RBAC and the metadata client name
	// it.
	Resource string
	// Import and Alias are its Go types' package and import alias; AC is
	// the import alias of its apply configurations (client-go's
	// applyconfigurations).
	Import, Alias, AC string
	// Client is its typed client in kubernetes.Interface, to be called with
	// a namespace.
	Client string
	// minimal is Go code of the smallest valid object of the kind with the
	// metadata meta, for tests.
	minimal string
}

// knownKinds are the kinds -owns accepts, in the order the handler applies
// them: a Deployment's ServiceAccount exists before its pods, a Role before
// the RoleBinding that binds it.
var knownKinds = []ownedKind{
	{Kind: "ConfigMap", Version: "v1", Resource: "configmaps", Import: "k8s.io/api/core/v1", Alias: "corev1", AC: "corev1ac", Client: "CoreV1().ConfigMaps",
		minimal: `&corev1.ConfigMap{ObjectMeta: meta}`},
	{Kind: "Secret", Version: "v1", Resource: "secrets", Import: "k8s.io/api/core/v1", Alias: "corev1", AC: "corev1ac", Client: "CoreV1().Secrets",
		minimal: `&corev1.Secret{ObjectMeta: meta}`},
	{Kind: "ServiceAccount", Version: "v1", Resource: "serviceaccounts", Import: "k8s.io/api/core/v1", Alias: "corev1", AC: "corev1ac", Client: "CoreV1().ServiceAccounts",
		minimal: `&corev1.ServiceAccount{ObjectMeta: meta}`},
	{Kind: "Role", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles", Import: "k8s.io/api/rbac/v1", Alias: "rbacv1", AC: "rbacv1ac", Client: "RbacV1().Roles",
		minimal: `&rbacv1.Role{ObjectMeta: meta}`},
	{Kind: "RoleBinding", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings", Import: "k8s.io/api/rbac/v1", Alias: "rbacv1", AC: "rbacv1ac", Client: "RbacV1().RoleBindings",
		minimal: `&rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name}}`},
	{Kind: "Service", Version: "v1", Resource: "services", Import: "k8s.io/api/core/v1", Alias: "corev1", AC: "corev1ac", Client: "CoreV1().Services",
		minimal: `&corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}`},
	{Kind: "Deployment", Group: "apps", Version: "v1", Resource: "deployments", Import: "k8s.io/api/apps/v1", Alias: "appsv1", AC: "appsv1ac", Client: "AppsV1().Deployments",
		minimal: `&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				// As the operator's policy on Deployments wants them.
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					}}},
				},
			},
		}}`},
}

func knownKind(kind string) (ownedKind, bool) {
	for _, k := range knownKinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return ownedKind{}, false
}

// knownKindFold finds kind ignoring case, for a hint.
func knownKindFold(kind string) (ownedKind, bool) {
	for _, k := range knownKinds {
		if strings.EqualFold(k.Kind, kind) {
			return k, true
		}
	}
	return ownedKind{}, false
}

func knownKindNames() []string { return knownNames(knownKinds) }

// knownNames returns the kinds of kinds.
func knownNames(kinds []ownedKind) []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Kind
	}
	return names
}

// goType is the kind's Go type, e.g. *corev1.ConfigMap.
func (k ownedKind) goType() string { return "*" + k.Alias + "." + k.Kind }

// groupVersion is how the kind's GroupVersion is named in Go.
func (k ownedKind) groupVersion() string { return k.Alias + ".SchemeGroupVersion" }
