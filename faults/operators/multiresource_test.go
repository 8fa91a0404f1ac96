package operators_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyclient "github.com/kooperkit/kooper/apis/client/clientset/versioned/typed/tenancy/v1alpha1"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/faults"
	"github.com/kooperkit/kooper/hack/envtest"
)

// The multi-resource run: mrTenants Tenants, one of them deleted and a new
// one created half-way through the faults; the children's names and labels
// are those the operator's README documents.
const (
	mrTenants  = 6
	mrConverge = 60 * time.Second
	// mrCollected bounds the garbage collection of the Tenant deleted
	// during the faults. It is kube-controller-manager's: its garbage
	// collector retries an object it failed to get (the API server down,
	// or refusing it while RBAC warms up) with a delay that doubles each
	// time, and the namespace controller retries at least every minute;
	// both took over 60s after some runs' faults.
	mrCollected = 2 * mrConverge

	mrUser      = "system:serviceaccount:kooper-multi-resource:multi-resource"
	mrNamespace = "kooper-multi-resource"
	mrName      = "multi-resource" // the ServiceAccount's and the Lease's

	mrManagedByLabel = "app.kubernetes.io/managed-by"
	mrManagedBy      = "kooper-multi-resource"
	mrTenantLabel    = "tenancy.kooperkit.io/tenant"
	mrQuota          = "tenant-quota"
	mrLimits         = "tenant-limits"
	mrBinding        = "tenant-admins"
	mrPolicy         = "tenant-default-deny"
	// mrKeptLabel is a label the test puts on the first Tenants'
	// namespaces: the operator's apply does not own it and must keep it.
	mrKeptLabel = "faults.kooperkit.io/kept"
)

// mrCountedObjects are the kinds whose number the tenant's quota caps, as
// operators/multi-resource/internal/tenant writes them, listed here anew.
var mrCountedObjects = []corev1.ResourceName{
	"count/configmaps", "count/secrets", "count/services", "count/persistentvolumeclaims",
	"count/serviceaccounts", "count/replicationcontrollers",
	"count/deployments.apps", "count/statefulsets.apps", "count/daemonsets.apps",
	"count/jobs.batch", "count/cronjobs.batch",
	"count/horizontalpodautoscalers.autoscaling", "count/poddisruptionbudgets.policy",
	"count/ingresses.networking.k8s.io", "count/networkpolicies.networking.k8s.io",
	"count/roles.rbac.authorization.k8s.io", "count/rolebindings.rbac.authorization.k8s.io",
}

