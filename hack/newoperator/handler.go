package main

// The operator's internal/handler/handler.go: the domain logic. children.go
// writes its children.go, handlertest.go its test.

func handlerGo(op operator) *goFile {
	f := newGoFile(op, "handler")
	if len(op.Owns) == 0 {
		f.doc = `Package handler is the $Name operator's domain logic: the $Kind
controller's handler. It receives the latest state of a $Kind and makes the
world match it, then says so in the $Kind's status: the Ready condition and
observedGeneration, the generation of the spec the status describes. It
runs in the $Kind controller's workers, one worker per $Kind at a time.

So far a $Kind asks for nothing but its status. Make objects from it here:
a child object gets an owner reference (owner.SetController) so that the
garbage collector deletes it with the $Kind, and the $Kind controller a
source of the child's kind (controller.Owns, given to controller.New,
internal/operator) so that a child changed or deleted by hand queues its
$Kind at once. make new-operator with -owns writes both for you.`
	} else {
		f.doc = `Package handler is the $Name operator's domain logic: the $Kind
controller's handler. It receives the latest state of a $Kind and makes the
world match it: ` + op.ownedList() + `, each named after the $Kind
(children.go). A missing child is created with the $Kind as its controller
owner (owner.SetController); one that differs from what the $Kind asks for
is updated, leaving the fields the operator does not set alone. The $Kind's
status then says whether everything is in place (the Ready condition) for
which generation (observedGeneration).

It runs in the $Kind controller's workers, one worker per $Kind at a time,
whichever kind changed: the owned kinds are sources of that controller
(controller.Owns, internal/operator), whose changes and deletions queue the
child's $Kind, so a child edited or deleted by hand is restored at once.

There is no delete logic: every child has a controller owner reference to
its $Kind, and the garbage collector deletes it with the $Kind. An object of
a child's name that the $Kind does not control is never taken over: the
$Kind is not Ready, with reason Conflict, until it is gone.`
	}

	if len(op.Owns) > 0 {
		f.code(`// Labels of every child: the $Kind controller's sources watch only
// objects labelled ManagedByLabel=ManagedBy; OwnerLabel names the $Kind, and
// selects its pods.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "kooper-$Name"
	OwnerLabel     = "$Group/$kind"
)

`)
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
		f.code(`	// Kube reads and writes the children. Required.
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
	// operator's RBAC lets it read and write them there only. A $Kind
	// elsewhere is not Ready, with reason NotServed. Required.
	ServedNamespaces []string
`)
	}
	f.code(`	// FieldManager names the operator in the managedFields of what it
	// writes. Required.
	FieldManager string
`)
	if len(op.Owns) > 0 {
		f.code(`	// Events records an Event when a child is created and when a $Kind's
	// Ready condition changes. Default: none.
`)
	} else {
		f.code(`	// Events records an Event when a $Kind's Ready condition changes.
	// Default: none.
`)
	}
	f.code(`	Events Events
	// Now returns the time. Default time.Now.
	Now func() time.Time
}

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
		f.code(`// child is one kind of object a $Kind owns.
type child struct {
	kind string
	// ensure makes $v's child of this kind match $v; created says it was
	// missing.
	ensure func(ctx context.Context, $v *$Alias.$Kind) (created bool, err error)
}

// children are the kinds a $Kind owns, in the order they are written.
func (h *Handler) children() []child {
	return []child{
`)
		for _, k := range op.Owns {
			f.printf("\t\t{%q, h.%s},\n", k.Kind, k.method())
		}
		f.code(`	}
}

// Handle makes $v's children match $v and reports them in $v's status.
func (h *Handler) Handle(ctx context.Context, $v *$Alias.$Kind) error {
	if $v.DeletionTimestamp != nil {
		return nil // the garbage collector deletes the children
	}
` + notServed(op) + `	var failed, conflicts []error
	for _, c := range h.children() {
		created, err := c.ensure(ctx, $v)
		switch {
		case errors.Is(err, errConflict):
			conflicts = append(conflicts, err)
		case err != nil:
			failed = append(failed, err)
		case created:
			h.events().Normal($v, "Created", "created %s %s/%s", c.kind, h.namespace($v), $v.Name)
		}
	}

	// A failure may pass: retry it, with backoff. A conflict lasts until
	// someone deletes the object: the error is terminal, and the $Kind is
	// handled again when it changes or at the next resync.
	switch {
	case len(failed) > 0:
		if err := h.setStatus(ctx, $v, metav1.ConditionFalse, $Alias.ReasonFailed, messages(failed)); err != nil {
			return err
		}
		return errors.Join(failed...)
	case len(conflicts) > 0:
		if err := h.setStatus(ctx, $v, metav1.ConditionFalse, $Alias.ReasonConflict, messages(conflicts)); err != nil {
			return err
		}
		return controller.Terminal(errors.Join(conflicts...))
	}
	return h.setStatus(ctx, $v, metav1.ConditionTrue, $Alias.ReasonReconciled, fmt.Sprintf("%d objects in place", len(h.children())))
}

// messages joins errors into one line, for a condition's message.
func messages(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
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

	// setStatus, common to both.
	client := "h.Client.$GroupGoV1alpha1().$Plural()"
	key := "$v.Name"
	if !op.Cluster {
		client = "h.Client.$GroupGoV1alpha1().$Plural($v.Namespace)"
		key = "$v.Namespace+\"/\"+$v.Name"
	}
	f.code(`
// setStatus writes $v's status, through the status subresource, if it
// changed, and records an Event when the Ready condition changes. A conflict
// means $v is stale and a newer version is queued: that handling writes the
// status.
func (h *Handler) setStatus(ctx context.Context, $v *$Alias.$Kind, st metav1.ConditionStatus, reason, msg string) error {
	s := $v.Status.DeepCopy()
	s.ObservedGeneration = $v.Generation
	status.Set(&s.Conditions, metav1.Condition{
		Type: $Alias.ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: $v.Generation,
	}, h.now())
	// Semantic: times compare as instants, nil and empty lists are equal.
	// status.Set kept LastTransitionTime unless the Status changed, so a
	// status that only repeats the last one is not written.
	if equality.Semantic.DeepEqual(&$v.Status, s) {
		return nil
	}
	was, _ := status.Get($v.Status.Conditions, $Alias.ConditionReady)
	$v.Status = *s
	_, err := ` + client + `.UpdateStatus(ctx, $v, metav1.UpdateOptions{FieldManager: h.FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("could not update the status of $Kind %s: %w", ` + key + `, err)
	}
	if was.Status != st || was.Reason != reason {
		if st == metav1.ConditionTrue {
			h.events().Normal($v, reason, "%s", msg)
		} else {
			h.events().Warning($v, reason, "%s", msg)
		}
	}
	return nil
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) events() Events {
	if h.Events != nil {
		return h.Events
	}
	return noEvents{}
}

// noEvents records nothing.
type noEvents struct{}

func (noEvents) Normal(runtime.Object, string, string, ...any)  {}
func (noEvents) Warning(runtime.Object, string, string, ...any) {}
`)
	return f
}

// notServed is Handle's check that the operator serves $v's namespace.
func notServed(op operator) string {
	if !op.servesNamespaces() {
		return ""
	}
	return `	if !slices.Contains(h.ServedNamespaces, $v.Namespace) {
		msg := fmt.Sprintf("the $Name operator serves namespaces %s only, not %s: add it to its -served-namespaces and give it a Role there (manifests/rbac/$Name)",
			strings.Join(h.ServedNamespaces, ", "), $v.Namespace)
		if err := h.setStatus(ctx, $v, metav1.ConditionFalse, $Alias.ReasonNotServed, msg); err != nil {
			return err
		}
		return controller.Terminal(errors.New(msg))
	}
`
}
