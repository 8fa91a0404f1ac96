package main

// The operator's internal/handler/handler.go: the domain logic, and the
// status it reports. children.go writes its children.go, handlertest.go its
// test.

func handlerGo(op operator) *goFile {
	f := newGoFile(op, "handler")
	if len(op.Owns) == 0 {
		f.doc = `Package handler is the $Name operator's domain logic: the $Kind
controller's handler. It receives the latest state of a $Kind and makes the
world match it, then says so in the $Kind's status: the Ready condition and
observedGeneration, the generation of the spec the status describes. It
runs in the $Kind controller's workers, one worker per $Kind at a time.

So far a $Kind asks for nothing but its status. To make objects from it,
apply each with the $Kind as its controller owner, and give the $Kind
controller a source of its kind (controller.Owns, given to controller.New
in internal/operator): make new-operator with -owns writes both.`
	} else {
		f.doc = `Package handler is the $Name operator's domain logic: the $Kind
controller's handler. It receives the latest state of a $Kind and makes the
world match it: ` + op.ownedList() + map[bool]string{true: ", each", false: ","}[len(op.Owns) > 1] + ` named after the $Kind,
written with server-side apply (children.go). The $Kind's status then says
whether they are in place` + map[bool]string{true: " and ready (the Deployment's pods, read from\nthe cache of its source)", false: ""}[op.owns("Deployment")] + `: the Ready condition, for the
generation observedGeneration.

It runs in the $Kind controller's workers, one worker per $Kind at a time.
The owned kinds are sources of that controller (Sources): a child changed
or deleted by hand, or whose state changes, queues its $Kind. There is no
delete logic: the garbage collector deletes the children with their $Kind,
their controller owner.`
	}
	f.code(`// Events records Kubernetes Events; kooper/event's Recorder is one.
type Events interface {
	Normal(obj runtime.Object, reason, msgFmt string, args ...any)
	Warning(obj runtime.Object, reason, msgFmt string, args ...any)
}

// Handler handles $Plural.
type Handler struct {
	// Client writes the $Plural' status. Required.
	Client versioned.Interface
`)
	if len(op.Owns) > 0 {
		f.code(`	// Kube applies the children. Required.
	Kube kubernetes.Interface
`)
	}
	if len(op.Owns) > 0 && op.Cluster {
		f.code(`	// ChildNamespace holds every $Kind's children: a $Kind has no
	// namespace of its own. Required.
	ChildNamespace string
`)
	}
	if op.servesNamespaces() {
		f.code(`	// ServedNamespaces are the namespaces whose $Plural get children: the
	// operator's RBAC lets it write there only. A $Kind elsewhere is not
	// Ready, with reason NotServed. Required.
	ServedNamespaces []string
`)
	}
	f.code(`	// FieldManager names the operator in the managedFields of what it
	// writes. Required.
	FieldManager string
	// Events records an Event when a $Kind's Ready condition changes.
	// Default: none.
	Events Events
`)
	if op.owns("Deployment") {
		f.code(`	// Deployments returns the Deployments a $Kind controls, as the cache
	// of their source holds them. Required; Sources sets it.
	Deployments func($v *$Alias.$Kind) []*appsv1.Deployment

	deployments map[string]*controller.Watched[*appsv1.Deployment] // by namespace
`)
	}
	f.code(`}

// New returns h as a controller.Handler of $Plural.
func (h *Handler) New() controller.Handler {
	return controller.Typed(h.Handle)
}

`)
	if len(op.Owns) == 0 {
		f.code(`// Handle makes the world match $v and reports it in $v's status.
func (h *Handler) Handle(ctx context.Context, $v *$Alias.$Kind) error {
	if $v.DeletionTimestamp != nil {
		return nil // nothing to clean up: a finalizer would say otherwise
	}
	// Make the world match $v.Spec here; a failure is a False Ready
	// condition and an error (retried), or a controller.Terminal error
	// when retrying cannot help.
	return h.setStatus(ctx, $v, metav1.ConditionTrue, $Alias.ReasonReconciled, "reconciled")
}
`)
	} else {
		ready := "in place"
		if op.owns("Deployment") {
			ready = "in place and ready"
		}
		f.code(`// Handle applies $v's children and reports in $v's status whether they
// are ` + ready + `. A failure is retried, with backoff.
func (h *Handler) Handle(ctx context.Context, $v *$Alias.$Kind) error {
	if $v.DeletionTimestamp != nil {
		return nil // the garbage collector deletes the children
	}
` + notServed(op) + `	notReady, err := h.apply(ctx, $v)
	switch {
	case err != nil:
		return errors.Join(err, h.setStatus(ctx, $v, metav1.ConditionFalse, $Alias.ReasonFailed, err.Error()))
	case notReady != "":
		return h.setStatus(ctx, $v, metav1.ConditionFalse, $Alias.ReasonNotReady, notReady)
	}
	return h.setStatus(ctx, $v, metav1.ConditionTrue, $Alias.ReasonReconciled, "every child is ` + ready + `")
}

`)
		if op.Cluster {
			f.code(`// namespace returns the namespace of $v's children.
func (h *Handler) namespace(*$Alias.$Kind) string { return h.ChildNamespace }
`)
		} else {
			f.code(`// namespace returns the namespace of $v's children: its own (an owner
// reference cannot cross namespaces).
func (h *Handler) namespace($v *$Alias.$Kind) string { return $v.Namespace }
`)
		}
	}

	args := "$v.Name"
	if !op.Cluster {
		args = "$v.Name, $v.Namespace"
	}
	f.code(`
// setStatus applies $v's status, if it changed, and records an Event when
// the Ready condition changes. The operator's field manager owns
// observedGeneration and the Ready condition: other conditions stay.
func (h *Handler) setStatus(ctx context.Context, $v *$Alias.$Kind, st metav1.ConditionStatus, reason, msg string) error {
	conds := slices.Clone($v.Status.Conditions)
	if !meta.SetStatusCondition(&conds, metav1.Condition{
		Type: $Alias.ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: $v.Generation,
	}) && $v.Status.ObservedGeneration == $v.Generation {
		return nil // as it is: nothing to write
	}
	c := meta.FindStatusCondition(conds, $Alias.ConditionReady) // its transition time kept unless its status changed
	ac := $ACAlias.$Kind(` + args + `).WithStatus($ACAlias.$KindStatus().WithObservedGeneration($v.Generation).
		WithConditions(metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).
			WithMessage(c.Message).WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime)))
	opts := metav1.ApplyOptions{FieldManager: h.FieldManager, Force: true}
	_, err := h.Client.$GroupGoV1alpha1().$Plural(` + map[bool]string{true: "", false: "$v.Namespace"}[op.Cluster] + `).ApplyStatus(ctx, ac, opts)
	switch {
	case apierrors.IsNotFound(err):
		return nil // deleted meanwhile
	case err != nil:
		return fmt.Errorf("could not apply the status of $Kind %s: %w", ` + map[bool]string{true: "$v.Name", false: `$v.Namespace+"/"+$v.Name`}[op.Cluster] + `, err)
	}
	if was := meta.FindStatusCondition($v.Status.Conditions, $Alias.ConditionReady); h.Events != nil && (was == nil || was.Status != st || was.Reason != reason) {
		if st == metav1.ConditionTrue {
			h.Events.Normal($v, reason, "%s", msg)
		} else {
			h.Events.Warning($v, reason, "%s", msg)
		}
	}
	return nil
}
`)
	return f
}

// notServed is Handle's check that the operator serves $v's namespace.
func notServed(op operator) string {
	if !op.servesNamespaces() {
		return ""
	}
	return `	if !slices.Contains(h.ServedNamespaces, $v.Namespace) {
		msg := fmt.Sprintf("the $Name operator serves namespaces %s only, not %s: add it to its -served-namespaces and give it a Role there (manifests/rbac/$Name/children.yaml)",
			strings.Join(h.ServedNamespaces, ", "), $v.Namespace)
		if err := h.setStatus(ctx, $v, metav1.ConditionFalse, $Alias.ReasonNotServed, msg); err != nil {
			return err
		}
		return controller.Terminal(errors.New(msg))
	}
`
}