// TestMultiResourceUnderFaults runs three replicas of the multi-resource
// binary, under leader election as the operator's own ServiceAccount, each
// through a fault-injecting proxy. Six Tenants are created with random
// specs; while faults are mixed at random (FAULTS_SEED,
// FAULTS_OPERATOR_DURATION, default 60s), a writer changes the Tenants'
// specs (quota, default limits, admins, Pod Security level, network
// isolation) and edits or deletes their children behind the operator's
// back, and half-way through one Tenant is deleted and another created.
// The run checks:
//
//   - within 60s of the faults' end, each Tenant's children on the API
//     server are what its spec says: the namespace's managed-by, tenant and
//     Pod Security labels, the ResourceQuota's hard limits, the
//     LimitRange's container defaults, the RoleBinding's admins bound to
//     the ClusterRole admin, the NetworkPolicy present exactly when
//     isolated, each controlled by the Tenant (blocking its deletion), and
//     Ready for the Tenant's generation; a label of the test's own on the
//     namespace is kept; and within 120s (mrCollected) the deleted
//     Tenant's namespace, and with it every child, is gone (garbage
//     collection);
//   - after each fault and at the end, the objects the operator must never
//     write keep their resourceVersion: in each Tenant's namespace a
//     ConfigMap, a RoleBinding carrying the tenant label, a ResourceQuota
//     labelled as managed by someone else, a LimitRange and a
//     NetworkPolicy; an unrelated namespace and its ConfigMap; a namespace
//     named as a Tenant's that the operator did not make, with a
//     ResourceQuota and a RoleBinding of the children's names in it (its
//     Tenant must stay NamespaceConflict);
//   - after each fault and at the end, every write the API server logged
//     (audit log, any outcome) for the operator's ServiceAccount was to an
//     object it manages, told by kind, namespace and name: its Lease,
//     the status of a Tenant of the run, the namespace of one of those
//     Tenants (create or apply) and, in it, the quota, limit range and
//     binding (apply) and the NetworkPolicy (apply or delete); of the
//     squatted namespace, only a create that failed (AlreadyExists, or a
//     timeout while etcd is down).
func TestMultiResourceUnderFaults(t *testing.T) {
	s, d, rng, bin := begin(t, "multi-resource", "tenancy")
	ctx := context.Background()
	cfg := cluster.Config()
	cfg.QPS, cfg.Burst = 200, 400
	r := &mrRun{
		kube:    kubernetes.NewForConfigOrDie(cfg),
		tenants: versioned.NewForConfigOrDie(cfg).TenancyV1alpha1().Tenants(),
		known:   map[string]bool{},
		kept:    map[string]bool{},
	}
	waitFor(t, 30*time.Second, "Tenant CRD served", func() bool {
		_, err := r.tenants.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	})
	r.since = time.Now()

	ns := runName("faults-mr")
	ports := map[string]int{}
	for i := range 3 {
		ports[fmt.Sprintf("r%d", i+1)] = freePort(t)
	}
	h := &faults.Harness{
		Cluster: cluster, Namespace: ns, Dir: t.TempDir(), Logf: t.Logf,
		ServiceAccount: mrNamespace + "/" + mrName, Lease: mrNamespace + "/" + mrName, LeaseDuration: leaseDuration,
		Command: func(id, kubeconfig string) *exec.Cmd {
			name, _, _ := strings.Cut(id, "-")
			args := append([]string{"-kubeconfig", kubeconfig, "-namespace", mrNamespace,
				fmt.Sprintf("-http-addr=127.0.0.1:%d", ports[name])}, leaseFlags()...)
			return exec.Command(bin, args...)
		},
	}
	startHarness(t, h, 3)
	t.Cleanup(func() { r.cleanup(ns) })

	// The squatted namespace and the unrelated one come before any Tenant.
	r.squatter = runName("mr")
	r.unrelated = runName("faults-mr-unrelated")
	r.plantOutside(t)
	for range mrTenants {
		name := runName("mr")
		r.known[name] = true
		r.live = append(r.live, name)
		if _, err := r.tenants.Create(ctx, newTenant(name, randomSpec(rng)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r.known[r.squatter] = true
	if _, err := r.tenants.Create(ctx, newTenant(r.squatter, randomSpec(rng)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var problems []string
	waitFor(t, mrConverge, "Tenants converged before the faults", func() bool {
		problems = r.problems(ctx)
		return len(problems) == 0
	})
	t.Logf("%d Tenants converged in %s, before the faults", mrTenants, time.Since(began).Round(time.Millisecond))
	for _, name := range r.live {
		r.plantInside(t, name)
	}
	r.snapshotDecoys(t)

	check := func() error {
		var errs []string
		if p := r.decoyProblems(ctx, false); len(p) > 0 {
			errs = append(errs, "objects the operator must not write changed: "+strings.Join(p, "; "))
		}
		if _, p := r.audit(t); len(p) > 0 {
			errs = append(errs, "the operator wrote objects it does not manage (audit log): "+strings.Join(p, "; "))
		}
		if len(errs) > 0 {
			return errors.New(strings.Join(errs, "; "))
		}
		return nil
	}
	wrng := rand.New(rand.NewPCG(s^0x6d72, s)) // the writer's own: it runs alongside the faults
	stop := r.startWriter(wrng, time.Now().Add(d/2))
	t.Cleanup(func() { stop() }) // if a check fails first
	counts := mixFaults(t, h, rng, s, d, check)
	changes := stop()
	t.Logf("faults injected: %v", counts)
	t.Logf("writer: %v", changes)
	if changes["swap"] == 0 {
		t.Fatalf("seed %d: the Tenant to delete and the one to create half-way through were not both done", s)
	}

	ended := time.Now()
	var specAt, goneAt time.Duration
	for specAt == 0 || goneAt == 0 {
		if specAt == 0 {
			if problems = r.problems(ctx); len(problems) == 0 {
				specAt = time.Since(ended)
			} else if time.Since(ended) > mrConverge {
				t.Fatalf("seed %d: not converged %s after the faults stopped: %s", s, mrConverge, strings.Join(problems, "; "))
			}
		}
		if goneAt == 0 {
			if gone := r.goneProblems(ctx); len(gone) == 0 {
				goneAt = time.Since(ended)
			} else if time.Since(ended) > mrCollected {
				logControllerManager(t, r.deletedNames())
				t.Fatalf("seed %d: %s after the faults stopped: %s", s, mrCollected, strings.Join(gone, "; "))
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	// Nothing undoes convergence once the writer has stopped.
	if problems = r.problems(ctx); len(problems) > 0 {
		t.Fatalf("seed %d: converged, then not: %s", s, strings.Join(problems, "; "))
	}
	t.Logf("%d Tenants' children matched their specs %s after the faults stopped; the Tenant deleted at %s was collected %s after the faults stopped",
		len(r.liveNames()), specAt.Round(time.Millisecond), r.deletedAt.Format(time.TimeOnly), goneAt.Round(time.Millisecond))

	if p := r.decoyProblems(ctx, true); len(p) > 0 {
		t.Fatalf("seed %d: objects the operator must not write changed: %s", s, strings.Join(p, "; "))
	}
	writes, p := r.audit(t)
	if len(p) > 0 {
		t.Fatalf("seed %d: the operator wrote objects it does not manage (audit log): %s", s, strings.Join(p, "; "))
	}
	if len(writes) == 0 {
		t.Fatalf("seed %d: the audit log has no write of %s: the audit policy does not record them", s, mrUser)
	}
	t.Logf("%d decoys unchanged; %d writes of the operator in the audit log, each to an object it manages: %v",
		len(r.decoys), len(writes), writeKinds(writes))
}

// mrRun is the state of a multi-resource run: the Tenants, which the
// writer goroutine changes, and the objects the operator must not write.
type mrRun struct {
	kube    kubernetes.Interface
	tenants tenancyclient.TenantInterface
	// since is when the run's replicas started: the audit log's earlier
	// entries are other runs'.
	since     time.Time
	squatter  string // a Tenant whose namespace the test made first
	unrelated string // a namespace of no Tenant
	decoys    []decoy
	// kept are the Tenants whose namespace has mrKeptLabel.
	kept map[string]bool

	mu sync.Mutex
	// known are the run's Tenants, the squatter and those deleted
	// included: the operator may write their status.
	known   map[string]bool
	live    []string // not the squatter
	deleted []string
	// deletedAt is when the writer deleted a Tenant; read once it stopped.
	deletedAt time.Time
}

func (r *mrRun) liveNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.live)
}

func (r *mrRun) isKnown(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.known[name]
}

func (r *mrRun) isDeleted(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.deleted, name)
}

func newTenant(name string, spec tenancyv1alpha1.TenantSpec) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

// Values the writer picks specs from.
var (
	mrCPUs        = []string{"500m", "1", "2", "4"}
	mrMemories    = []string{"512Mi", "1Gi", "4Gi", "8Gi"}
	mrDefaultCPUs = []string{"100m", "250m", "500m"}
	mrDefaultMems = []string{"64Mi", "128Mi", "256Mi"}
	mrAdmins      = []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}, {Kind: "User", Name: "bob"}, {Kind: "User", Name: "dave"},
		{Kind: "Group", Name: "devs"}, {Kind: "Group", Name: "ops"}}
)

func pick[T any](rng *rand.Rand, from []T) T { return from[rng.IntN(len(from))] }

func randomQuota(rng *rand.Rand) *tenancyv1alpha1.Quota {
	return &tenancyv1alpha1.Quota{CPU: resource.MustParse(pick(rng, mrCPUs)), Memory: resource.MustParse(pick(rng, mrMemories)), Pods: int32(1 + rng.IntN(50))}
}

func randomLimits(rng *rand.Rand) *tenancyv1alpha1.ContainerDefaults {
	return &tenancyv1alpha1.ContainerDefaults{CPU: resource.MustParse(pick(rng, mrDefaultCPUs)), Memory: resource.MustParse(pick(rng, mrDefaultMems))}
}

// randomAdmins returns 1-3 distinct admins in a random order.
func randomAdmins(rng *rand.Rand) []tenancyv1alpha1.Admin {
	perm := rng.Perm(len(mrAdmins))
	out := make([]tenancyv1alpha1.Admin, 1+rng.IntN(3))
	for i := range out {
		out[i] = mrAdmins[perm[i]]
	}
	return out
}

func randomSpec(rng *rand.Rand) tenancyv1alpha1.TenantSpec {
	level := tenancyv1alpha1.PodSecurityRestricted
	if rng.IntN(2) == 0 {
		level = tenancyv1alpha1.PodSecurityBaseline
	}
	return tenancyv1alpha1.TenantSpec{Admins: randomAdmins(rng), PodSecurity: level, Quota: randomQuota(rng),
		DefaultLimits: randomLimits(rng), NetworkIsolation: rng.IntN(2) == 0}
}

// region: converged

// problems returns how each live Tenant's children differ from its spec,
// and how the squatter differs from a NamespaceConflict; none when all
// match.
func (r *mrRun) problems(ctx context.Context) []string {
	var out []string
	for _, name := range r.liveNames() {
		out = append(out, r.tenantProblems(ctx, name)...)
	}
	tn, err := r.tenants.Get(ctx, r.squatter, metav1.GetOptions{})
	if err != nil {
		return append(out, fmt.Sprintf("Tenant %s: %v", r.squatter, err))
	}
	if c := readyCondition(tn); c == nil || c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.ReasonNamespaceConflict {
		out = append(out, fmt.Sprintf("Tenant %s, whose namespace the test made: got Ready %+v, want False with reason %s", r.squatter, c, tenancyv1alpha1.ReasonNamespaceConflict))
	}
	return out
}

func readyCondition(tn *tenancyv1alpha1.Tenant) *metav1.Condition {
	for i, c := range tn.Status.Conditions {
		if c.Type == tenancyv1alpha1.ConditionReady {
			return &tn.Status.Conditions[i]
		}
	}
	return nil
}

// tenantProblems compares Tenant name's children on the API server with
// its spec there.
func (r *mrRun) tenantProblems(ctx context.Context, name string) []string {
	tn, err := r.tenants.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return []string{fmt.Sprintf("Tenant %s: %v", name, err)}
	}
	ns := tenancyv1alpha1.NamespacePrefix + name
	var out []string
	bad := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("Tenant %s: ", name)+fmt.Sprintf(format, args...))
	}
	// managed checks the labels and owner every child has; want adds
	// labels of its own.
	managed := func(what string, obj metav1.Object, want map[string]string) {
		all := map[string]string{mrManagedByLabel: mrManagedBy, mrTenantLabel: name}
		maps.Copy(all, want)
		for k, v := range all {
			if got, ok := obj.GetLabels()[k]; !ok || got != v {
				bad("%s: got label %s=%q, want %q", what, k, got, v)
			}
		}
		ref := metav1.GetControllerOf(obj)
		if ref == nil || ref.UID != tn.UID || ref.Kind != "Tenant" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			bad("%s: got controller %+v, want the Tenant (UID %s), blocking its deletion", what, ref, tn.UID)
		}
		if obj.GetDeletionTimestamp() != nil {
			bad("%s is being deleted", what)
		}
	}

	if c := readyCondition(tn); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != tn.Generation || tn.Status.ObservedGeneration != tn.Generation {
		bad("got Ready %+v, observedGeneration %d, want True for generation %d", c, tn.Status.ObservedGeneration, tn.Generation)
	}
	if n, err := r.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		bad("namespace: %v", err)
	} else {
		level := string(tn.Spec.PodSecurity)
		want := map[string]string{}
		for _, mode := range []string{"enforce", "warn", "audit"} {
			want["pod-security.kubernetes.io/"+mode] = level
			want["pod-security.kubernetes.io/"+mode+"-version"] = "latest"
		}
		if r.kept[name] {
			want[mrKeptLabel] = "yes"
		}
		managed("namespace "+ns, n, want)
	}
	if q, err := r.kube.CoreV1().ResourceQuotas(ns).Get(ctx, mrQuota, metav1.GetOptions{}); err != nil {
		bad("ResourceQuota: %v", err)
	} else {
		managed("ResourceQuota", q, nil)
		sq := tn.Spec.Quota
		want := corev1.ResourceList{
			corev1.ResourceRequestsCPU: sq.CPU, corev1.ResourceLimitsCPU: sq.CPU,
			corev1.ResourceRequestsMemory: sq.Memory, corev1.ResourceLimitsMemory: sq.Memory,
			corev1.ResourcePods: *resource.NewQuantity(int64(sq.Pods), resource.DecimalSI),
		}
		// Object counts: spec.quota.objects of each kind a tenant admin
		// could multiply (100 unless set).
		objects := int64(sq.Objects)
		if objects == 0 {
			objects = 100
		}
		for _, kind := range mrCountedObjects {
			want[kind] = *resource.NewQuantity(objects, resource.DecimalSI)
		}
		if !equality.Semantic.DeepEqual(q.Spec.Hard, want) {
			bad("ResourceQuota: got hard %v, want %v", q.Spec.Hard, want)
		}
	}
	if l, err := r.kube.CoreV1().LimitRanges(ns).Get(ctx, mrLimits, metav1.GetOptions{}); err != nil {
		bad("LimitRange: %v", err)
	} else {
		managed("LimitRange", l, nil)
		dl := corev1.ResourceList{corev1.ResourceCPU: tn.Spec.DefaultLimits.CPU, corev1.ResourceMemory: tn.Spec.DefaultLimits.Memory}
		want := []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: dl, DefaultRequest: dl}}
		if !equality.Semantic.DeepEqual(l.Spec.Limits, want) {
			bad("LimitRange: got %+v, want %+v", l.Spec.Limits, want)
		}
	}
	if b, err := r.kube.RbacV1().RoleBindings(ns).Get(ctx, mrBinding, metav1.GetOptions{}); err != nil {
		bad("RoleBinding: %v", err)
	} else {
		managed("RoleBinding", b, nil)
		want := make([]rbacv1.Subject, 0, len(tn.Spec.Admins))
		for _, a := range tn.Spec.Admins {
			want = append(want, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: a.Kind, Name: a.Name})
		}
		wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}
		if !equality.Semantic.DeepEqual(b.Subjects, want) || b.RoleRef != wantRef {
			bad("RoleBinding: got %+v to %+v, want %+v to %+v", b.Subjects, b.RoleRef, want, wantRef)
		}
	}
	p, err := r.kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, mrPolicy, metav1.GetOptions{})
	switch {
	case tn.Spec.NetworkIsolation && err != nil:
		bad("isolated, NetworkPolicy: %v", err)
	case tn.Spec.NetworkIsolation:
		managed("NetworkPolicy", p, nil)
		want := networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}
		if !equality.Semantic.DeepEqual(p.Spec, want) {
			bad("NetworkPolicy: got %+v, want %+v (deny all ingress)", p.Spec, want)
		}
	case err == nil:
		bad("not isolated, but NetworkPolicy %s exists (created %s, resourceVersion %s)", mrPolicy, p.CreationTimestamp.Format(time.TimeOnly), p.ResourceVersion)
	case !apierrors.IsNotFound(err):
		bad("NetworkPolicy: %v", err)
	}
	return out
}

