package integration_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/internal/rbactest"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// Every name in this file starts with degradation (tests with
// TestDegradation): the package's other test files are written separately.
// Tenants get a random suffix, so that -count=3 against one control plane
// works, and are deleted when the test ends: the end-to-end test expects
// every Tenant it lists to be Ready.

const (
	// degradationClusterRole is the operator's ClusterRole, from
	// manifests/rbac/multi-resource/cluster_role.yaml.
	degradationClusterRole = "kooper-multi-resource"
	degradationUser        = "system:serviceaccount:" + operator.DefaultNamespace + ":" + operator.DefaultName
	// degradationOutage is how long the permission stays away: longer than
	// a controller's default five retries last (about 6 s; the Tenant
	// controller allows 40), and long enough for the failing Tenants'
	// retry delays to grow to over 10 s.
	degradationOutage = 20 * time.Second
)

// One child kind failing never stops the others: the operator, running and
// working, loses its permission on LimitRanges for 20 s. A new Tenant still
// gets every other child, each Tenant says which child failed and why, a
// child deleted by hand is still made again, no Tenant is given up on, and
// once the permission is back every Tenant heals on its own, through the
// Tenant controller's retries (capped at 15 s), with no restart. What fails
// is the writing: the API server authorizes a watch when it starts, so the
// LimitRange source's open watch goes on (its list or watch fails only
// when it restarts one, every 5 to 10 minutes).
func TestDegradationOneChildKindForbiddenLeavesTheRestWorking(t *testing.T) {
	ctx := context.Background()
	e2eManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	tenants := versioned.NewForConfigOrDie(cluster.Config()).TenancyV1alpha1().Tenants()

	// Without leader election, as the security tests: it runs alone, and
	// need not wait for the Lease of the operator of a previous test.
	registry := prom.NewRegistry()
	httpAddr := e2etest.FreeAddr(t)
	cfg := operator.Config{
		REST:                  e2etest.AsServiceAccount(cluster.Config(), operator.DefaultNamespace, operator.DefaultName, 100, 200),
		DisableLeaderElection: true,
		Registry:              registry,
		HTTPAddr:              httpAddr,
		Logger:                log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
	retrieveErrors := func() float64 {
		return e2etest.Metric(t, registry, "kooper_controller_retrieve_errors_total", map[string]string{"controller": operator.DefaultName})
	}

	first := degradationTenant(t, tenants, "degrade-first")
	firstNS := tenant.Namespace(first)
	e2etest.Eventually(t, 30*time.Second, first.Name+" is Ready with 4 children", func() bool { return ready(t, tenants, first.Name, 4) })
	var code int
	var body string
	e2etest.Eventually(t, 10*time.Second, "/readyz answers 200", func() bool {
		code, body = degradationReadyz(t, httpAddr)
		return code == http.StatusOK
	})
	t.Logf("working: %s Ready, /readyz %d %q", first.Name, code, body)

	restore := degradationForbid(t, admin, "limitranges")
	forbiddenAt := time.Now()

	t.Run("a new Tenant gets every child but its LimitRange, and says why", func(t *testing.T) {
		second := degradationTenant(t, tenants, "degrade-new")
		ns := tenant.Namespace(second)
		var got *tenancyv1alpha1.Tenant
		e2etest.Eventually(t, 30*time.Second, second.Name+" has a Ready condition", func() bool {
			var err error
			got, err = tenants.Get(ctx, second.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ConditionReady)
			return c != nil && c.ObservedGeneration == got.Generation
		})
		c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ConditionReady)
		if c.Status != metav1.ConditionFalse || c.Reason != tenancyv1alpha1.ReasonApplyFailed || !degradationForbidden(c.Message) {
			t.Errorf("got Ready %s %s %q, want False ApplyFailed saying limitranges are forbidden", c.Status, c.Reason, c.Message)
		}
		degradationChildren(t, got, tenant.KindLimitRange)

		if _, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
		if _, err := admin.CoreV1().ResourceQuotas(ns).Get(ctx, tenant.QuotaName, metav1.GetOptions{}); err != nil {
			t.Errorf("ResourceQuota: %v", err)
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Get(ctx, tenant.RoleBindingName, metav1.GetOptions{}); err != nil {
			t.Errorf("RoleBinding: %v", err)
		}
		if _, err := admin.CoreV1().LimitRanges(ns).Get(ctx, tenant.LimitRangeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("LimitRange: got %v, want NotFound", err)
		}
		if t.Failed() {
			t.FailNow()
		}

		// An outage, not a blip: while it lasts the failing Tenants are
		// retried with growing delays, and must not be given up on.
		time.Sleep(time.Until(forbiddenAt.Add(degradationOutage)))
		t.Logf("forbidden for %s: %v retries and %v drops of Tenants", time.Since(forbiddenAt).Round(time.Millisecond),
			e2etest.Metric(t, registry, "kooper_controller_retries_total", map[string]string{"controller": operator.DefaultName}),
			e2etest.Metric(t, registry, "kooper_controller_dropped_total", map[string]string{"controller": operator.DefaultName}))

		t.Run("the other sources still repair: a deleted ResourceQuota is made again", func(t *testing.T) {
			old, err := admin.CoreV1().ResourceQuotas(firstNS).Get(ctx, tenant.QuotaName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			queued := func(controller, source string) float64 {
				return e2etest.Metric(t, registry, "kooper_controller_queued_events_total", map[string]string{"controller": controller, "source": source})
			}
			routed := queued(operator.DefaultName, "enqueue")
			if err := admin.CoreV1().ResourceQuotas(firstNS).Delete(ctx, tenant.QuotaName, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			e2etest.Eventually(t, 10*time.Second, "the ResourceQuota of "+first.Name+" is back", func() bool {
				q, err := admin.CoreV1().ResourceQuotas(firstNS).Get(ctx, tenant.QuotaName, metav1.GetOptions{})
				return err == nil && q.UID != old.UID
			})
			t.Logf("ResourceQuota made again in %s", time.Since(began).Round(time.Millisecond))
			// Through the ResourceQuota source, which saw the deletion and
			// queued first: first may have been waiting for a retry too.
			if n := queued(operator.DefaultName, "enqueue"); n <= routed {
				t.Errorf("got %v Tenants routed to %s, want more than the %v before the deletion", n, operator.DefaultName, routed)
			}
			if _, err := admin.CoreV1().LimitRanges(firstNS).Get(ctx, tenant.LimitRangeName, metav1.GetOptions{}); err != nil {
				t.Errorf("the LimitRange made before the permission went: got %v, want it left in place", err)
			}
			// first's handlings cannot apply its LimitRange either (a
			// server-side apply is a patch): first says so.
			var got *tenancyv1alpha1.Tenant
			e2etest.Eventually(t, 10*time.Second, first.Name+" reports the failure", func() bool {
				got, err = tenants.Get(ctx, first.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ConditionReady)
				return c != nil && c.Status == metav1.ConditionFalse
			})
			c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ConditionReady)
			if c.Reason != tenancyv1alpha1.ReasonApplyFailed || !degradationForbidden(c.Message) {
				t.Errorf("got Ready %s %s %q, want False ApplyFailed saying limitranges are forbidden", c.Status, c.Reason, c.Message)
			}
			degradationChildren(t, got, tenant.KindLimitRange)
		})

		// Every cache synced before the permission went, and a controller
		// stays synced (controller.Controller.HasSynced): the open
		// LimitRange watch is not cut by an RBAC change, and a list or
		// watch failing later is logged and counted, not a reason to take
		// the replica out of service.
		t.Run("/readyz still answers ready and no Tenant was given up on", func(t *testing.T) {
			code, body := degradationReadyz(t, httpAddr)
			t.Logf("forbidden: /readyz %d %q; %v retrieve errors", code, body, retrieveErrors())
			if code != http.StatusOK || body != "synced" {
				t.Errorf("got /readyz %d %q, want 200 synced", code, body)
			}
			if n := e2etest.Metric(t, registry, "kooper_controller_dropped_total", map[string]string{"controller": operator.DefaultName}); n != 0 {
				t.Errorf("got %v Tenants dropped, want 0: they would heal only at the next resync", n)
			}
		})
		if t.Failed() {
			t.FailNow()
		}

		t.Run("once the permission is back, both Tenants heal within 45s", func(t *testing.T) {
			began := time.Now()
			restore(t)
			e2etest.Eventually(t, 45*time.Second, second.Name+" has its LimitRange and is Ready with 4 children", func() bool {
				_, err := admin.CoreV1().LimitRanges(ns).Get(ctx, tenant.LimitRangeName, metav1.GetOptions{})
				return err == nil && ready(t, tenants, second.Name, 4)
			})
			t.Logf("%s healed in %s after the rule was restored", second.Name, time.Since(began).Round(time.Millisecond))
			e2etest.Eventually(t, time.Until(began.Add(45*time.Second)), first.Name+" is Ready with 4 children", func() bool {
				return ready(t, tenants, first.Name, 4)
			})
			t.Logf("%s healed in %s after the rule was restored", first.Name, time.Since(began).Round(time.Millisecond))
			code, body := degradationReadyz(t, httpAddr)
			t.Logf("healed: /readyz %d %q; %v retrieve errors", code, body, retrieveErrors())
		})
	})
}

// degradationForbid removes resource (of the core group) from the rules of
// the operator's ClusterRole, keeping every other resource of the rule that
// granted it, and waits until the ServiceAccount may no longer patch it. It
// returns a function that restores the rules, once, and waits until the
// account may patch it again, failing the test it is given if not; it runs
// when the test ends too, however the test ends, so that later tests find
// the RBAC as the manifests have it.
func degradationForbid(t *testing.T, admin kubernetes.Interface, resource string) (restore func(testing.TB)) {
	t.Helper()
	ctx := context.Background()
	roles := admin.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, degradationClusterRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saved := role.DeepCopy().Rules
	var rules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, resource) {
			r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(res string) bool { return res == resource })
			if len(r.Resources) == 0 {
				continue
			}
		}
		rules = append(rules, r)
	}
	if len(rules) == len(saved) && slices.EqualFunc(rules, saved, func(a, b rbacv1.PolicyRule) bool { return slices.Equal(a.Resources, b.Resources) }) {
		t.Fatalf("ClusterRole %s grants no %s: %+v", degradationClusterRole, resource, saved)
	}

	var once sync.Once
	restore = func(t testing.TB) {
		t.Helper()
		once.Do(func() {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				role, err := roles.Get(ctx, degradationClusterRole, metav1.GetOptions{})
				if err != nil {
					return err
				}
				role.Rules = saved
				_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Errorf("could not restore the ClusterRole %s: %v", degradationClusterRole, err)
				return
			}
			e2etest.Eventually(t, 10*time.Second, degradationUser+" may patch "+resource+" again", func() bool {
				return degradationCan(t, admin, resource, "patch")
			})
		})
	}
	t.Cleanup(func() { restore(t) })

	role.Rules = rules
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e2etest.Eventually(t, 10*time.Second, degradationUser+" may no longer patch "+resource, func() bool {
		return !degradationCan(t, admin, resource, "patch")
	})
	for _, other := range []string{"resourcequotas", "namespaces"} {
		if !degradationCan(t, admin, other, "patch") {
			t.Fatalf("%s may no longer patch %s, want only %s removed: %+v", degradationUser, other, resource, rules)
		}
	}
	return restore
}

