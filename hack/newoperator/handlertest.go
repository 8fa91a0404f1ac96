package main

// The operator's internal/handler/handler_test.go: table-driven, on the
// generated fake clientset and client-go's, both of which do server-side
// apply. It checks every resource of handler.Owned alike, so that a child
// added there is tested with no edit here.

func handlerTestGo(op operator) *goFile {
	f := newGoFile(op, "handler_test")
	owns, deployment := len(op.Owns) > 0, op.owns("Deployment")
	ns, nsField, childNS := "", "", "namespace"
	if !op.Cluster {
		ns, nsField = "namespace", "Namespace: namespace, "
	}
	switch {
	case op.Cluster && owns:
		childNS = "childNamespace"
		f.code("// childNamespace holds demo's children (a cluster-scoped $Kind has no\n// namespace).\nconst childNamespace = \"team\"\n\n")
	case !op.Cluster && owns:
		f.code("// namespace holds demo and its children.\nconst namespace = \"team\"\n\n")
	case !op.Cluster:
		f.code("// namespace holds demo.\nconst namespace = \"team\"\n\n")
	}
	f.printf(`// demo is the $Kind of the tests, at generation 2.
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

	// newHandler is Go code of the handler of the tests, over client, kube
	// and ev, serving served (a namespaced kind owning others).
	newHandler := `&handler.Handler{Client: client, FieldManager: "test", Events: ev}`
	switch {
	case owns && op.Cluster:
		newHandler = `&handler.Handler{Client: client, Kube: kube, ChildNamespace: childNamespace, FieldManager: "test", Events: ev`
	case owns:
		newHandler = `&handler.Handler{Client: client, Kube: kube, ServedNamespaces: []string{served}, FieldManager: "test", Events: ev`
	}
	if deployment {
		f.code(`
// cached returns demo's Deployment as its source's cache holds it: its one
// replica updated, and available if available is 1.
func cached(available int32) []*appsv1.Deployment {
	return []*appsv1.Deployment{{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ` + childNS + `},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status:     appsv1.DeploymentStatus{UpdatedReplicas: 1, AvailableReplicas: available},
	}}
}
`)
		newHandler += `,
				Deployments: func(*$Alias.$Kind) []*appsv1.Deployment { return cached(available) }`
	}
	if owns {
		newHandler += "}"
	}

	// The table.
	f.code(`
func TestHandle(t *testing.T) {
	tests := []struct {
		name     string
		deleting bool
`)
	if op.servesNamespaces() {
		f.code("\t\tserved   string // the namespace the operator serves; default demo's\n")
	}
	if owns {
		f.code("\t\trefused  bool   // the API server refuses to apply the first child\n")
	}
	if deployment {
		f.code("\t\tavailable int32 // replicas of the Deployment, in the cache\n")
	}
	f.code(`		wantReason string // of the Ready condition, True for Reconciled only; "": no status
		wantErr    string // "", "terminal" or "retried"
	}{
`)
	switch {
	case !owns:
		f.code(`		{name: "a new $Kind is Ready for its generation", wantReason: $Alias.ReasonReconciled},
`)
	case deployment:
		f.code(`		{name: "a new $Kind gets its children, and is Ready once its Deployment is", available: 1, wantReason: $Alias.ReasonReconciled},
		{name: "it is not Ready while its Deployment's pods are not", wantReason: $Alias.ReasonNotReady},
`)
	default:
		f.code(`		{name: "a new $Kind gets its children, controlled by it, and is Ready", wantReason: $Alias.ReasonReconciled},
`)
	}
	if owns {
		f.code(`		{name: "a refused apply is retried", refused: true, wantReason: $Alias.ReasonFailed, wantErr: "retried"},
`)
	}
	if op.servesNamespaces() {
		f.code(`		{name: "a $Kind in a namespace not served gets no children", served: "elsewhere", wantReason: $Alias.ReasonNotServed, wantErr: "terminal"},
`)
	}
	f.code(`		{name: "a $Kind being deleted is left alone", deleting: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			$v := demo()
			if tt.deleting {
				$v.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			client := fake.NewClientset($v.DeepCopy())
`)
	if owns {
		f.code(`			kube := kubefake.NewClientset()
			if tt.refused {
				kube.PrependReactor("patch", handler.Owned[0].Resource, func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(handler.Owned[0].GroupResource(), "demo", errors.New("no RBAC"))
				})
			}
`)
	}
	if op.servesNamespaces() {
		f.code("\t\t\tserved := cmp.Or(tt.served, namespace)\n")
	}
	if deployment {
		f.code("\t\t\tavailable := tt.available\n")
	}
	f.code(`			ev := &events{}
			h := ` + newHandler + `

			err := h.Handle(context.Background(), $v)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want nil", err)
			case tt.wantErr == "terminal" && !controller.IsTerminal(err):
				t.Errorf("got error %v, want a terminal error", err)
			case tt.wantErr == "retried" && (err == nil || controller.IsTerminal(err)):
				t.Errorf("got error %v, want an error that is retried", err)
			}
			got := stored(t, client)
			c := meta.FindStatusCondition(got.Status.Conditions, $Alias.ConditionReady)
			switch {
			case tt.wantReason == "" && (c != nil || len(ev.reasons) > 0):
				t.Errorf("got status %+v and events %q, want none", got.Status, ev.reasons)
			case tt.wantReason == "":
			case c == nil || c.Reason != tt.wantReason || (c.Status == metav1.ConditionTrue) != (tt.wantReason == $Alias.ReasonReconciled) ||
				c.ObservedGeneration != 2 || got.Status.ObservedGeneration != 2:
				t.Errorf("got status %+v, want Ready with reason %s for generation 2", got.Status, tt.wantReason)
			case !slices.Equal(ev.reasons, []string{tt.wantReason}):
				t.Errorf("got events %q, want one %s", ev.reasons, tt.wantReason)
			}
`)
	if owns {
		f.code(`
			// Every child is there, controlled by demo, labelled; or none.
			wantChildren := tt.wantReason == $Alias.ReasonReconciled || tt.wantReason == $Alias.ReasonNotReady
			for _, resource := range handler.Owned {
				obj, err := kube.Tracker().Get(resource, ` + childNS + `, "demo")
				switch {
				case !wantChildren && err == nil:
					t.Errorf("got a %s, want none", resource.Resource)
				case wantChildren && err != nil:
					t.Errorf("got no %s: %v", resource.Resource, err)
				case wantChildren:
					child, _ := meta.Accessor(obj)
					ref := metav1.GetControllerOf(child)
					if ref == nil || ref.UID != "demo-uid" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
						t.Errorf("%s: got controller %+v, want demo, blocking its deletion", resource.Resource, ref)
					}
					if l := child.GetLabels(); l[handler.ManagedByLabel] != handler.ManagedBy || l[handler.OwnerLabel] != "demo" {
						t.Errorf("%s: got labels %v, want managed-by and owner", resource.Resource, l)
					}
				}
			}
`)
	}
	f.code(`		})
	}
}
`)

	// A second handling writes no status.
	kubeNew := ""
	if owns {
		kubeNew = "\tkube := kubefake.NewClientset()\n"
	}
	if op.servesNamespaces() {
		kubeNew += "\tserved := namespace\n"
	}
	if deployment {
		kubeNew += "\tavailable := int32(1)\n"
	}
	f.code(`
// Level-based: a handling that finds the status as it would write it
// writes no status, and records no Event.
func TestAHandlingThatFindsItsStatusWritesNone(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(demo())
` + kubeNew + `	ev := &events{}
	h := ` + newHandler + `
	if err := h.Handle(ctx, demo()); err != nil {
		t.Fatal(err)
	}
	again := stored(t, client)
	client.ClearActions()
	if err := h.Handle(ctx, again); err != nil {
		t.Fatal(err)
	}
	if a := client.Actions(); len(a) > 0 {
		t.Errorf("got %d more calls (%s %s first), want none", len(a), a[0].GetVerb(), a[0].GetSubresource())
	}
	if len(ev.reasons) != 1 {
		t.Errorf("got events %q, want one, of the first handling", ev.reasons)
	}
}
`)
	return f
}