// goneProblems returns the deleted Tenants whose namespace (and with it
// every child) is not gone yet.
func (r *mrRun) goneProblems(ctx context.Context) []string {
	var out []string
	for _, name := range r.deletedNames() {
		ns := tenancyv1alpha1.NamespacePrefix + name
		if _, err := r.tenants.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			out = append(out, fmt.Sprintf("deleted Tenant %s: got %v, want NotFound", name, err))
		}
		n, err := r.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			out = append(out, fmt.Sprintf("deleted Tenant %s: namespace %s: %v", name, ns, err))
		default:
			var conds []string
			for _, c := range n.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Message))
			}
			out = append(out, fmt.Sprintf("deleted Tenant %s: namespace %s not gone (%s, owners %v, finalizers %v, %v)",
				name, ns, n.Status.Phase, n.OwnerReferences, n.Spec.Finalizers, conds))
		}
	}
	return out
}

func (r *mrRun) deletedNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.deleted)
}

// logControllerManager logs the last lines of kube-controller-manager's
// log that name one of the Tenants: what held their deletion back.
func logControllerManager(t *testing.T, tenants []string) {
	b, err := os.ReadFile(filepath.Join(cluster.Dir(), envtest.BinControllerManager+".log"))
	if err != nil {
		t.Log(err)
		return
	}
	var lines []string
	for line := range strings.Lines(string(b)) {
		if slices.ContainsFunc(tenants, func(name string) bool { return strings.Contains(line, name) }) {
			lines = append(lines, line)
		}
	}
	t.Logf("kube-controller-manager's log about %v ends:\n%s", tenants, strings.Join(lines[max(0, len(lines)-30):], ""))
}

