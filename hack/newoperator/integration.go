package main

import "fmt"

// The operator's integration package: its end-to-end test and its RBAC
// test against a local control plane (hack/envtest), run by make
// test-integration.

func integrationDocGo(op operator) *goFile {
	f := newGoFile(op, "integration")
	f.doc = `Package integration holds the $Name operator's tests against a real local
control plane (hack/envtest); they run in make test. It has no
non-test code.`
	return f
}

func integrationMainGo(op operator) *goFile {
	f := newGoFile(op, "integration_test")
	if len(op.Owns) > 0 {
		f.code(`var cluster *envtest.Cluster

// etcd, kube-apiserver and kube-controller-manager, which type-checks the
// admission policies (rbac_test.go reads the result) and whose garbage
// collector deletes a $Kind's children with it.
func TestMain(m *testing.M) {
	// The operator runs in this process beside the tests' own clients, and
	// client-go reads its metrics hooks without synchronisation: set them
	// before any client starts, as the operator's main does by calling Run.
	if err := kooperprom.RegisterRESTClientMetrics(prom.NewRegistry()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(envtest.RunTests(m, envtest.Options{ControllerManager: true}, &cluster))
}
`)
	} else {
		f.code(`var cluster *envtest.Cluster

// etcd and kube-apiserver only: nothing here needs a controller of
// kube-controller-manager. A test of the garbage collector deleting a
// $Kind's children needs it: envtest.Options{ControllerManager: true}.
func TestMain(m *testing.M) {
	// The operator runs in this process beside the tests' own clients, and
	// client-go reads its metrics hooks without synchronisation: set them
	// before any client starts, as the operator's main does by calling Run.
	if err := kooperprom.RegisterRESTClientMetrics(prom.NewRegistry()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(envtest.RunTests(m, envtest.Options{}, &cluster))
}
`)
	}
	f.code(`
// Where the operator's manifests are, relative to this package.
const (
	crdDir    = "../../../manifests/crds/$Short"
	rbacDir   = "../../../manifests/rbac/$Name"
	deployDir = "../../../manifests/$Name"
	// exampleFile is the README's example, which make run applies.
	exampleFile = "../example.yaml"
)

// kubectl runs the cluster's kubectl as admin and fails the test, with
// kubectl's output, if it fails.
func kubectl(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"--kubeconfig", cluster.KubeconfigPath()}, args...)
	out, err := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args[2:], err, out)
	}
}
`)
	return f
}

// dataKind is the first owned kind carrying the greeting, and Go code
// reading it from obj of that kind.
func dataKind(op operator) (ownedKind, string, bool) {
	for _, k := range op.Owns {
		switch k.Kind {
		case "ConfigMap":
			return k, `obj.Data["greeting"]`, true
		case "Secret":
			return k, `string(obj.Data["greeting"])`, true
		case "Deployment":
			return k, `obj.Spec.Template.Spec.Containers[0].Env[0].Value`, true
		}
	}
	return ownedKind{}, "", false
}

