package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// The operator, run as its ServiceAccount (impersonation) with leader
// election, against a control plane whose garbage collector and namespace
// controller do all the deleting.
func TestTenantsEndToEnd(t *testing.T) {
	ctx := context.Background()
	e2eManifests(t)
	adminCfg := rest.CopyConfig(cluster.Config())
	adminCfg.QPS, adminCfg.Burst = 200, 400
	kube := kubernetes.NewForConfigOrDie(adminCfg)
	tenants := versioned.NewForConfigOrDie(adminCfg).TenancyV1alpha1().Tenants()

	// region: run-operator
	registry := prom.NewRegistry()
	httpAddr := e2etest.FreeAddr(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	cfg := operator.Config{
		TracerProvider: tp,
		// The command's client limits. Its Tenant watch hands on events
		// 100ms late (the children's do not), so that its handlings' own
		// writes are certain to be waited for (below).
		REST:     e2etest.SlowWatches(e2etest.AsServiceAccount(cluster.Config(), "kooper-multi-resource", "multi-resource", 100, 200), "tenants", 100*time.Millisecond),
		Registry: registry,
		HTTPAddr: httpAddr,
		Logger:   log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
	// endregion: run-operator

	var (
		acme    *tenancyv1alpha1.Tenant
		readyAt time.Time
	)
	t.Run("a Tenant gets its namespace and children, owned by it, within 10s", func(t *testing.T) {
		var err error
		acme, err = tenants.Create(ctx, &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "acme"},
			Spec: tenancyv1alpha1.TenantSpec{
				Admins:           []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "acme-devs"}},
				NetworkIsolation: true,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if q := acme.Spec.Quota; q == nil || q.CPU.String() != "2" || q.Memory.String() != "4Gi" || q.Pods != 20 {
			t.Errorf("got quota %+v, want the schema's defaults 2 CPU, 4Gi, 20 pods", q)
		}
		began := time.Now()
		e2etest.Eventually(t, 10*time.Second, "acme is Ready with 5 children", func() bool { return ready(t, tenants, "acme", 5) })
		readyAt = time.Now()
		t.Logf("acme Ready in %s", readyAt.Sub(began).Round(time.Millisecond))

		ns, err := kube.CoreV1().Namespaces().Get(ctx, "tenant-acme", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		quota, err := kube.CoreV1().ResourceQuotas("tenant-acme").Get(ctx, tenant.QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		limits, err := kube.CoreV1().LimitRanges("tenant-acme").Get(ctx, tenant.LimitRangeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		binding, err := kube.RbacV1().RoleBindings("tenant-acme").Get(ctx, tenant.RoleBindingName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		policy, err := kube.NetworkingV1().NetworkPolicies("tenant-acme").Get(ctx, tenant.NetworkPolicyName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range []metav1.Object{ns, quota, limits, binding, policy} {
			ref := metav1.GetControllerOf(obj)
			if ref == nil || ref.UID != acme.UID || ref.Kind != "Tenant" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("%s: got controller %+v, want Tenant acme (%s) blocking deletion", obj.GetName(), ref, acme.UID)
			}
			if obj.GetLabels()[tenant.ManagedByLabel] != tenant.ManagedBy || obj.GetLabels()[tenant.TenantLabel] != "acme" {
				t.Errorf("%s: got labels %v, want managed-by and tenant", obj.GetName(), obj.GetLabels())
			}
		}
		if got := quota.Spec.Hard[corev1.ResourceRequestsCPU]; got.Cmp(resource.MustParse("2")) != 0 || quota.Spec.Hard.Pods().Value() != 20 {
			t.Errorf("got quota %v, want 2 CPU and 20 pods", quota.Spec.Hard)
		}
		if d := limits.Spec.Limits[0].Default; d.Cpu().String() != "500m" || d.Memory().String() != "256Mi" {
			t.Errorf("got default limits %v, want 500m and 256Mi", d)
		}
		wantSubjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}, {APIGroup: rbacv1.GroupName, Kind: "Group", Name: "acme-devs"}}
		if !slices.Equal(binding.Subjects, wantSubjects) || binding.RoleRef.Name != "admin" {
			t.Errorf("got binding %+v to %+v, want alice and acme-devs as admin", binding.Subjects, binding.RoleRef)
		}
	})
	if acme == nil {
		t.FailNow()
	}

	t.Run("drift is repaired and unrelated objects are left alone", func(t *testing.T) {
		// Repairs are told from spec changes by managedFields times, which
		// have a resolution of one second: edit in a later second than the
		// creation.
		time.Sleep(time.Until(readyAt.Add(1100 * time.Millisecond)))
		unrelated, err := kube.CoreV1().ConfigMaps("tenant-acme").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}, Data: map[string]string{"k": "v"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		oldQuota, err := kube.CoreV1().ResourceQuotas("tenant-acme").Get(ctx, tenant.QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := kube.CoreV1().ResourceQuotas("tenant-acme").Delete(ctx, tenant.QuotaName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		binding, err := kube.RbacV1().RoleBindings("tenant-acme").Get(ctx, tenant.RoleBindingName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		binding.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "mallory"}}
		binding.Labels["added-by"] = "someone-else" // a field the operator does not own
		if _, err := kube.RbacV1().RoleBindings("tenant-acme").Update(ctx, binding, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		e2etest.Eventually(t, 10*time.Second, "the quota is back and the binding restored", func() bool {
			q, err := kube.CoreV1().ResourceQuotas("tenant-acme").Get(ctx, tenant.QuotaName, metav1.GetOptions{})
			if err != nil || q.UID == oldQuota.UID {
				return false
			}
			b, err := kube.RbacV1().RoleBindings("tenant-acme").Get(ctx, tenant.RoleBindingName, metav1.GetOptions{})
			return err == nil && len(b.Subjects) == 2 && b.Subjects[0].Name == "alice"
		})
		t.Logf("drift repaired in %s", time.Since(began).Round(time.Millisecond))
		// One deleted child and one edited child: one repair each, however
		// many handlings the events cause.
		repairs := func(kind string) float64 {
			return e2etest.Metric(t, registry, "kooper_tenant_drift_repairs_total", map[string]string{"kind": kind})
		}
		e2etest.Eventually(t, 5*time.Second, "both repairs are counted", func() bool {
			return repairs(tenant.KindResourceQuota) >= 1 && repairs(tenant.KindRoleBinding) >= 1
		})
		time.Sleep(2 * time.Second) // later handlings must not count them again
		for _, kind := range []string{tenant.KindResourceQuota, tenant.KindRoleBinding, tenant.KindNamespace, tenant.KindLimitRange, tenant.KindNetworkPolicy} {
			want := 0.0
			if kind == tenant.KindResourceQuota || kind == tenant.KindRoleBinding {
				want = 1
			}
			if n := repairs(kind); n != want {
				t.Errorf("got %v drift repairs of %s, want %v", n, kind, want)
			}
		}
		if b, err := kube.RbacV1().RoleBindings("tenant-acme").Get(ctx, tenant.RoleBindingName, metav1.GetOptions{}); err != nil || b.Labels["added-by"] != "someone-else" {
			t.Errorf("got binding labels %v (%v), want the foreign label kept: server-side apply leaves fields it does not own", b.Labels, err)
		}
		got, err := kube.CoreV1().ConfigMaps("tenant-acme").Get(ctx, "unrelated", metav1.GetOptions{})
		if err != nil || got.ResourceVersion != unrelated.ResourceVersion || len(got.OwnerReferences) > 0 {
			t.Errorf("the unrelated ConfigMap changed: %+v, %v", got, err)
		}
	})

	t.Run("a spec change updates the children and removes the NetworkPolicy", func(t *testing.T) {
		for {
			cur, err := tenants.Get(ctx, "acme", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Spec.Quota.CPU, cur.Spec.Quota.Pods, cur.Spec.NetworkIsolation = resource.MustParse("4"), 40, false
			if _, err = tenants.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		e2etest.Eventually(t, 10*time.Second, "the quota is raised and the policy gone", func() bool {
			q, err := kube.CoreV1().ResourceQuotas("tenant-acme").Get(ctx, tenant.QuotaName, metav1.GetOptions{})
			if err != nil || q.Spec.Hard.Pods().Value() != 40 || q.Spec.Hard.Name(corev1.ResourceLimitsCPU, resource.DecimalSI).String() != "4" {
				return false
			}
			_, err = kube.NetworkingV1().NetworkPolicies("tenant-acme").Get(ctx, tenant.NetworkPolicyName, metav1.GetOptions{})
			return apierrors.IsNotFound(err) && ready(t, tenants, "acme", 4)
		})
	})

	t.Run("50 Tenants converge in seconds, then the operator is quiet", func(t *testing.T) {
		const n = 50
		callsBefore := e2etest.Metric(t, registry, "kooper_controller_handle_duration_seconds", map[string]string{"controller": operator.DefaultName})
		spansBefore := len(spans.GetSpans())
		began := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = tenants.Create(ctx, &tenancyv1alpha1.Tenant{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%02d", i)},
					Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: fmt.Sprintf("owner-%02d", i)}}},
				}, metav1.CreateOptions{})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			for i := range n {
				_ = tenants.Delete(context.Background(), fmt.Sprintf("load-%02d", i), metav1.DeleteOptions{})
			}
		})
		var notReady []string
		defer func() {
			if t.Failed() {
				t.Logf("not ready: %v", notReady)
			}
		}()
		e2etest.Eventually(t, 60*time.Second, "50 Tenants are Ready", func() bool {
			list, err := tenants.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			notReady = notReady[:0]
			for i := range list.Items {
				if !isReady(&list.Items[i], 4) {
					notReady = append(notReady, fmt.Sprintf("%s %+v", list.Items[i].Name, list.Items[i].Status))
				}
			}
			return len(notReady) == 0
		})
		converged := time.Since(began)
		// region: tenants-gauge
		// kooper_tenants counts the cache at scrape time: every Tenant is
		// Ready now, so it reports them all as ready and none as not.
		all, err := tenants.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e2etest.Eventually(t, 10*time.Second, "kooper_tenants counts every Tenant as ready", func() bool {
			ready := e2etest.Metric(t, registry, "kooper_tenants", map[string]string{"ready": "true"})
			notReady := e2etest.Metric(t, registry, "kooper_tenants", map[string]string{"ready": "false"})
			return ready == float64(len(all.Items)) && notReady == 0
		})
		// endregion: tenants-gauge
		// The last status writes come back as events: let them settle. The
		// quota controller writes each new ResourceQuota's status once, and
		// each write is a child event that queues its Tenant: under load it
		// comes seconds later, so wait for all of them first.
		e2etest.Eventually(t, 60*time.Second, "the quota controller has written every quota's status", func() bool {
			for i := range n {
				q, err := kube.CoreV1().ResourceQuotas(fmt.Sprintf("tenant-load-%02d", i)).Get(ctx, tenant.QuotaName, metav1.GetOptions{})
				if err != nil || len(q.Status.Hard) == 0 {
					return false
				}
			}
			return true
		})
		tenantCalls := func() float64 {
			return e2etest.Metric(t, registry, "kooper_controller_handle_duration_seconds", map[string]string{"controller": operator.DefaultName})
		}
		// The handler's calls: the sources also see the deletions of
		// earlier tests' children, whose Tenants are gone (they queue
		// nothing, as they should), whenever the namespace controller gets
		// to them.
		settled := tenantCalls()
		for {
			time.Sleep(time.Second)
			now := tenantCalls()
			if now == settled {
				break
			}
			settled = now
		}
		perTenant := (settled - callsBefore) / n
		time.Sleep(10 * time.Second)
		quiet := tenantCalls() - settled
		t.Logf("50 Tenants Ready in %s; %.1f Tenant handler calls per Tenant; %v Tenant handler calls in the 10s after", converged.Round(time.Millisecond), perTenant, quiet)
		if quiet != 0 {
			t.Errorf("got %v Tenant handler calls in a 10s quiet window after convergence, want 0 (a hot loop)", quiet)
		}
		// Per Tenant: its creation and its status write, the events of the
		// children it made (the namespace twice: created then applied),
		// and the quota controller's status writes; a key waiting in the
		// queue collapses the events that come meanwhile. A hot loop would
		// exceed this.
		if perTenant > maxCallsPerTenant {
			t.Errorf("got %.1f handler calls per Tenant, want at most %d", perTenant, maxCallsPerTenant)
		}

		// region: overlap
		// Every handling of a Tenant, from its span: the Tenant handler runs
		// only in the Tenant controller, and never twice at once for one
		// Tenant. The child kinds are sources: they queue the Tenant, with
		// no handling and no API call of their own.
		type interval struct{ start, end time.Time }
		handlings := map[string][]interval{}
		handlingIDs := map[trace.SpanID]string{}
		for _, s := range spans.GetSpans()[spansBefore:] {
			if !strings.HasPrefix(s.Name, "handle ") {
				continue
			}
			handlingIDs[s.SpanContext.SpanID()] = s.Name
			if s.Name != "handle "+operator.DefaultName {
				continue
			}
			for _, a := range s.Attributes {
				if a.Key == "kooper.object" {
					key := a.Value.AsString()
					handlings[key] = append(handlings[key], interval{s.StartTime, s.EndTime})
				}
			}
		}
		overlaps, total := 0, 0
		for key, hs := range handlings {
			slices.SortFunc(hs, func(a, b interval) int { return a.start.Compare(b.start) })
			for i := 1; i < len(hs); i++ {
				if hs[i].start.Before(hs[i-1].end) {
					overlaps++
					t.Errorf("Tenant %s: a handling started at %s while another ran until %s", key, hs[i].start.Format(time.StampMicro), hs[i-1].end.Format(time.StampMicro))
				}
			}
			total += len(hs)
		}
		calls := map[string]int{}
		for _, s := range spans.GetSpans()[spansBefore:] {
			if name, ok := handlingIDs[s.Parent.SpanID()]; ok {
				calls[name+" > "+s.Name]++
			}
		}
		others := map[string]int{}
		for _, name := range handlingIDs {
			if name != "handle "+operator.DefaultName {
				others[name]++
			}
		}
		t.Logf("%d Tenant handlings of %d Tenants, %d overlapping; API calls from handlings: %v", total, len(handlings), overlaps, calls)
		if len(others) > 0 {
			t.Errorf("got handlings %v, want only the Tenant controller's: the child kinds are its sources", others)
		}
		// endregion: overlap
	})

	// The operator's clients come from observe's TrackWrites config: a
	// Tenant whose handling applied its children and wrote its status is
	// not handled again before the caches have seen those writes. Its
	// children's events queue it while the handling runs; taken from the
	// queue as soon as the handling ends, it waits for the event of its
	// status, which its Tenant watch hands on 100ms late. (On a quick
	// watch that event comes in a millisecond or two, and whether the key
	// beats it is timing: 0 to 7 waits over these 51 Tenants.)
	t.Run("keys wait for the caches to see their handlings' own writes", func(t *testing.T) {
		e2etest.CheckCacheWaits(t, "http://"+httpAddr+"/metrics", operator.DefaultName, 60*time.Second)
	})

	// region: spans
	t.Run("each handling is traced, with its API calls as children", func(t *testing.T) {
		all := spans.GetSpans()
		handlings := map[trace.SpanID]string{}
		for _, s := range all {
			if strings.HasPrefix(s.Name, "handle multi-resource") {
				handlings[s.SpanContext.SpanID()] = s.Name
			}
		}
		calls := map[string]int{}
		for _, s := range all {
			if name, ok := handlings[s.Parent.SpanID()]; ok {
				calls[name+" > "+s.Name]++
			}
		}
		// The Tenant controller's handlings apply children (PATCH); it is
		// the only controller.
		if calls["handle multi-resource > HTTP PATCH"] == 0 {
			t.Errorf("got span tree %v, want the Tenant controller's PATCHes", calls)
		}
		for call := range calls {
			if !strings.HasPrefix(call, "handle multi-resource > ") {
				t.Errorf("got span tree %v, want API calls under the Tenant controller's handlings only", calls)
			}
		}
		t.Logf("%d spans, %d handlings", len(all), len(handlings))
	})
	// endregion: spans

	t.Run("the metrics pass promtool check metrics", func(t *testing.T) {
		e2etest.CheckMetrics(t, "http://"+httpAddr+"/metrics")
	})

	// region: gc
	t.Run("deleting the Tenant deletes everything through garbage collection", func(t *testing.T) {
		if err := tenants.Delete(ctx, "acme", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		e2etest.Eventually(t, 90*time.Second, "namespace tenant-acme is gone", func() bool {
			_, err := kube.CoreV1().Namespaces().Get(ctx, "tenant-acme", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		t.Logf("namespace and children deleted by the garbage collector and the namespace controller in %s", time.Since(began).Round(time.Millisecond))
	})
	// endregion: gc
}

// maxCallsPerTenant bounds the Tenant handler calls that one new Tenant
// causes until it is quiet.
const maxCallsPerTenant = 12

func e2eManifests(t *testing.T) {
	t.Helper()
	for _, dir := range []string{"../../../manifests/crds", "../../../manifests/rbac/multi-resource"} {
		rbacKubectl(t, "apply", "-k", dir)
	}
	client := versioned.NewForConfigOrDie(cluster.Config())
	e2etest.Eventually(t, 30*time.Second, "the Tenant CRD is served", func() bool {
		_, err := client.TenancyV1alpha1().Tenants().List(context.Background(), metav1.ListOptions{})
		return err == nil
	})
}

func ready(t *testing.T, tenants interface {
	Get(context.Context, string, metav1.GetOptions) (*tenancyv1alpha1.Tenant, error)
}, name string, children int) bool {
	t.Helper()
	tn, err := tenants.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return isReady(tn, children)
}

// isReady reports whether tn's status is Ready for its generation with
// children ready children.
func isReady(tn *tenancyv1alpha1.Tenant, children int) bool {
	if tn.Status.ObservedGeneration != tn.Generation || len(tn.Status.Children) != children {
		return false
	}
	for _, c := range tn.Status.Children {
		if !c.Ready {
			return false
		}
	}
	for _, c := range tn.Status.Conditions {
		if c.Type == tenancyv1alpha1.ConditionReady {
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == tn.Generation
		}
	}
	return false
}