// endregion: converged

// region: decoys

// decoy is an object the operator must never write.
type decoy struct {
	what   string
	tenant string // whose namespace holds it; "" if none
	get    func(context.Context) (metav1.Object, error)
	rv     string
}

func getter[T metav1.Object](get func(context.Context, string, metav1.GetOptions) (T, error), name string) func(context.Context) (metav1.Object, error) {
	return func(ctx context.Context) (metav1.Object, error) {
		obj, err := get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return obj, nil
	}
}

// plantOutside makes the unrelated namespace with a ConfigMap, and the
// squatter's namespace, unlabelled and owned by no one, with a quota and a
// binding named as the operator's children.
func (r *mrRun) plantOutside(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	squatted := tenancyv1alpha1.NamespacePrefix + r.squatter
	for _, name := range []string{r.unrelated, squatted} {
		if _, err := r.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r.decoys = append(r.decoys, decoy{what: "namespace " + name, get: getter(r.kube.CoreV1().Namespaces().Get, name)})
	}
	r.plantConfigMap(t, "", r.unrelated)
	r.plantQuota(t, "", squatted, mrQuota, nil)
	r.plantBinding(t, "", squatted, mrBinding, nil)
}

// plantInside puts in Tenant name's namespace objects of the children's
// kinds under other names, one labelled with the tenant, one as managed
// by someone else, and a label of the test's own on the namespace.
func (r *mrRun) plantInside(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	ns := tenancyv1alpha1.NamespacePrefix + name
	r.plantConfigMap(t, name, ns)
	r.plantBinding(t, name, ns, "decoy-viewers", map[string]string{mrTenantLabel: name})
	r.plantQuota(t, name, ns, "decoy-quota", map[string]string{mrManagedByLabel: "someone-else"})
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "decoy-limits"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}}}
	if _, err := r.kube.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.decoys = append(r.decoys, decoy{what: "LimitRange " + ns + "/decoy-limits", tenant: name, get: getter(r.kube.CoreV1().LimitRanges(ns).Get, "decoy-limits")})
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "decoy-allow-all"}, Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{}}, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	if _, err := r.kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.decoys = append(r.decoys, decoy{what: "NetworkPolicy " + ns + "/decoy-allow-all", tenant: name, get: getter(r.kube.NetworkingV1().NetworkPolicies(ns).Get, "decoy-allow-all")})
	for {
		n, err := r.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels[mrKeptLabel] = "yes"
		if _, err = r.kube.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err == nil {
			break
		} else if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	r.kept[name] = true
}

