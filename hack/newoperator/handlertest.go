package main

import "strings"

// The operator's internal/handler/handler_test.go: table-driven, on the
// generated fake clientset and client-go's.

// testDrift is, per owned kind, Go code of an object named demo in the
// children's namespace that differs from what demo asks for, and of a
// check that an object holds what demo asks for.
var testDrift = map[string]struct{ drifted, asked string }{
	"ConfigMap": {
		drifted: `&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"greeting": "changed by hand"}}`,
		asked:   `func(o metav1.Object) bool { return o.(*corev1.ConfigMap).Data["greeting"] == "hello" }`,
	},
	"Secret": {
		drifted: `&corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"greeting": []byte("changed by hand")}}`,
		asked:   `func(o metav1.Object) bool { return string(o.(*corev1.Secret).Data["greeting"]) == "hello" }`,
	},
	"ServiceAccount": {
		drifted: `&corev1.ServiceAccount{ObjectMeta: meta, AutomountServiceAccountToken: ptr.To(true)}`,
		asked: `func(o metav1.Object) bool {
		mount := o.(*corev1.ServiceAccount).AutomountServiceAccountToken
		return mount != nil && !*mount
	}`,
	},
	"Role": {
		drifted: `&rbacv1.Role{ObjectMeta: meta}`,
		asked:   `func(o metav1.Object) bool { return len(o.(*rbacv1.Role).Rules) == 1 }`,
	},
	"RoleBinding": {
		drifted: `&rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "demo"}}`,
		asked: `func(o metav1.Object) bool {
		s := o.(*rbacv1.RoleBinding).Subjects
		return len(s) == 1 && s[0].Kind == rbacv1.ServiceAccountKind && s[0].Name == "demo"
	}`,
	},
	"Service": {
		drifted: `&corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}`,
		asked: `func(o metav1.Object) bool {
		s := o.(*corev1.Service).Spec
		return len(s.Ports) == 1 && s.Ports[0].Port == 80 && s.Selector[handler.OwnerLabel] == "demo"
	}`,
	},
	"Deployment": {
		drifted: `&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}}`,
		asked: `func(o metav1.Object) bool {
		d := o.(*appsv1.Deployment).Spec
		c := d.Template.Spec.Containers
		return *d.Replicas == 1 && len(c) == 1 && c[0].Image == handler.PlaceholderImage && len(c[0].Env) == 1 && c[0].Env[0].Value == "hello"
	}`,
	},
}

