// Package rbactest holds what the sample operators' RBAC tests do the same
// way: read the rules of a ClusterRole or Role manifest, and ask the API
// server (SubjectAccessReview) whether a user, typically an operator's
// ServiceAccount, may do something.
//
// A test writes the rules its operator needs by hand, compares them exactly
// with ReadRules of the manifest (so a new verb is a reviewed change), applies
// the manifests to a local control plane (hack/envtest) and calls
// CheckAllowed with those rules, then Can for a sample of what must be
// denied. A SubjectAccessReview asks the authorizer only: nothing is read or
// written, so the checks need no objects and no running operator.
//
// What RBAC cannot say (a name prefix, which fields change) the manifests
// say with ValidatingAdmissionPolicies; CheckPolicyTypes tells whether the
// API server type-checked one without a warning.
package rbactest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// ReadRules returns the rules of the ClusterRole or Role manifest file (a
// Role's fields are a subset of a ClusterRole's). It fails the test if the
// file cannot be read or holds an unknown field.
func ReadRules(t testing.TB, file string) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("could not read the role: %v", err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &role); err != nil {
		t.Fatalf("could not parse %s: %v", file, err)
	}
	return role.Rules
}

// ServiceAccountGroups returns the groups the API server puts a ServiceAccount
// of namespace in: a SubjectAccessReview names them, since it does not derive
// them from the user name.
func ServiceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

// Can reports whether user, in groups, may do attrs, by a SubjectAccessReview
// through client (which must be allowed to create them, e.g. an admin). It
// fails the test if the review cannot be created.
func Can(t testing.TB, client kubernetes.Interface, user string, groups []string, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("could not review whether %s may %s %s: %v", user, attrs.Verb, attrs.Resource, err)
	}
	return sar.Status.Allowed
}

// CanNonResource reports whether user, in groups, may do attrs on a URL
// that is no resource (/metrics, /healthz), as Can does for resources.
func CanNonResource(t testing.TB, client kubernetes.Interface, user string, groups []string, attrs authorizationv1.NonResourceAttributes) bool {
	t.Helper()
	sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, NonResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("could not review whether %s may %s %s: %v", user, attrs.Verb, attrs.Path, err)
	}
	return sar.Status.Allowed
}

// CheckAllowed asserts that user, in groups, may do everything rules grant,
// in namespace: each API group, resource ("tenants/status" is resource
// tenants, subresource status), verb and resource name (or none) is one
// review, and so is each non-resource URL (such as /metrics) and verb. For
// cluster-scoped resources and URLs the namespace is ignored by the
// authorizer. It reports each refusal with t.Errorf.
func CheckAllowed(t testing.TB, client kubernetes.Interface, user string, groups []string, namespace string, rules []rbacv1.PolicyRule) {
	t.Helper()
	for _, r := range rules {
		for _, url := range r.NonResourceURLs {
			for _, verb := range r.Verbs {
				if !CanNonResource(t, client, user, groups, authorizationv1.NonResourceAttributes{Path: url, Verb: verb}) {
					t.Errorf("%s may not %s %s, want allowed", user, verb, url)
				}
			}
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range r.Verbs {
					for _, name := range names {
						attrs := authorizationv1.ResourceAttributes{
							Namespace: namespace, Group: group, Resource: resource, Subresource: sub, Verb: verb, Name: name,
						}
						if !Can(t, client, user, groups, attrs) {
							t.Errorf("%s may not %s %s (group %q, name %q) in %q, want allowed", user, verb, res, group, name, namespace)
						}
					}
				}
			}
		}
	}
}

// CheckPolicyTypes waits, at most timeout, until the API server has
// type-checked the expressions of the ValidatingAdmissionPolicy name against
// the schemas of the kinds it matches (the controller manager does it and
// writes status.typeChecking), and reports each warning with t.Errorf. A
// warning is not an error to the API server, yet it matters: an expression
// naming a field the kind does not have fails at run time, or, behind ?.,
// compares two absent values and lets any change through. It fails the test
// if the policy cannot be read or is not type-checked in time.
func CheckPolicyTypes(t testing.TB, client kubernetes.Interface, name string, timeout time.Duration) {
	t.Helper()
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		var err error
		policy, err = client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("could not get the policy %s: %v", name, err)
		}
		if policy.Status.TypeChecking != nil && policy.Status.ObservedGeneration == policy.Generation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy %s was not type-checked after %s (is the controller manager running?)", name, timeout)
		}
	}
	for _, w := range policy.Status.TypeChecking.ExpressionWarnings {
		t.Errorf("policy %s, %s: %s", name, w.FieldRef, w.Warning)
	}
}