func (r *mrRun) plantConfigMap(t *testing.T, tenant, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "decoy"}, Data: map[string]string{"k": "v"}}
	if _, err := r.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.decoys = append(r.decoys, decoy{what: "ConfigMap " + ns + "/decoy", tenant: tenant, get: getter(r.kube.CoreV1().ConfigMaps(ns).Get, "decoy")})
}

func (r *mrRun) plantQuota(t *testing.T, tenant, ns, name string, labels map[string]string) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100")}}}
	if _, err := r.kube.CoreV1().ResourceQuotas(ns).Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.decoys = append(r.decoys, decoy{what: "ResourceQuota " + ns + "/" + name, tenant: tenant, get: getter(r.kube.CoreV1().ResourceQuotas(ns).Get, name)})
}

func (r *mrRun) plantBinding(t *testing.T, tenant, ns, name string, labels map[string]string) {
	t.Helper()
	b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "eve"}}}
	if _, err := r.kube.RbacV1().RoleBindings(ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.decoys = append(r.decoys, decoy{what: "RoleBinding " + ns + "/" + name, tenant: tenant, get: getter(r.kube.RbacV1().RoleBindings(ns).Get, name)})
}

// snapshotDecoys records each decoy's resourceVersion, once the quota
// controller has written the decoy quotas' status (its only write to
// them while no pod runs).
func (r *mrRun) snapshotDecoys(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, 30*time.Second, "status of the decoy quotas", func() bool {
		for _, d := range r.decoys {
			obj, err := d.get(ctx)
			if q, ok := obj.(*corev1.ResourceQuota); err != nil || (ok && len(q.Status.Hard) == 0) {
				return false
			}
		}
		return true
	})
	for i, d := range r.decoys {
		obj, err := d.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.decoys[i].rv = obj.GetResourceVersion()
	}
}