// degradationCan reports whether the operator's ServiceAccount may do verb
// on resource (of the core group) in a tenant namespace, on the object of
// that kind the operator writes there (its RBAC names them).
func degradationCan(t testing.TB, admin kubernetes.Interface, resource, verb string) bool {
	t.Helper()
	ns := tenancyv1alpha1.NamespacePrefix + "degradation"
	name := map[string]string{"resourcequotas": tenant.QuotaName, "limitranges": tenant.LimitRangeName, "namespaces": ns}[resource]
	return rbactest.Can(t, admin, degradationUser, rbactest.ServiceAccountGroups(operator.DefaultNamespace), authorizationv1.ResourceAttributes{
		Namespace: ns, Resource: resource, Verb: verb, Name: name,
	})
}

// degradationForbidden reports whether msg is the API server's refusal to
// let the operator write a LimitRange.
func degradationForbidden(msg string) bool {
	return strings.Contains(msg, "forbidden") && strings.Contains(msg, `"limitranges"`)
}

// degradationChildren checks that tn's status lists its namespace,
// ResourceQuota, LimitRange and RoleBinding, every one ready except
// failed, which is not, refused by RBAC.
func degradationChildren(t *testing.T, tn *tenancyv1alpha1.Tenant, failed string) {
	t.Helper()
	want := []string{tenant.KindNamespace, tenant.KindResourceQuota, tenant.KindLimitRange, tenant.KindRoleBinding}
	var kinds []string
	for _, c := range tn.Status.Children {
		kinds = append(kinds, c.Kind)
		switch {
		case c.Kind == failed && (c.Ready || !degradationForbidden(c.Message)):
			t.Errorf("%s: got child %+v, want not ready, saying limitranges are forbidden", tn.Name, c)
		case c.Kind != failed && !c.Ready:
			t.Errorf("%s: got child %+v, want ready", tn.Name, c)
		}
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("%s: got children %v, want %v", tn.Name, kinds, want)
	}
}

// degradationReadyz returns the status code and the trimmed body of the
// operator's /readyz at addr.
func degradationReadyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error() // not listening yet
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body))
}

type degradationTenants = interface {
	Create(context.Context, *tenancyv1alpha1.Tenant, metav1.CreateOptions) (*tenancyv1alpha1.Tenant, error)
	Get(context.Context, string, metav1.GetOptions) (*tenancyv1alpha1.Tenant, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// degradationTenant creates a Tenant named prefix with a random suffix,
// without network isolation (4 children), and deletes it when the test
// ends; the garbage collector deletes its namespace and children.
func degradationTenant(t *testing.T, tenants degradationTenants, prefix string) *tenancyv1alpha1.Tenant {
	t.Helper()
	name := fmt.Sprintf("%s-%08x", prefix, rand.Uint32())
	tn, err := tenants.Create(context.Background(), &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "owner-" + name}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tenants.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("could not delete Tenant %s: %v", name, err)
		}
	})
	return tn
}