func integrationE2EGo(op operator) *goFile {
	f := newGoFile(op, "integration_test")
	childNS, crNS, eventsNS := "operator.DefaultChildNamespace", "", `"default"`
	if !op.Cluster {
		childNS, crNS, eventsNS = "demoNamespace", "demoNamespace", "demoNamespace"
	}
	if !op.Cluster {
		f.code(`// demoNamespace holds the $Kind of the test`)
		if len(op.Owns) > 0 {
			f.code(`, and its children`)
		}
		f.code(".\nconst demoNamespace = \"default\"\n\n")
	}
	f.printf(`// The operator, run as its ServiceAccount (impersonation) with leader
// election, as its Deployment runs it.
func Test$PluralEndToEnd(t *testing.T) {
	ctx := context.Background()
	kubectl(t, "apply", "-k", crdDir)
	kubectl(t, "apply", "-k", rbacDir)
	kube := kubernetes.NewForConfigOrDie(cluster.Config())
	crs := versioned.NewForConfigOrDie(cluster.Config()).$GroupGoV1alpha1().$Plural(%s)
	e2etest.Eventually(t, 30*time.Second, "the $Kind CRD is served", func() bool {
		_, err := crs.List(ctx, metav1.ListOptions{})
		return err == nil
	})

	registry := prom.NewRegistry()
	httpAddr := e2etest.FreeAddr(t)
	// Every handling is a span, its API calls its children.
	spans := tracetest.NewInMemoryExporter()
	cfg := operator.Config{
		REST:           e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100), // the command's defaults
		Registry:       registry,
		HTTPAddr:       httpAddr,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		Logger:         log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })

	var demo *$Alias.$Kind
	t.Run("a $Kind is Ready for its generation within 10s`, crNS)
	if len(op.Owns) > 0 {
		f.code(`, with its children, controlled by it`)
	}
	f.printf(`", func(t *testing.T) {
		// The README's example, as make run applies it.
		began := time.Now()
		kubectl(t, "apply", "-f", exampleFile)
		var err error
		if demo, err = crs.Get(ctx, "demo", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if demo.Spec.Greeting != "hello" {
			t.Errorf("got greeting %%q, want the example's hello", demo.Spec.Greeting)
		}
		e2etest.Eventually(t, 10*time.Second, "demo is Ready", func() bool { return ready(t, crs, "demo") })
		t.Logf("demo Ready in %%s", time.Since(began).Round(time.Millisecond))
`)
	if len(op.Owns) > 0 {
		f.printf(`
		objs := children(t, kube)
		if len(objs) != %d {
			t.Errorf("got children %%v, want %d", slices.Sorted(maps.Keys(objs)))
		}
		for kind, obj := range objs {
			ref := metav1.GetControllerOf(obj)
			if ref == nil || ref.UID != demo.UID || ref.Kind != "$Kind" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("%%s: got controller %%+v, want $Kind demo (%%s) blocking deletion", kind, ref, demo.UID)
			}
			if obj.GetLabels()[handler.ManagedByLabel] != handler.ManagedBy {
				t.Errorf("%%s: got labels %%v, want %%s=%%s", kind, obj.GetLabels(), handler.ManagedByLabel, handler.ManagedBy)
			}
		}
`, len(op.Owns), len(op.Owns))
	}
	f.code(`	})
	if demo == nil {
		t.FailNow()
	}
`)

	if len(op.Owns) > 0 {
		first := op.Owns[0]
		// The operator's sources see a child's change and deletion: each
		// queues the $Kind, whose handling restores the child.
		f.printf(`
	t.Run("a %[1]s changed by hand is restored within 10s", func(t *testing.T) {
		typed := kube.%[2]s(%[3]s)
		for {
			cur, err := typed.Get(ctx, "demo", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Labels[handler.OwnerLabel] = "changed-by-hand"
			if _, err = typed.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		began := time.Now()
		e2etest.Eventually(t, 10*time.Second, "the %[1]s's label is restored", func() bool {
			obj, err := typed.Get(ctx, "demo", metav1.GetOptions{})
			return err == nil && obj.Labels[handler.OwnerLabel] == "demo"
		})
		t.Logf("%[1]s restored in %%s", time.Since(began).Round(time.Millisecond))
	})

	t.Run("a deleted %[1]s is made again within 10s", func(t *testing.T) {
		typed := kube.%[2]s(%[3]s)
		old, err := typed.Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := typed.Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		e2etest.Eventually(t, 10*time.Second, "the %[1]s is back", func() bool {
			obj, err := typed.Get(ctx, "demo", metav1.GetOptions{})
			return err == nil && obj.UID != old.UID
		})
		t.Logf("%[1]s made again in %%s", time.Since(began).Round(time.Millisecond))
	})
`, first.Kind, first.Client, childNS)
	}

	f.code(`
	t.Run("a spec change is Ready for the new generation", func(t *testing.T) {
		for {
			cur, err := crs.Get(ctx, "demo", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Spec.Greeting = "hi"
			if _, err = crs.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		e2etest.Eventually(t, 10*time.Second, "demo is Ready for its new generation", func() bool { return ready(t, crs, "demo") })
`)
	if k, read, ok := dataKind(op); ok {
		f.printf(`		obj, err := kube.%s(%s).Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := %s; got != "hi" {
			t.Errorf("got greeting %%q in the %s, want hi", got)
		}
`, k.Client, childNS, read, k.Kind)
	}
	f.printf(`	})

	t.Run("a handling that finds everything in place writes nothing", func(t *testing.T) {
		// An annotation is no spec change: the handling it causes reads
		// what it needs, and writes nothing.
		touched := time.Now()
		for {
			cur, err := crs.Get(ctx, "demo", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Annotations = map[string]string{"e2e.kooperkit.io/touched": touched.Format(time.RFC3339Nano)}
			if _, err = crs.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		handlings := map[trace.SpanID]bool{}
		e2etest.Eventually(t, 10*time.Second, "demo is handled again", func() bool {
			for _, s := range spans.GetSpans() {
				if s.Name == "handle "+operator.DefaultName && s.StartTime.After(touched) {
					handlings[s.SpanContext.SpanID()] = true
				}
			}
			return len(handlings) > 0
		})
		for _, s := range spans.GetSpans() {
			if handlings[s.Parent.SpanID()] && s.Name != "HTTP GET" {
				t.Errorf("got %%s in a handling that found everything in place, want reads only", s.Name)
			}
		}
	})

	t.Run("an Event says the $Kind is Ready", func(t *testing.T) {
		e2etest.Eventually(t, 10*time.Second, "an Event with reason Reconciled about demo", func() bool {
			list, err := kube.CoreV1().Events(%s).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=demo"})
			if err != nil {
				t.Fatal(err)
			}
			return slices.ContainsFunc(list.Items, func(e corev1.Event) bool {
				return e.InvolvedObject.Kind == "$Kind" && e.Reason == $Alias.ReasonReconciled
			})
		})
	})

	t.Run("the operator is ready, and its metrics pass promtool check metrics", func(t *testing.T) {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("got /readyz %%d %%s, want 200", resp.StatusCode, body)
		}
		e2etest.CheckMetrics(t, "http://"+httpAddr+"/metrics")
	})
}

// ready reports whether the $Kind name is Ready for its generation.
func ready(t *testing.T, crs interface {
	Get(context.Context, string, metav1.GetOptions) (*$Alias.$Kind, error)
}, name string) bool {
	t.Helper()
	cr, err := crs.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cr.Status.ObservedGeneration == cr.Generation && status.IsTrueFor(cr.Status.Conditions, $Alias.ConditionReady, cr.Generation)
}
`, eventsNS)

	if len(op.Owns) > 0 {
		f.code(`
// children returns demo's children, by kind; a missing one is absent.
func children(t *testing.T, kube kubernetes.Interface) map[string]metav1.Object {
	t.Helper()
	ctx := context.Background()
	objs := map[string]metav1.Object{}
`)
		for _, k := range op.Owns {
			f.printf(`	if obj, err := kube.%s(%s).Get(ctx, "demo", metav1.GetOptions{}); err == nil {
		objs[%q] = obj
	}
`, k.Client, childNS, k.Kind)
		}
		f.code("\treturn objs\n}\n")
	}
	return f
}