// decoyProblems returns the decoys changed or deleted, but those in the
// deleted Tenant's namespace (gone with it). Unless strict, a decoy the
// API server cannot answer for now is passed over.
func (r *mrRun) decoyProblems(ctx context.Context, strict bool) []string {
	var out []string
	for _, d := range r.decoys {
		if d.tenant != "" && r.isDeleted(d.tenant) {
			continue
		}
		obj, err := d.get(ctx)
		switch {
		case err != nil && (strict || apierrors.IsNotFound(err)):
			out = append(out, fmt.Sprintf("%s: %v", d.what, err))
		case err != nil:
		case obj.GetResourceVersion() != d.rv:
			out = append(out, fmt.Sprintf("%s: got resourceVersion %s, want %s (labels %v, owners %v)", d.what, obj.GetResourceVersion(), d.rv, obj.GetLabels(), obj.GetOwnerReferences()))
		}
	}
	return out
}

// endregion: decoys

// region: audit

// audit returns the writes the API server logged for the operator's
// ServiceAccount since the run began, and those to an object it does not
// manage.
func (r *mrRun) audit(t *testing.T) (writes []auditEvent, problems []string) {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			continue // a line being written
		}
		if ev.Stage != "ResponseComplete" || ev.User.Username != mrUser || ev.StageTimestamp.Before(r.since) {
			continue
		}
		writes = append(writes, ev)
		if !r.manages(ev) {
			o := ev.ObjectRef
			problems = append(problems, fmt.Sprintf("%s %s %s/%s (subresource %q) answered %d at %s",
				ev.Verb, o.Resource, o.Namespace, o.Name, o.Subresource, ev.ResponseStatus.Code, ev.StageTimestamp.Format("15:04:05.000000")))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(problems); n > 10 {
		problems = append(problems[:10], fmt.Sprintf("and %d more", n-10))
	}
	return writes, problems
}