func handlerTestGo(op operator) *goFile {
	f := newGoFile(op, "handler_test")
	ns, nsField := "", ""
	if !op.Cluster {
		ns, nsField = "namespace", "Namespace: namespace, "
	}
	switch {
	case op.Cluster && len(op.Owns) > 0:
		f.code("// childNamespace holds demo's children (a cluster-scoped $Kind has no\n// namespace).\nconst childNamespace = \"team\"\n\n")
	case !op.Cluster && len(op.Owns) > 0:
		f.code("// namespace holds demo and its children.\nconst namespace = \"team\"\n\n")
	case !op.Cluster:
		f.code("// namespace holds demo.\nconst namespace = \"team\"\n\n")
	}
	f.printf(`// demo is the $Kind of the tests, at generation 2, as the API server
// defaults it.
func demo() *$Alias.$Kind {
	return &$Alias.$Kind{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", %sUID: "demo-uid", Generation: 2},
		Spec:       $Alias.$KindSpec{Greeting: "hello"},
	}
}

// stored returns demo as the fake API server holds it.
func stored(t *testing.T, client *fake.Clientset) *$Alias.$Kind {
	t.Helper()
	got, err := client.$GroupGoV1alpha1().$Plural(%s).Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// events remembers the reasons of the Events recorded.
type events struct{ reasons []string }

func (e *events) Normal(_ runtime.Object, reason, _ string, _ ...any) {
	e.reasons = append(e.reasons, reason)
}

func (e *events) Warning(_ runtime.Object, reason, _ string, _ ...any) {
	e.reasons = append(e.reasons, reason)
}

`, nsField, ns)

	newHandler := `&handler.Handler{Client: client, FieldManager: "test", Events: ev}`
	switch {
	case len(op.Owns) > 0 && op.Cluster:
		newHandler = `&handler.Handler{Client: client, Kube: kube, ChildNamespace: childNamespace, FieldManager: "test", Events: ev}`
	case len(op.Owns) > 0:
		newHandler = `&handler.Handler{Client: client, Kube: kube, ServedNamespaces: []string{namespace}, FieldManager: "test", Events: ev}`
	}

	if len(op.Owns) == 0 {
		f.code(`func TestHandle(t *testing.T) {
	tests := []struct {
		name       string
		deleting   bool
		wantReady  bool // else no status is written
		wantEvents []string
	}{
		{name: "a new $Kind is Ready for its generation", wantReady: true, wantEvents: []string{$Alias.ReasonReconciled}},
		{name: "a $Kind being deleted is left alone", deleting: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			$v := demo()
			if tt.deleting {
				$v.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			client := fake.NewClientset($v.DeepCopy())
			ev := &events{}
			h := ` + newHandler + `
			if err := h.Handle(context.Background(), $v); err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			got := stored(t, client)
			if ready := status.IsTrueFor(got.Status.Conditions, $Alias.ConditionReady, 2) && got.Status.ObservedGeneration == 2; ready != tt.wantReady {
				t.Errorf("got status %+v, want Ready for generation 2: %v", got.Status, tt.wantReady)
			}
			if !slices.Equal(ev.reasons, tt.wantEvents) {
				t.Errorf("got events %q, want %q", ev.reasons, tt.wantEvents)
			}
		})
	}
}

`)
	} else {
		first := op.Owns[0]
		f.code(`// existing returns, in the children's namespace, a ` + first.Kind + ` named like demo's
// that differs from what demo asks for; controlled by demo or not.
func existing(controlled bool) runtime.Object {
	meta := metav1.ObjectMeta{Name: "demo", Namespace: childNamespace}
	if controlled {
		meta.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(demo(), $Alias.SchemeGroupVersion.WithKind("$Kind"))}
	}
	return ` + testDrift[first.Kind].drifted + `
}

// children returns demo's children as the fake API server holds them, by
// kind; a missing one is absent.
func children(t *testing.T, kube *kubefake.Clientset) map[string]metav1.Object {
	t.Helper()
	ctx := context.Background()
	objs := map[string]metav1.Object{}
`)
		for _, k := range op.Owns {
			f.printf(`	if obj, err := kube.%s(childNamespace).Get(ctx, "demo", metav1.GetOptions{}); err == nil {
		objs[%q] = obj
	}
`, k.Client, k.Kind)
		}
		f.code(`	return objs
}

// asked tells, per kind, whether a child holds what demo asks for.
var asked = map[string]func(metav1.Object) bool{
`)
		for _, k := range op.Owns {
			f.printf("\t%q: %s,\n", k.Kind, testDrift[k.Kind].asked)
		}
		var created []string
		for range op.Owns[1:] {
			created = append(created, `"Created"`)
		}
		others := ""
		if len(created) > 0 {
			others = strings.Join(created, ", ") + ", "
		}
		f.code(`}

func TestHandle(t *testing.T) {
	tests := []struct {
		name string
		// existing are in the cluster before the handling.
		existing []runtime.Object
		// refused is a resource whose creation the API server refuses.
		refused    string
		wantReason string // of the Ready condition: True for ReasonReconciled only
		wantErr    string // "", "terminal" or "retried"
		wantEvents []string
	}{
		{
			name:       "a new $Kind gets its children, controlled by it, and is Ready",
			wantReason: $Alias.ReasonReconciled,
			wantEvents: []string{` + others + `"Created", $Alias.ReasonReconciled},
		},
		{
			name:       "a child changed by hand is restored",
			existing:   []runtime.Object{existing(true)},
			wantReason: $Alias.ReasonReconciled,
			wantEvents: []string{` + others + `$Alias.ReasonReconciled},
		},
		{
			name:       "an object the $Kind does not control is never taken over",
			existing:   []runtime.Object{existing(false)},
			wantReason: $Alias.ReasonConflict,
			wantErr:    "terminal",
			wantEvents: []string{` + others + `$Alias.ReasonConflict},
		},
		{
			name:       "a refused write is retried",
			refused:    "` + first.Resource + `",
			wantReason: $Alias.ReasonFailed,
			wantErr:    "retried",
			wantEvents: []string{` + others + `$Alias.ReasonFailed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := kubefake.NewClientset(tt.existing...)
			if tt.refused != "" {
				kube.PrependReactor("create", tt.refused, func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: tt.refused}, "demo", errors.New("no RBAC"))
				})
			}
			client := fake.NewClientset(demo())
			ev := &events{}
			h := ` + newHandler + `

			err := h.Handle(context.Background(), demo())
			switch tt.wantErr {
			case "":
				if err != nil {
					t.Fatalf("got error %v, want nil", err)
				}
			case "terminal":
				if !controller.IsTerminal(err) {
					t.Errorf("got error %v, want a terminal error", err)
				}
			case "retried":
				if err == nil || controller.IsTerminal(err) {
					t.Errorf("got error %v, want an error that is retried", err)
				}
			}
			got := stored(t, client)
			c, _ := status.Get(got.Status.Conditions, $Alias.ConditionReady)
			wantStatus := metav1.ConditionFalse
			if tt.wantReason == $Alias.ReasonReconciled {
				wantStatus = metav1.ConditionTrue
			}
			if c.Status != wantStatus || c.Reason != tt.wantReason || c.ObservedGeneration != 2 || got.Status.ObservedGeneration != 2 {
				t.Errorf("got status %+v, want Ready %s with reason %s for generation 2", got.Status, wantStatus, tt.wantReason)
			}
			if !slices.Equal(ev.reasons, tt.wantEvents) {
				t.Errorf("got events %q, want %q", ev.reasons, tt.wantEvents)
			}

			objs := children(t, kube)
			for kind, isAsked := range asked {
				obj, ok := objs[kind]
				switch {
				case kind == "` + first.Kind + `" && tt.wantReason == $Alias.ReasonConflict:
					if !ok || len(obj.GetOwnerReferences()) > 0 || isAsked(obj) {
						t.Errorf("got %s %+v, want it untouched", kind, obj)
					}
				case kind == "` + first.Kind + `" && tt.wantReason == $Alias.ReasonFailed:
					if ok {
						t.Errorf("got %s %+v, want none", kind, obj)
					}
				case !ok:
					t.Errorf("got no %s, want one", kind)
				default:
					ref := metav1.GetControllerOf(obj)
					if ref == nil || ref.UID != "demo-uid" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
						t.Errorf("%s: got controller %+v, want demo, blocking its deletion", kind, ref)
					}
					if l := obj.GetLabels(); l[handler.ManagedByLabel] != handler.ManagedBy || l[handler.OwnerLabel] != "demo" {
						t.Errorf("%s: got labels %v, want managed-by and owner", kind, l)
					}
					if !isAsked(obj) {
						t.Errorf("got %s %+v, want what demo asks for", kind, obj)
					}
				}
			}
		})
	}
}

`)
	}

	// Common: a second handling writes nothing; deletion is left to the
	// garbage collector.
	kubeNew, kubeActions, kubeClear := "", "", ""
	if len(op.Owns) > 0 {
		kubeNew = "\tkube := kubefake.NewClientset()\n"
		kubeActions = "kube.Actions(), "
		kubeClear = "\tkube.ClearActions()\n"
	}
	f.code(`// Level-based: a handling that finds everything in place writes nothing,
// and records no Event.
func TestAHandlingThatFindsEverythingInPlaceWritesNothing(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(demo())
` + kubeNew + `	ev := &events{}
	h := ` + newHandler + `
	if err := h.Handle(ctx, demo()); err != nil {
		t.Fatal(err)
	}
	before := len(ev.reasons)
` + kubeClear + `	client.ClearActions()
	if err := h.Handle(ctx, stored(t, client)); err != nil {
		t.Fatal(err)
	}
	for _, a := range slices.Concat(` + kubeActions + `client.Actions()) {
		if a.GetVerb() != "get" {
			t.Errorf("got %s %s, want nothing written", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if len(ev.reasons) != before {
		t.Errorf("got events %q, want none after the first %d", ev.reasons[before:], before)
	}
}
`)
	if op.servesNamespaces() {
		f.code(`
// A $Kind in a namespace the operator does not serve gets no children: it
// is not Ready, with reason NotServed, and the error is terminal.
func TestANamespaceNotServedGetsNoChildren(t *testing.T) {
	client := fake.NewClientset(demo())
	kube := kubefake.NewClientset()
	ev := &events{}
	h := &handler.Handler{Client: client, Kube: kube, ServedNamespaces: []string{"elsewhere"}, FieldManager: "test", Events: ev}
	if err := h.Handle(context.Background(), demo()); !controller.IsTerminal(err) {
		t.Errorf("got error %v, want a terminal error", err)
	}
	if c, _ := status.Get(stored(t, client).Status.Conditions, $Alias.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != $Alias.ReasonNotServed {
		t.Errorf("got Ready %+v, want False with reason NotServed", c)
	}
	if objs := children(t, kube); len(objs) > 0 {
		t.Errorf("got children %v, want none", objs)
	}
	if !slices.Equal(ev.reasons, []string{$Alias.ReasonNotServed}) {
		t.Errorf("got events %q, want one NotServed", ev.reasons)
	}
}
`)
	}
	if !op.Cluster {
		// A namespaced $Kind's children are in its namespace.
		body := strings.ReplaceAll(f.body.String(), "childNamespace", "namespace")
		f.body.Reset()
		f.body.WriteString(body)
	}
	return f
}