func integrationMetricsGo(op operator) *goFile {
	f := newGoFile(op, "integration_test")
	f.code(`// With -metrics-secure-addr, as the Deployment runs it, /metrics is served
// over HTTPS to Prometheus's ServiceAccount only: the operator, running as
// its own ServiceAccount with the RBAC of manifests/rbac/$Name
// (system:auth-delegator, kooper-$Name-metrics-reader), has the API server
// review each token. /healthz and /readyz stay plain.
func TestSecureMetricsAreServedToPrometheusOnly(t *testing.T) {
	kubectl(t, "apply", "-k", crdDir)
	kubectl(t, "apply", "-k", rbacDir)
	httpAddr, secureAddr := e2etest.FreeAddr(t), e2etest.FreeAddr(t)
	cfg := operator.Config{
		REST:              e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100), // the command's defaults
		HTTPAddr:          httpAddr,
		SecureMetricsAddr: secureAddr,
		Logger:            log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
	e2etest.CheckSecureMetrics(t, kubernetes.NewForConfigOrDie(cluster.Config()), e2etest.SecureMetrics{
		Account:    operator.DefaultNamespace + "/" + operator.DefaultName,
		PlainAddr:  httpAddr,
		SecureAddr: secureAddr,
	})
}
`)
	return f
}