// manages reports whether ev is a write the operator may make: to its
// Lease, to the status of one of the run's Tenants, to the namespace of
// one (create or apply, the squatter's excepted) or to a child in it.
func (r *mrRun) manages(ev auditEvent) bool {
	o := ev.ObjectRef
	// 429: the API server's flow control turned the request away before
	// reading it (the audit event names no object): nothing was written
	// (seed 1795681665057934643, after an API server restart).
	if ev.ResponseStatus.Code == http.StatusTooManyRequests {
		return true
	}
	verbs := func(vs ...string) bool { return slices.Contains(vs, ev.Verb) && o.Subresource == "" }
	owner, inTenant := strings.CutPrefix(o.Namespace, tenancyv1alpha1.NamespacePrefix)
	inTenant = inTenant && owner != r.squatter && r.isKnown(owner)
	switch o.Resource {
	case "leases":
		return o.Namespace == mrNamespace && o.Name == mrName && verbs("create", "update")
	case "tenants":
		return o.Subresource == "status" && ev.Verb == "update" && r.isKnown(o.Name)
	case "namespaces":
		owner, ok := strings.CutPrefix(o.Name, tenancyv1alpha1.NamespacePrefix)
		if ok && owner == r.squatter {
			// A create of a namespace that exists changes nothing, whatever
			// the answer: 409, or 504 while etcd is down (seed
			// 1795539642426035763). Only a create that succeeded would be
			// the operator taking it over.
			return verbs("create") && ev.ResponseStatus.Code/100 != 2
		}
		return ok && r.isKnown(owner) && verbs("create", "patch")
	case "resourcequotas":
		return inTenant && o.Name == mrQuota && verbs("create", "patch")
	case "limitranges":
		return inTenant && o.Name == mrLimits && verbs("create", "patch")
	case "rolebindings":
		return inTenant && o.Name == mrBinding && verbs("create", "patch")
	case "networkpolicies":
		return inTenant && o.Name == mrPolicy && verbs("create", "patch", "delete")
	}
	return false
}

// writeKinds counts writes by verb and resource, and those the API server
// refused.
func writeKinds(writes []auditEvent) map[string]int {
	out := map[string]int{}
	for _, ev := range writes {
		k := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			k += "/" + ev.ObjectRef.Subresource
		}
		out[k]++
		if ev.ResponseStatus.Code/100 != 2 {
			out[fmt.Sprintf("refused %d", ev.ResponseStatus.Code)]++
		}
	}
	return out
}

// endregion: audit

// region: writer

// startWriter changes the live Tenants' specs and their children, straight
// on the API server, every 0.2-1s, and at swapAt deletes one Tenant and
// creates another; errors (while the API server or etcd is down) only
// skip a change. stop ends it and returns what it did, by kind.
func (r *mrRun) startWriter(rng *rand.Rand, swapAt time.Time) (stop func() map[string]int) {
	ctx, cancel := context.WithCancel(context.Background())
	counts := map[string]int{}
	var wg sync.WaitGroup
	wg.Go(func() {
		var victim, newcomer string
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(200+rng.IntN(800)) * time.Millisecond):
			}
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			if time.Now().After(swapAt) && counts["swap"] == 0 {
				victim, newcomer = r.swap(wctx, rng, victim, newcomer)
				if newcomer != "" && r.isLive(newcomer) {
					counts["swap"]++
				}
			}
			live := r.liveNames()
			if rng.IntN(3) == 0 {
				if what, err := r.drift(wctx, rng, pick(rng, live)); err == nil {
					counts["drift: "+what]++
				}
			} else if what, err := r.changeSpec(wctx, rng, pick(rng, live)); err == nil {
				counts["spec: "+what]++
			}
			wcancel()
		}
	})
	return func() map[string]int {
		cancel()
		wg.Wait()
		return counts
	}
}

func (r *mrRun) isLive(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.live, name)
}

