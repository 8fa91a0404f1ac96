package main

import "fmt"

// The operator's integration package: its end-to-end test and its RBAC
// test against a local control plane (hack/envtest), run by make
// test-integration. The children are checked through handler.Owned and the
// metadata client, whatever their kinds, so that a child added to the
// handler is tested with no edit here.

func integrationDocGo(op operator) *goFile {
	f := newGoFile(op, "integration")
	f.doc = `Package integration holds the $Name operator's tests against a real local
control plane (hack/envtest); they run in make test. It has no
non-test code.`
	return f
}

func integrationMainGo(op operator) *goFile {
	f := newGoFile(op, "integration_test")
	opts, what := "envtest.Options{}", `etcd and kube-apiserver only: nothing here needs a controller of
// kube-controller-manager, nor a node. A test of children needs both:
// envtest.Options{Nodes: 1}.`
	if len(op.Owns) > 0 {
		opts, what = "envtest.Options{Nodes: 1}", `etcd, kube-apiserver, kube-controller-manager (the garbage collector, the
// Deployment and ReplicaSet controllers, the admission policies'
// type-checking), kube-scheduler and a kwok node, which runs pods as a
// kubelet would, with no containers.`
	}
	f.code(`var cluster *envtest.Cluster

// ` + what + `
func TestMain(m *testing.M) {
	// The operator runs in this process beside the tests' own clients, and
	// client-go reads its metrics hooks without synchronisation: set them
	// before any client starts, as the operator's main does by calling Run.
	if err := kooperprom.RegisterRESTClientMetrics(prom.NewRegistry()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(envtest.RunTests(m, ` + opts + `, &cluster))
}

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
	owns := len(op.Owns) > 0
	childNS, crNS, eventsNS := "operator.DefaultChildNamespace", "", `"default"`
	if !op.Cluster {
		childNS, crNS, eventsNS = "demoNamespace", "demoNamespace", "demoNamespace"
		f.code("// demoNamespace holds the $Kind of the test" + map[bool]string{true: ", and its children", false: ""}[owns] + ".\nconst demoNamespace = \"default\"\n\n")
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
`, crNS)
	if owns {
		f.printf(`	md := metadata.NewForConfigOrDie(cluster.Config())
	// child returns demo's child of resource, or an error.
	child := func(resource schema.GroupVersionResource) (*metav1.PartialObjectMetadata, error) {
		return md.Resource(resource).Namespace(%s).Get(ctx, "demo", metav1.GetOptions{})
	}
`, childNS)
	}
	rest := `
		REST:           e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100), // the command's defaults
`
	if owns {
		rest = `
		// The command's client limits. Its $Kind watch hands on events
		// 100ms late (its children's do not), so that its handlings' own
		// writes are certain to be waited for (below).
		REST: e2etest.SlowWatches(e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 50, 100), "$plural", 100*time.Millisecond),
`
	}
	f.code(`
	httpAddr := e2etest.FreeAddr(t)
	spans := tracetest.NewInMemoryExporter() // a span per handling, its API calls its children
	cfg := operator.Config{` + rest + `		HTTPAddr:       httpAddr,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		Logger:         log.NewStd(t.Output(), log.StdOptions{}),
		// +kooper:scaffold:test-config (make new-version serves the conversion webhook)
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
`)
	if op.owns("Deployment") {
		f.code(`
	// The README's example, as make run applies it.
	t.Run("a $Kind is Ready once its Deployment's pods are, and not before", func(t *testing.T) {
		kubectl(t, "cordon", "-l", "type=kwok") // its pods stay pending
		kubectl(t, "apply", "-f", exampleFile)
		e2etest.Eventually(t, 30*time.Second, "demo is not Ready, its pods pending", func() bool {
			c := meta.FindStatusCondition(get(t, crs).Status.Conditions, $Alias.ConditionReady)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == $Alias.ReasonNotReady && strings.HasSuffix(c.Message, " 0 available")
		})
		kubectl(t, "uncordon", "-l", "type=kwok")
		began := time.Now()
		e2etest.Eventually(t, 60*time.Second, "demo is Ready", func() bool { return ready(t, crs) })
		t.Logf("demo Ready %s after its pods could run", time.Since(began).Round(time.Millisecond))
	})
`)
	} else {
		f.code(`
	// The README's example, as make run applies it.
	t.Run("a $Kind is Ready for its generation within 10s", func(t *testing.T) {
		began := time.Now()
		kubectl(t, "apply", "-f", exampleFile)
		e2etest.Eventually(t, 10*time.Second, "demo is Ready", func() bool { return ready(t, crs) })
		t.Logf("demo Ready in %s", time.Since(began).Round(time.Millisecond))
	})
`)
	}
	if owns {
		f.code(`	demo := get(t, crs)

	t.Run("its children are controlled by it", func(t *testing.T) {
		for _, resource := range handler.Owned {
			obj, err := child(resource)
			if err != nil {
				t.Fatalf("%s: %v", resource.Resource, err)
			}
			if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != demo.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("%s: got controller %+v, want $Kind demo (%s) blocking deletion", resource.Resource, ref, demo.UID)
			}
			if obj.Labels[handler.ManagedByLabel] != handler.ManagedBy {
				t.Errorf("%s: got labels %v, want %s=%s", resource.Resource, obj.Labels, handler.ManagedByLabel, handler.ManagedBy)
			}
		}
	})

	t.Run("a child changed by hand is restored, a deleted one made again, within 10s", func(t *testing.T) {
		first := md.Resource(handler.Owned[0]).Namespace(` + childNS + `)
		patch := ` + "`{\"metadata\":{\"labels\":{\"`" + ` + handler.OwnerLabel + ` + "`\":\"changed-by-hand\"}}}`" + `
		if _, err := first.Patch(ctx, "demo", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		e2etest.Eventually(t, 10*time.Second, "its label is restored", func() bool {
			obj, err := child(handler.Owned[0])
			return err == nil && obj.Labels[handler.OwnerLabel] == "demo"
		})
		old, err := child(handler.Owned[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e2etest.Eventually(t, 10*time.Second, "it is made again", func() bool {
			obj, err := child(handler.Owned[0])
			return err == nil && obj.UID != old.UID
		})
	})

	// The operator's clients come from observe's TrackWrites config: a
	// $Kind whose handling applied its children and wrote its status is
	// not handled again before the caches have seen those writes. Its
	// children's events queue it while the handling runs; taken from the
	// queue as soon as the handling ends, it waits for the event of its
	// status, which its $Kind watch hands on 100ms late.
	t.Run("keys wait for the caches to see their handlings' own writes", func(t *testing.T) {
		e2etest.CheckCacheWaits(t, "http://"+httpAddr+"/metrics", operator.DefaultName, 60*time.Second)
	})
`)
	}
	f.code(`
	t.Run("a spec change is Ready for the new generation", func(t *testing.T) {
		if _, err := crs.Patch(ctx, "demo", types.MergePatchType, []byte(` + "`" + `{"spec":{"greeting":"hi"}}` + "`" + `), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		e2etest.Eventually(t, 30*time.Second, "demo is Ready for its new generation", func() bool { return ready(t, crs) })
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
	f.code(`	})

	t.Run("a handling that finds everything in place changes nothing", func(t *testing.T) {
		// An annotation is no spec change: the handling it causes applies
		// what is there already, which changes nothing, and writes no status.
		touched := time.Now()
		cur, err := crs.Patch(ctx, "demo", types.MergePatchType, []byte(` + "`" + `{"metadata":{"annotations":{"e2e.kooperkit.io/touched":"` + "`" + `+touched.Format(time.RFC3339Nano)+` + "`" + `"}}}` + "`" + `), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
`)
	if owns {
		f.code(`		before := versions(t, child)
`)
	}
	f.code(`		e2etest.Eventually(t, 10*time.Second, "demo is handled again", func() bool {
			return slices.ContainsFunc(spans.GetSpans(), func(s tracetest.SpanStub) bool {
				return s.Name == "handle "+operator.DefaultName && s.StartTime.After(touched)
			})
		})
		if got := get(t, crs); got.ResourceVersion != cur.ResourceVersion {
			t.Errorf("got demo at resourceVersion %s, want %s: its status was written", got.ResourceVersion, cur.ResourceVersion)
		}
`)
	if owns {
		f.code(`		if after := versions(t, child); !maps.Equal(after, before) {
			t.Errorf("got children at versions %v, want %v: a child was written", after, before)
		}
`)
	}
	f.printf(`	})

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
`, eventsNS)
	if owns {
		f.code(`
	t.Run("deleting the $Kind deletes its children (the garbage collector)", func(t *testing.T) {
		if err := crs.Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The garbage collector learns of a new CRD at its next discovery,
		// every 30s, and then of the $Plural.
		began := time.Now()
		e2etest.Eventually(t, 90*time.Second, "every child is gone", func() bool {
			return !slices.ContainsFunc(handler.Owned, func(r schema.GroupVersionResource) bool {
				_, err := child(r)
				return !apierrors.IsNotFound(err)
			})
		})
		t.Logf("children deleted in %s", time.Since(began).Round(time.Millisecond))
	})
`)
	}
	f.code(`}