func integrationRBACGo(op operator) *goFile {
	f := newGoFile(op, "integration_test")
	roles := op.roles()
	f.code(`// What the operator does, written out by hand: each of its roles must
// grant exactly this.
var (
`)
	for _, r := range roles {
		where := "cluster-wide"
		if r.namespace != "" {
			where = "in " + r.namespace
		}
		f.printf("\t// %s is what it does %s: %s.\n\t%s = []rbacv1.PolicyRule{\n%s\t}\n", r.goVar, where, r.file, r.goVar, goRules(r.rules))
	}
	f.code(`)

func TestRBACRolesGrantExactlyWhatIsNeeded(t *testing.T) {
	for file, want := range map[string][]rbacv1.PolicyRule{
`)
	for _, r := range roles {
		f.printf("\t\t%q: %s,\n", r.file, r.goVar)
	}
	f.code(`	} {
		if got := rbactest.ReadRules(t, filepath.Join(rbacDir, file)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got rules %+v\nwant exactly %+v", file, got, want)
		}
	}
}

// account is the operator's ServiceAccount, as the API server names it.
const account = "system:serviceaccount:" + operator.DefaultNamespace + ":" + operator.DefaultName

// Applied with kubectl, the manifests let the ServiceAccount do every needed
// verb and refuse others (SubjectAccessReviews as the account).
func TestRBACServiceAccountMayDoWhatIsNeededAndNothingElse(t *testing.T) {
	kubectl(t, "apply", "-k", rbacDir)
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	groups := rbactest.ServiceAccountGroups(operator.DefaultNamespace)
`)
	for _, r := range roles {
		ns := `"some-namespace"`
		if r.namespace != "" {
			ns = fmt.Sprintf("%q", r.namespace)
		}
		f.printf("\trbactest.CheckAllowed(t, client, account, groups, %s, %s)\n", ns, r.goVar)
	}
	f.code(`	denied := []authorizationv1.ResourceAttributes{
		{Group: "$Group", Resource: "$plural", Verb: "update"}, // status only
		{Group: "$Group", Resource: "$plural", Verb: "delete"},
		{Namespace: "some-namespace", Resource: "pods", Verb: "create"},
		{Namespace: "some-namespace", Group: "coordination.k8s.io", Resource: "leases", Verb: "update"},
`)
	// Secrets stay out of reach where the operator serves no $Kind.
	f.code("\t\t{Namespace: \"some-namespace\", Resource: \"secrets\", Verb: \"get\"},\n")
	if len(op.Owns) > 0 {
		first := op.Owns[0]
		ns := fmt.Sprintf("%q", servedNamespace)
		if op.Cluster {
			ns = fmt.Sprintf("%q", op.childNamespace())
		}
		f.printf("\t\t{Namespace: %s, Group: %q, Resource: %q, Verb: \"delete\"}, // the garbage collector deletes children\n", ns, first.Group, first.Resource)
		f.printf("\t\t{Namespace: operator.DefaultNamespace, Group: %q, Resource: %q, Verb: \"update\"}, // none in its own namespace\n", first.Group, first.Resource)
		f.printf("\t\t{Group: %q, Resource: %q, Verb: \"list\"}, // never cluster-wide\n", first.Group, first.Resource)
		if !op.Cluster {
			f.printf("\t\t{Namespace: \"some-namespace\", Group: %q, Resource: %q, Verb: \"create\"}, // a namespace it does not serve\n", first.Group, first.Resource)
		}
	}
	if op.Cluster {
		f.code("\t\t{Namespace: \"some-namespace\", Resource: \"events\", Verb: \"create\"}, // Events in default only\n")
	}
	f.code(`	}
	for _, d := range denied {
		if rbactest.Can(t, client, account, groups, d) {
			t.Errorf("%s may %s %s/%s in %q, want denied", account, d.Verb, d.Group, d.Resource, d.Namespace)
		}
	}
}
`)
	if len(op.Owns) > 0 {
		first := op.Owns[0]
		ns := `"default"`
		if op.Cluster {
			ns = "operator.DefaultChildNamespace"
		}
		crs := "versioned.NewForConfigOrDie(cluster.Config()).$GroupGoV1alpha1().$Plural(" + map[bool]string{true: "", false: ns}[op.Cluster] + ")"
		ownerNS := ""
		if !op.Cluster {
			ownerNS = "Namespace: " + ns + ", "
		}
		f.printf(`
// RBAC lets the ServiceAccount write every %[1]s %[2]s; the admission
// policy lets it write only those a $Kind controls (a controller owner
// reference), adopt none, change no owner reference and set no finalizer.
func TestRBACPolicyKeepsTheAccountToObjectsItsKindsControl(t *testing.T) {
	ctx := context.Background()
	kubectl(t, "apply", "-k", crdDir)
	kubectl(t, "apply", "-k", rbacDir)
	asAdmin := kubernetes.NewForConfigOrDie(cluster.Config()).%[3]s(%[4]s)
	asAccount := kubernetes.NewForConfigOrDie(e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100)).%[3]s(%[4]s)
	crs := %[7]s
	var owner *$Alias.$Kind
	e2etest.Eventually(t, 30*time.Second, "the CRD is served", func() bool {
		var err error
		owner, err = crs.Create(ctx, &$Alias.$Kind{ObjectMeta: metav1.ObjectMeta{%[8]sGenerateName: "rbac-owner-"}}, metav1.CreateOptions{})
		return err == nil
	})
	t.Cleanup(func() { _ = crs.Delete(context.Background(), owner.Name, metav1.DeleteOptions{}) })
	controlled := []metav1.OwnerReference{{APIVersion: $Alias.SchemeGroupVersion.String(), Kind: "$Kind", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	object := func(name string, refs []metav1.OwnerReference) %[5]s {
		meta := metav1.ObjectMeta{Name: name, Namespace: %[4]s, OwnerReferences: refs}
		return %[6]s
	}
	refused := func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'kooper-$Name-children'")
	}
	// Each expression type-checks against the schema of the kinds it
	// matches: a misspelt field would let any change through.
	for _, p := range []string{%[9]s} {
		rbactest.CheckPolicyTypes(t, kubernetes.NewForConfigOrDie(cluster.Config()), p, 60*time.Second)
	}
	if _, err := asAdmin.Create(ctx, object("rbac-theirs", nil), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{"rbac-theirs", "rbac-mine"} {
			_ = asAdmin.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	// A new policy takes a moment to be enforced: until an update of an
	// object no $Kind controls is refused, it is allowed.
	e2etest.Eventually(t, 30*time.Second, "the policy refuses to update an object no $Kind controls", func() bool {
		theirs, err := asAccount.Get(ctx, "rbac-theirs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		theirs.Labels = map[string]string{"changed-by": "the-operator"}
		_, err = asAccount.Update(ctx, theirs, metav1.UpdateOptions{})
		if err != nil && !refused(err) {
			t.Fatalf("got %%v, want the update allowed (the policy not enforced yet) or refused by the policy", err)
		}
		return err != nil
	})
	if _, err := asAccount.Create(ctx, object("rbac-unowned", nil), metav1.CreateOptions{}); !refused(err) {
		t.Errorf("got %%v creating an object no $Kind controls, want it refused by the policy", err)
	}
	theirs, err := asAccount.Get(ctx, "rbac-theirs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	theirs.OwnerReferences = controlled
	if _, err := asAccount.Update(ctx, theirs, metav1.UpdateOptions{}); !refused(err) {
		t.Errorf("got %%v adopting an object (an owner reference added), want it refused by the policy", err)
	}
	mine, err := asAccount.Create(ctx, object("rbac-mine", controlled), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("got %%v creating an object a $Kind controls, want it allowed", err)
	}
	for what, change := range map[string]func(%[5]s){
		"dropping its owner reference": func(o %[5]s) { o.OwnerReferences = nil },
		"adding a finalizer":           func(o %[5]s) { o.Finalizers = []string{"example.com/hold"} },
	} {
		o := mine.DeepCopy()
		change(o)
		if _, err := asAccount.Update(ctx, o, metav1.UpdateOptions{}); !refused(err) {
			t.Errorf("got %%v %%s, want it refused by the policy", err, what)
		}
	}
}
`, first.Kind+"s", map[bool]string{true: "in its children's namespace", false: "in the namespaces it serves"}[op.Cluster], first.Client, ns, first.goType(), first.minimal, crs, ownerNS, quoted(op.policyNames()))
	}
	f.code(`
// metricsReader is what Prometheus needs to scrape /metrics over HTTPS
// (-metrics-secure-addr): metrics_reader_role.yaml must grant exactly this.
var metricsReader = []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}

// With -metrics-secure-addr the operator has the API server review each
// scraper's token: its ServiceAccount may create TokenReviews and
// SubjectAccessReviews (system:auth-delegator, auth_delegator_binding.yaml),
// and Prometheus's ServiceAccount (metrics_reader_role_binding.yaml) may
// get /metrics and read nothing.
func TestRBACMetricsBindingsLetTheOperatorReviewAndPrometheusScrape(t *testing.T) {
	if got := rbactest.ReadRules(t, filepath.Join(rbacDir, "metrics_reader_role.yaml")); !reflect.DeepEqual(got, metricsReader) {
		t.Errorf("metrics_reader_role.yaml: got rules %+v\nwant exactly %+v", got, metricsReader)
	}
	kubectl(t, "apply", "-k", rbacDir)
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	rbactest.CheckAllowed(t, client, account, rbactest.ServiceAccountGroups(operator.DefaultNamespace), "", []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	})
	const prometheusUser = "system:serviceaccount:" + e2etest.PrometheusNamespace + ":" + e2etest.PrometheusAccount
	prometheusGroups := rbactest.ServiceAccountGroups(e2etest.PrometheusNamespace)
	rbactest.CheckAllowed(t, client, prometheusUser, prometheusGroups, "", metricsReader)
	for _, d := range []authorizationv1.ResourceAttributes{
		{Group: "$Group", Resource: "$plural", Verb: "list"},
		{Namespace: operator.DefaultNamespace, Resource: "secrets", Verb: "get"},
		{Namespace: "some-namespace", Resource: "pods", Verb: "list"},
	} {
		if rbactest.Can(t, client, prometheusUser, prometheusGroups, d) {
			t.Errorf("%s may %s %s/%s in %q, want denied", prometheusUser, d.Verb, d.Group, d.Resource, d.Namespace)
		}
	}
}

// The API server accepts the deploy manifests (a server-side dry run:
// nothing runs) once the namespace exists.
func TestRBACDeployManifestsApply(t *testing.T) {
	kubectl(t, "apply", "-k", rbacDir)
	kubectl(t, "apply", "--dry-run=server", "-k", deployDir)
}
`)
	return f
}
