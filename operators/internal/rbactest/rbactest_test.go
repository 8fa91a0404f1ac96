package rbactest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/operators/internal/rbactest"
)

func TestReadRulesReadsARole(t *testing.T) {
	file := filepath.Join(t.TempDir(), "role.yaml")
	const role = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, namespace: ns}
rules:
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    resourceNames: ["me"]
    verbs: ["get", "update"]
`
	if err := os.WriteFile(file, []byte(role), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"me"}, Verbs: []string{"get", "update"}}}
	if got := rbactest.ReadRules(t, file); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestServiceAccountGroups(t *testing.T) {
	want := []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"}
	if got := rbactest.ServiceAccountGroups("ns"); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// errorRecorder is a testing.TB whose Errorf records instead of failing.
type errorRecorder struct {
	testing.TB
	errors []string
}

func (r *errorRecorder) Helper() {}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestCheckAllowed(t *testing.T) {
	rule := rbacv1.PolicyRule{APIGroups: []string{"g"}, Resources: []string{"things", "things/status"}, ResourceNames: []string{"a", "b"}, Verbs: []string{"get", "update"}}
	tests := []struct {
		name       string
		rules      []rbacv1.PolicyRule
		denied     string // "verb resource/subresource name", refused by the fake authorizer
		wantAsked  int
		wantErrors []string
	}{
		{name: "no rules ask nothing", wantAsked: 0},
		{name: "every resource, verb and name is asked once", rules: []rbacv1.PolicyRule{rule}, wantAsked: 2 * 2 * 2},
		{name: "no resource names ask for none", rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}, wantAsked: 1},
		{
			name: "a refusal names the verb and the resource", rules: []rbacv1.PolicyRule{rule}, denied: "update things/status b", wantAsked: 8,
			wantErrors: []string{`sa may not update things/status (group "g", name "b") in "ns", want allowed`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// region: reactor
			client := fake.NewClientset()
			asked := 0
			client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
				sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
				asked++
				a := sar.Spec.ResourceAttributes
				if sar.Spec.User != "sa" || !reflect.DeepEqual(sar.Spec.Groups, []string{"grp"}) || a.Namespace != "ns" {
					t.Errorf("got review %+v, want user sa, groups [grp], namespace ns", sar.Spec)
				}
				res := a.Resource
				if a.Subresource != "" {
					res += "/" + a.Subresource
				}
				sar.Status.Allowed = strings.Join([]string{a.Verb, res, a.Name}, " ") != tt.denied
				return true, sar, nil
			})
			// endregion: reactor
			rec := &errorRecorder{TB: t}
			rbactest.CheckAllowed(rec, client, "sa", []string{"grp"}, "ns", tt.rules)
			if asked != tt.wantAsked {
				t.Errorf("got %d reviews, want %d", asked, tt.wantAsked)
			}
			if !reflect.DeepEqual(rec.errors, tt.wantErrors) {
				t.Errorf("got errors %q, want %q", rec.errors, tt.wantErrors)
			}
		})
	}
}