// get returns demo.
func get(t *testing.T, crs interface {
	Get(context.Context, string, metav1.GetOptions) (*$Alias.$Kind, error)
}) *$Alias.$Kind {
	t.Helper()
	cr, err := crs.Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

// ready reports whether demo is Ready for its generation.
func ready(t *testing.T, crs interface {
	Get(context.Context, string, metav1.GetOptions) (*$Alias.$Kind, error)
}) bool {
	cr := get(t, crs)
	return cr.Status.ObservedGeneration == cr.Generation && status.IsTrueFor(cr.Status.Conditions, $Alias.ConditionReady, cr.Generation)
}
`)
	if owns {
		f.code(`
// versions returns the version of each of demo's children: its generation
// where the kind has one (its status, which others write, changes its
// resourceVersion only), else its resourceVersion.
func versions(t *testing.T, child func(schema.GroupVersionResource) (*metav1.PartialObjectMetadata, error)) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, resource := range handler.Owned {
		obj, err := child(resource)
		if err != nil {
			t.Fatal(err)
		}
		out[resource.Resource] = obj.ResourceVersion
		if obj.Generation > 0 {
			out[resource.Resource] = fmt.Sprint("generation ", obj.Generation)
		}
	}
	return out
}
`)
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
		// +kooper:scaffold:test-config (make new-version serves the conversion webhook)
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
// grant exactly this`)
	if len(op.Owns) > 0 {
		f.code(`, and children.yaml exactly childVerbs on the resources
// of handler.Owned`)
	}
	f.code(".\nvar (\n")
	for _, r := range roles {
		if r.file == "children.yaml" {
			continue
		}
		where := "cluster-wide"
		if r.namespace != "" {
			where = "in " + r.namespace
		}
		f.printf("\t// %s is what it does %s: %s.\n\t%s = []rbacv1.PolicyRule{\n%s\t}\n", r.goVar, where, r.file, r.goVar, goRules(r.rules))
	}
	if len(op.Owns) > 0 {
		f.code(`	// childVerbs are what it does with its children: its sources list and
	// watch them, a server-side apply creates or patches them.
	childVerbs = []string{"create", "list", "patch", "watch"}
`)
	}
	f.code(`)
`)
	if len(op.Owns) > 0 {
		f.code(`
// neededForChildren is what it does with its children: childVerbs on each
// resource of handler.Owned.
func neededForChildren() []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, r := range handler.Owned {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{r.Group}, Resources: []string{r.Resource}, Verbs: childVerbs})
	}
	return rules
}
`)
	}
	f.code(`
// flat returns what rules grant, one sorted line per verb and resource:
// rules compare equal however they group them.
func flat(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, fmt.Sprintf("%s %s/%s %v", v, g, res, r.ResourceNames))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestRBACRolesGrantExactlyWhatIsNeeded(t *testing.T) {
	for file, want := range map[string][]rbacv1.PolicyRule{
`)
	for _, r := range roles {
		if r.file == "children.yaml" {
			f.printf("\t\t%q: neededForChildren(),\n", r.file)
			continue
		}
		f.printf("\t\t%q: %s,\n", r.file, r.goVar)
	}
	f.code(`	} {
		if got := rbactest.ReadRules(t, filepath.Join(rbacDir, file)); !slices.Equal(flat(got), flat(want)) {
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
		rules := r.goVar
		if r.file == "children.yaml" {
			rules = "neededForChildren()"
		}
		f.printf("\trbactest.CheckAllowed(t, client, account, groups, %s, %s)\n", ns, rules)
	}
	f.code(`	denied := []authorizationv1.ResourceAttributes{
		{Group: "$Group", Resource: "$plural", Verb: "update"}, // its status only
		{Group: "$Group", Resource: "$plural", Verb: "delete"},
		{Namespace: "some-namespace", Resource: "pods", Verb: "create"},
		{Namespace: "some-namespace", Group: "coordination.k8s.io", Resource: "leases", Verb: "update"},
		{Namespace: "some-namespace", Resource: "secrets", Verb: "get"},
`)
	if len(op.Owns) > 0 {
		first := op.Owns[0]
		ns := fmt.Sprintf("%q", servedNamespace)
		if op.Cluster {
			ns = fmt.Sprintf("%q", op.childNamespace())
		}
		f.printf("\t\t{Namespace: %s, Group: %q, Resource: %q, Verb: \"delete\"}, // the garbage collector deletes children\n", ns, first.Group, first.Resource)
		f.printf("\t\t{Namespace: operator.DefaultNamespace, Group: %q, Resource: %q, Verb: \"patch\"}, // none in its own namespace\n", first.Group, first.Resource)
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
	patch := func(name, patch string) error {
		_, err := asAccount.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
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
	// A new policy takes a moment to be enforced: until a change to an
	// object no $Kind controls is refused, it is allowed.
	e2etest.Eventually(t, 30*time.Second, "the policy refuses to change an object no $Kind controls", func() bool {
		err := patch("rbac-theirs", `+"`"+`{"metadata":{"labels":{"changed-by":"the-operator"}}}`+"`"+`)
		if err != nil && !refused(err) {
			t.Fatalf("got %%v, want the patch allowed (the policy not enforced yet) or refused by the policy", err)
		}
		return err != nil
	})
	if _, err := asAccount.Create(ctx, object("rbac-unowned", nil), metav1.CreateOptions{}); !refused(err) {
		t.Errorf("got %%v creating an object no $Kind controls, want it refused by the policy", err)
	}
	adopt := fmt.Sprintf(`+"`"+`{"metadata":{"ownerReferences":[{"apiVersion":%%q,"kind":"$Kind","name":%%q,"uid":%%q,"controller":true}]}}`+"`"+`,
		$Alias.SchemeGroupVersion.String(), owner.Name, owner.UID)
	if err := patch("rbac-theirs", adopt); !refused(err) {
		t.Errorf("got %%v adopting an object (an owner reference added), want it refused by the policy", err)
	}
	if _, err := asAccount.Create(ctx, object("rbac-mine", controlled), metav1.CreateOptions{}); err != nil {
		t.Fatalf("got %%v creating an object a $Kind controls, want it allowed", err)
	}
	for what, change := range map[string]string{
		"dropping its owner reference": `+"`"+`{"metadata":{"ownerReferences":null}}`+"`"+`,
		"adding a finalizer":           `+"`"+`{"metadata":{"finalizers":["example.com/hold"]}}`+"`"+`,
	} {
		if err := patch("rbac-mine", change); !refused(err) {
			t.Errorf("got %%v %%s, want it refused by the policy", err, what)
		}
	}
}
`, first.Kind+"s", map[bool]string{true: "in its children's namespace", false: "in the namespaces it serves"}[op.Cluster], first.Client, ns, first.goType(), first.minimal, crs, ownerNS, quoted(op.policyNames()))
	}
	f.code(`
// The API server accepts the deploy manifests (a server-side dry run:
// nothing runs) once the namespace exists.
func TestRBACDeployManifestsApply(t *testing.T) {
	kubectl(t, "apply", "-k", rbacDir)
	kubectl(t, "apply", "--dry-run=server", "-k", deployDir)
}
`)
	return f
}
