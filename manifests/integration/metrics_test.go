package integration_test

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The ServiceAccount the metrics-reader bindings name: Prometheus's, in the
// namespace the NetworkPolicies admit it from (prometheus, in
// network_policy_test.go). Users adjust both to their Prometheus.
var prometheusAccount = rbacv1.Subject{Kind: "ServiceAccount", Name: "prometheus", Namespace: "monitoring"}

// With /metrics over HTTPS, the operator's ServiceAccount asks the API
// server about each scraper's token (system:auth-delegator, bound by
// kooper-<operator>-auth-delegator), and Prometheus's ServiceAccount may
// get /metrics (the ClusterRole kooper-<operator>-metrics-reader, which
// grants that and nothing else).
func TestTheMetricsAreServedToPrometheusOnly(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			objs := objects(t, kustomize(t, filepath.Join(manifests, op.name)))
			var d appsv1.Deployment
			only(t, objs, "Deployment", &d)
			account := rbacv1.Subject{Kind: "ServiceAccount", Name: d.Spec.Template.Spec.ServiceAccountName, Namespace: d.Namespace}
			prefix := "kooper-" + op.name

			var delegator rbacv1.ClusterRoleBinding
			named(t, objs, "ClusterRoleBinding", prefix+"-auth-delegator", &delegator)
			if delegator.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"}) ||
				!reflect.DeepEqual(delegator.Subjects, []rbacv1.Subject{account}) {
				t.Errorf("got %s binding %+v to %+v, want system:auth-delegator to %+v only", delegator.Name, delegator.RoleRef, delegator.Subjects, account)
			}

			var reader rbacv1.ClusterRole
			named(t, objs, "ClusterRole", prefix+"-metrics-reader", &reader)
			if want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}; !reflect.DeepEqual(reader.Rules, want) {
				t.Errorf("got %s rules %+v, want exactly %+v", reader.Name, reader.Rules, want)
			}
			var readers rbacv1.ClusterRoleBinding
			named(t, objs, "ClusterRoleBinding", prefix+"-metrics-reader", &readers)
			if readers.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name}) ||
				!reflect.DeepEqual(readers.Subjects, []rbacv1.Subject{prometheusAccount}) {
				t.Errorf("got %s binding %+v to %+v, want %s to %+v", readers.Name, readers.RoleRef, readers.Subjects, reader.Name, prometheusAccount)
			}
			if prometheus[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != prometheusAccount.Namespace {
				t.Errorf("the NetworkPolicy admits Prometheus from %v, want the namespace of the bound account %s", prometheus[0].NamespaceSelector, prometheusAccount.Namespace)
			}
		})
	}
}

// A drain or an upgrade takes at most one replica at a time: the other
// keeps the Lease, or takes it over.
func TestTheDisruptionBudgetsKeepAReplica(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			objs := objects(t, kustomize(t, filepath.Join(manifests, op.name)))
			var d appsv1.Deployment
			only(t, objs, "Deployment", &d)
			var pdb policyv1.PodDisruptionBudget
			only(t, objs, "PodDisruptionBudget", &pdb)
			if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "1" || pdb.Spec.MinAvailable != nil {
				t.Errorf("got maxUnavailable %v and minAvailable %v, want maxUnavailable 1 only (a Deployment scaled to 1 can still be drained)",
					pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
			}
			if pdb.Spec.Selector == nil || !reflect.DeepEqual(*pdb.Spec.Selector, *d.Spec.Selector) {
				t.Errorf("got selector %v, want the Deployment's %v", pdb.Spec.Selector, d.Spec.Selector)
			}
			if pdb.Namespace != d.Namespace {
				t.Errorf("got namespace %s, want the Deployment's %s", pdb.Namespace, d.Namespace)
			}
		})
	}
}

// named decodes the object of kind and name in objs into into, or fails the
// test.
func named(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind && o.GetName() == name })
	if i < 0 {
		t.Fatalf("no %s %s", kind, name)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[i].Object, into); err != nil {
		t.Fatal(err)
	}
}
