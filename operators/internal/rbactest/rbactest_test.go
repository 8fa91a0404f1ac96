package rbactest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// A rule of non-resource URLs is one review per URL and verb, of the URL.
func TestCheckAllowedNonResourceURLs(t *testing.T) {
	client := fake.NewClientset()
	var asked []string
	client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		a := sar.Spec.NonResourceAttributes
		if a == nil || sar.Spec.ResourceAttributes != nil {
			t.Fatalf("got review %+v, want one of a non-resource URL", sar.Spec)
		}
		asked = append(asked, a.Verb+" "+a.Path)
		sar.Status.Allowed = a.Path == "/metrics"
		return true, sar, nil
	})
	rec := &errorRecorder{TB: t}
	rules := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/healthz"}, Verbs: []string{"get"}}}
	rbactest.CheckAllowed(rec, client, "sa", []string{"grp"}, "", rules)
	if want := []string{"get /metrics", "get /healthz"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("got reviews %q, want %q", asked, want)
	}
	if want := []string{"sa may not get /healthz, want allowed"}; !reflect.DeepEqual(rec.errors, want) {
		t.Errorf("got errors %q, want %q", rec.errors, want)
	}
}

func TestCheckPolicyTypes(t *testing.T) {
	warning := admissionregistrationv1.ExpressionWarning{FieldRef: "spec.validations[0].expression", Warning: "undefined field 'nope'"}
	tests := []struct {
		name       string
		status     admissionregistrationv1.ValidatingAdmissionPolicyStatus
		wantErrors []string
	}{
		{name: "no warning, no error", status: admissionregistrationv1.ValidatingAdmissionPolicyStatus{
			ObservedGeneration: 2, TypeChecking: &admissionregistrationv1.TypeChecking{},
		}},
		{
			name: "each warning is an error",
			status: admissionregistrationv1.ValidatingAdmissionPolicyStatus{
				ObservedGeneration: 2, TypeChecking: &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{warning}},
			},
			wantErrors: []string{"policy p, spec.validations[0].expression: undefined field 'nope'"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(&admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2}, Status: tt.status,
			})
			rec := &errorRecorder{TB: t}
			rbactest.CheckPolicyTypes(rec, client, "p", time.Second)
			if !reflect.DeepEqual(rec.errors, tt.wantErrors) {
				t.Errorf("got errors %q, want %q", rec.errors, tt.wantErrors)
			}
		})
	}
}

// fatalRecorder is a testing.TB whose Fatalf records and ends the goroutine,
// as testing.T's does.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	goruntime.Goexit()
}

func TestCheckPolicyTypesFailsWhenNotTypeCheckedInTime(t *testing.T) {
	// Type checking of generation 1 only: generation 2 is not checked yet.
	client := fake.NewClientset(&admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2},
		Status:     admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 1, TypeChecking: &admissionregistrationv1.TypeChecking{}},
	})
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rbactest.CheckPolicyTypes(rec, client, "p", 300*time.Millisecond)
	}()
	<-done
	if want := "the policy p was not type-checked after 300ms"; !strings.Contains(rec.fatal, want) {
		t.Errorf("got fatal %q, want it to say %q", rec.fatal, want)
	}
}
