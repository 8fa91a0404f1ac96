package main

// The operator's internal/handler/children.go, with -owns: ensure, which
// creates or updates one child, and one function per owned kind building
// the child the custom resource asks for.

func childrenGo(op operator) *goFile {
	f := newGoFile(op, "handler")
	f.code(`// errConflict is wrapped by ensure's error when an object of a child's name
// exists that the $Kind does not control.
var errConflict = errors.New("it exists and is not controlled by this $Kind")

// object is a child's Go type, such as *corev1.ConfigMap.
type object interface {
	metav1.Object
	runtime.Object
}

// writer is what ensure uses of a kind's typed client, such as
// CoreV1().ConfigMaps(namespace).
type writer[T object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// ensure makes the child named like want match it. A missing child is
// created with $v as its controller owner, so that the garbage collector
// deletes it with $v. An existing one that $v controls gets want's labels,
// then set copies the other fields the operator owns from want into it, and
// it is updated if that changed it: fields set by others (the API server's
// defaults, another controller's) stay. One that $v does not control is
// left alone: errConflict.
func ensure[T object](ctx context.Context, h *Handler, kind string, $v *$Alias.$Kind, typed writer[T], want T, set func(got T)) (created bool, err error) {
	name := want.GetNamespace() + "/" + want.GetName()
	got, err := typed.Get(ctx, want.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if err := owner.SetController($v, want, $Alias.SchemeGroupVersion.WithKind("$Kind")); err != nil {
			return false, err
		}
		if _, err := typed.Create(ctx, want, metav1.CreateOptions{FieldManager: h.FieldManager}); err != nil {
			return false, fmt.Errorf("could not create %s %s: %w", kind, name, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("could not read %s %s: %w", kind, name, err)
	}
	if ref := metav1.GetControllerOfNoCopy(got); ref == nil || ref.UID != $v.UID {
		return false, fmt.Errorf("%s %s: %w: delete it, or rename the $Kind", kind, name, errConflict)
	}
	// got came from the API server for this call: it is ours to change.
	before := got.DeepCopyObject()
	labels := maps.Clone(got.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, want.GetLabels())
	got.SetLabels(labels)
	set(got)
	if equality.Semantic.DeepEqual(before, got) {
		return false, nil
	}
	if _, err := typed.Update(ctx, got, metav1.UpdateOptions{FieldManager: h.FieldManager}); err != nil {
		return false, fmt.Errorf("could not update %s %s: %w", kind, name, err)
	}
	return false, nil
}

// meta returns the metadata of $v's children: named after $v, in their
// namespace, labelled as the operator's and as $v's.
func (h *Handler) meta($v *$Alias.$Kind) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      $v.Name,
		Namespace: h.namespace($v),
		Labels:    map[string]string{ManagedByLabel: ManagedBy, OwnerLabel: $v.Name},
	}
}
`)
	if op.owns("Service") || op.owns("Deployment") {
		f.code(`
// podLabels are the labels of $v's pods, which its Service selects.
func podLabels($v *$Alias.$Kind) map[string]string {
	return map[string]string{OwnerLabel: $v.Name}
}
`)
	}
	if op.owns("Deployment") {
		f.code(`
// PlaceholderImage is the image of the Deployment's container until you
// choose yours: it serves nothing and does nothing, and runs as any user.
const PlaceholderImage = "registry.k8s.io/pause:3.10"
`)
	}
	for _, k := range op.Owns {
		f.code("\n")
		switch k.Kind {
		case "ConfigMap":
			f.code(`// configMap makes $v's ConfigMap match $v: its data holds the greeting.
func (h *Handler) configMap(ctx context.Context, $v *$Alias.$Kind) (bool, error) {
	want := &corev1.ConfigMap{
		ObjectMeta: h.meta($v),
		Data:       map[string]string{"greeting": $v.Spec.Greeting},
	}
	return ensure(ctx, h, "ConfigMap", $v, h.Kube.CoreV1().ConfigMaps(want.Namespace), want, func(got *corev1.ConfigMap) {
		got.Data = want.Data
	})
}
`)
		case "Secret":
			f.code(`// secret makes $v's Secret match $v: its data holds the greeting. A
// real operator keeps what must stay secret here: a generated password, a
// token.
func (h *Handler) secret(ctx context.Context, $v *$Alias.$Kind) (bool, error) {
	want := &corev1.Secret{
		ObjectMeta: h.meta($v),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"greeting": []byte($v.Spec.Greeting)},
	}
	return ensure(ctx, h, "Secret", $v, h.Kube.CoreV1().Secrets(want.Namespace), want, func(got *corev1.Secret) {
		got.Data = want.Data // the type cannot change: it was set at creation
	})
}
`)
		case "ServiceAccount":
			f.code(`// serviceAccount makes $v's ServiceAccount match $v. Its token is not
// mounted into pods unless a pod asks for it.
func (h *Handler) serviceAccount(ctx context.Context, $v *$Alias.$Kind) (bool, error) {
	want := &corev1.ServiceAccount{
		ObjectMeta:                   h.meta($v),
		AutomountServiceAccountToken: ptr.To(false),
	}
	return ensure(ctx, h, "ServiceAccount", $v, h.Kube.CoreV1().ServiceAccounts(want.Namespace), want, func(got *corev1.ServiceAccount) {
		got.AutomountServiceAccountToken = want.AutomountServiceAccountToken
	})
}
`)
		case "Role":
			f.code(`// role makes $v's Role match $v: it lets whoever it is bound to list and
// watch $Plural. RBAC lets the operator grant only what it holds itself
// (list and watch of $Plural); the admission policy
// (manifests/rbac/$Name/children_policy.yaml) refuses any rule on another
// API group.
func (h *Handler) role(ctx context.Context, $v *$Alias.$Kind) (bool, error) {
	want := &rbacv1.Role{
		ObjectMeta: h.meta($v),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{$Alias.GroupName},
			Resources: []string{"$plural"},
			Verbs:     []string{"list", "watch"},
		}},
	}
	return ensure(ctx, h, "Role", $v, h.Kube.RbacV1().Roles(want.Namespace), want, func(got *rbacv1.Role) {
		got.Rules = want.Rules
	})
}
`)
		case "RoleBinding":
			subject := "a ServiceAccount named after $v in its namespace (yours to make)"
			if op.owns("ServiceAccount") {
				subject = "$v's ServiceAccount"
			}
			f.printf(`// roleBinding makes $v's RoleBinding match $v: it binds $v's Role to
// %s. The admission policy refuses a binding
// to another role or to a subject other than a ServiceAccount of its
// namespace.
func (h *Handler) roleBinding(ctx context.Context, $v *$Alias.$Kind) (bool, error) {
	meta := h.meta($v)
	want := &rbacv1.RoleBinding{
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: meta.Name, Namespace: meta.Namespace}},
	}
	return ensure(ctx, h, "RoleBinding", $v, h.Kube.RbacV1().RoleBindings(want.Namespace), want, func(got *rbacv1.RoleBinding) {
		got.Subjects = want.Subjects // the role cannot change: it was set at creation
	})
}
`, subject)
		case "Service":
			what := "pods labelled OwnerLabel=<name>, yours"
			if op.owns("Deployment") {
				what = "the pods of $v's Deployment"
			}
			f.printf(`// service makes $v's Service match $v: port 80 to the port named http of
// %s.
func (h *Handler) service(ctx context.Context, $v *$Alias.$Kind) (bool, error) {
	want := &corev1.Service{
		ObjectMeta: h.meta($v),
		Spec: corev1.ServiceSpec{
			Selector: podLabels($v),
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http"),
			}},
		},
	}
	return ensure(ctx, h, "Service", $v, h.Kube.CoreV1().Services(want.Namespace), want, func(got *corev1.Service) {
		// The cluster IP and type stay as the API server set them.
		got.Spec.Selector = want.Spec.Selector
		got.Spec.Ports = want.Spec.Ports
	})
}
`, what)
		case "Deployment":
			f.code(`// deployment makes $v's Deployment match $v: one replica of a container
// named app, the placeholder image until you choose yours, with the greeting
// in its environment. The pods run locked down, as the restricted Pod
// Security level requires.
func (h *Handler) deployment(ctx context.Context, $v *$Alias.$Kind) (bool, error) {
	app := corev1.Container{
		Name:  "app",
		Image: PlaceholderImage,
		Env:   []corev1.EnvVar{{Name: "GREETING", Value: $v.Spec.Greeting}},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	pod := corev1.PodSpec{
`)
			if op.owns("ServiceAccount") {
				f.code("\t\tServiceAccountName:           $v.Name,\n")
			}
			f.code(`		AutomountServiceAccountToken: ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{app},
	}
	want := &appsv1.Deployment{
		ObjectMeta: h.meta($v),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels($v)},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels($v)}, Spec: pod},
		},
	}
	return ensure(ctx, h, "Deployment", $v, h.Kube.AppsV1().Deployments(want.Namespace), want, func(got *appsv1.Deployment) {
		// Field by field: the API server defaults many fields of a pod
		// template, and those stay. The selector cannot change: it was set
		// at creation.
		got.Spec.Replicas = want.Spec.Replicas
		tpl := &got.Spec.Template
		labels := maps.Clone(tpl.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, podLabels($v))
		tpl.Labels = labels
`)
			if op.owns("ServiceAccount") {
				f.code("\t\ttpl.Spec.ServiceAccountName = pod.ServiceAccountName\n")
			}
			f.code(`		tpl.Spec.AutomountServiceAccountToken = pod.AutomountServiceAccountToken
		tpl.Spec.SecurityContext = pod.SecurityContext
		i := slices.IndexFunc(tpl.Spec.Containers, func(c corev1.Container) bool { return c.Name == app.Name })
		if i < 0 {
			tpl.Spec.Containers = append(tpl.Spec.Containers, app)
			return
		}
		c := &tpl.Spec.Containers[i]
		c.Image, c.Env, c.Ports, c.Resources, c.SecurityContext = app.Image, app.Env, app.Ports, app.Resources, app.SecurityContext
	})
}
`)
		}
	}
	return f
}