// swap deletes a live Tenant (victim, once chosen), then creates another
// (newcomer), a step a call; it returns them for the next call.
func (r *mrRun) swap(ctx context.Context, rng *rand.Rand, victim, newcomer string) (string, string) {
	if victim == "" {
		r.mu.Lock()
		i := rng.IntN(len(r.live))
		victim = r.live[i]
		// Off the list first: nothing else writes it, and decoys in its
		// namespace go with it.
		r.live = slices.Delete(r.live, i, i+1)
		r.deleted = append(r.deleted, victim)
		r.mu.Unlock()
	}
	if newcomer == "" {
		if err := r.tenants.Delete(ctx, victim, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return victim, ""
		}
		r.deletedAt = time.Now()
		newcomer = runName("mr")
		r.mu.Lock()
		r.known[newcomer] = true
		r.mu.Unlock()
	}
	if _, err := r.tenants.Create(ctx, newTenant(newcomer, randomSpec(rng)), metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
		r.mu.Lock()
		r.live = append(r.live, newcomer)
		r.mu.Unlock()
	}
	return victim, newcomer
}

// changeSpec changes one part of Tenant name's spec at random.
func (r *mrRun) changeSpec(ctx context.Context, rng *rand.Rand, name string) (string, error) {
	what := pick(rng, []string{"quota", "defaultLimits", "admins", "podSecurity", "networkIsolation"})
	for {
		tn, err := r.tenants.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return what, err
		}
		switch what {
		case "quota":
			tn.Spec.Quota = randomQuota(rng)
		case "defaultLimits":
			tn.Spec.DefaultLimits = randomLimits(rng)
		case "admins":
			tn.Spec.Admins = randomAdmins(rng)
		case "podSecurity":
			if tn.Spec.PodSecurity == tenancyv1alpha1.PodSecurityBaseline {
				tn.Spec.PodSecurity = tenancyv1alpha1.PodSecurityRestricted
			} else {
				tn.Spec.PodSecurity = tenancyv1alpha1.PodSecurityBaseline
			}
		case "networkIsolation":
			tn.Spec.NetworkIsolation = !tn.Spec.NetworkIsolation
		}
		if _, err = r.tenants.Update(ctx, tn, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			return what, err
		}
	}
}

// drift deletes or edits one of Tenant name's children, as someone other
// than the operator would.
func (r *mrRun) drift(ctx context.Context, rng *rand.Rand, name string) (string, error) {
	ns := tenancyv1alpha1.NamespacePrefix + name
	core, rbac := r.kube.CoreV1(), r.kube.RbacV1()
	del := metav1.DeleteOptions{}
	switch what := pick(rng, []string{"delete quota", "delete limits", "delete binding", "delete policy",
		"edit quota", "edit limits", "edit binding", "edit namespace"}); what {
	case "delete quota":
		return what, core.ResourceQuotas(ns).Delete(ctx, mrQuota, del)
	case "delete limits":
		return what, core.LimitRanges(ns).Delete(ctx, mrLimits, del)
	case "delete binding":
		return what, rbac.RoleBindings(ns).Delete(ctx, mrBinding, del)
	case "delete policy":
		return what, r.kube.NetworkingV1().NetworkPolicies(ns).Delete(ctx, mrPolicy, del)
	case "edit quota":
		q, err := core.ResourceQuotas(ns).Get(ctx, mrQuota, metav1.GetOptions{})
		if err != nil {
			return what, err
		}
		q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("999")
		_, err = core.ResourceQuotas(ns).Update(ctx, q, metav1.UpdateOptions{})
		return what, err
	case "edit limits":
		l, err := core.LimitRanges(ns).Get(ctx, mrLimits, metav1.GetOptions{})
		if err != nil {
			return what, err
		}
		l.Spec.Limits = []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}
		_, err = core.LimitRanges(ns).Update(ctx, l, metav1.UpdateOptions{})
		return what, err
	case "edit binding":
		b, err := rbac.RoleBindings(ns).Get(ctx, mrBinding, metav1.GetOptions{})
		if err != nil {
			return what, err
		}
		b.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "mallory"}}
		_, err = rbac.RoleBindings(ns).Update(ctx, b, metav1.UpdateOptions{})
		return what, err
	default: // edit namespace: lower its Pod Security level
		n, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return what, err
		}
		n.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
		_, err = core.Namespaces().Update(ctx, n, metav1.UpdateOptions{})
		return what, err
	}
}

// endregion: writer

// cleanup deletes the run's Tenants (the garbage collector deletes their
// namespaces), the squatted and unrelated namespaces, and the harness's.
func (r *mrRun) cleanup(harnessNS string) {
	ctx := context.Background()
	r.mu.Lock()
	names := slices.Collect(maps.Keys(r.known))
	r.mu.Unlock()
	for _, name := range names {
		_ = r.tenants.Delete(ctx, name, metav1.DeleteOptions{})
	}
	for _, ns := range []string{r.unrelated, tenancyv1alpha1.NamespacePrefix + r.squatter, harnessNS} {
		if ns != "" && ns != tenancyv1alpha1.NamespacePrefix {
			_ = r.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		}
	}
}
