package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
)

// The Tenant CRD's schema refuses a quantity the operator could never use
// (zero or negative: the ResourceQuota apply would fail on every retry) and
// one the Go client could not decode or would decode slowly (a fractional
// or long exponent), as JSON strings and as JSON numbers, with a message
// that names the field.
func TestTheTenantSchemaRefusesQuantitiesNoQuotaCanUse(t *testing.T) {
	client := clientset(t)
	tests := []struct {
		name    string
		cpu     string // JSON: a quoted string or a number
		wantErr string // in the API server's answer; empty: accepted
	}{
		{name: "a whole number", cpu: `"2"`},
		{name: "millicores", cpu: `"500m"`},
		{name: "a fraction", cpu: `"0.5"`},
		{name: "an exponent", cpu: `"1e3"`},
		{name: "a JSON number", cpu: `3`},
		{name: "a negative number", cpu: `"-3"`, wantErr: "must be a quantity greater than zero"},
		{name: "zero", cpu: `"0"`, wantErr: "must be a quantity greater than zero"},
		{name: "zero millicores", cpu: `"0.000m"`, wantErr: "must be a quantity greater than zero"},
		{name: "a negative JSON number", cpu: `-3`, wantErr: "must be a quantity greater than zero"},
		{name: "a zero JSON number", cpu: `0`, wantErr: "must be a quantity greater than zero"},
		{name: "a fractional exponent", cpu: `"1e1.5"`, wantErr: "an exponent of at most two digits"},
		{name: "a long exponent", cpu: `"1e-100000000"`, wantErr: "an exponent of at most two digits"},
		{name: "a long number", cpu: `"` + strings.Repeat("1", 40) + `"`, wantErr: "may not be more than 32 bytes"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("quantity-%d", i)
			body := fmt.Sprintf(`{"apiVersion":"tenancy.kooperkit.io/v1alpha1","kind":"Tenant","metadata":{"name":%q},
				"spec":{"admins":[{"kind":"User","name":"alice"}],"quota":{"cpu":%s,"memory":"1Gi","pods":5}}}`, name, tt.cpu)
			ctx := context.Background()
			err := client.TenancyV1alpha1().RESTClient().Post().Resource("tenants").Body([]byte(body)).Do(ctx).Error()
			if err == nil {
				t.Cleanup(func() {
					_ = client.TenancyV1alpha1().Tenants().Delete(context.Background(), name, metav1.DeleteOptions{})
				})
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want the Tenant accepted", err)
			case tt.wantErr != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want it refused as invalid, naming %q", err, tt.wantErr)
			case err != nil:
				t.Logf("refused: %v", err)
			}
		})
	}
}

// What a user sees of a Tenant with kubectl: the field docs (kubectl
// explain, from the CRD schema's descriptions) and the printer columns.
func TestKubectlShowsTheTenantsFieldDocsAndColumns(t *testing.T) {
	client := clientset(t)
	tenants := client.TenancyV1alpha1().Tenants()
	tn, err := tenants.Create(context.Background(), &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "columns-"},
		Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tenants.Delete(context.Background(), tn.Name, metav1.DeleteOptions{}) })
	// A Ready condition, as the operator would write it (none runs here).
	tn.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: "ChildFailed", Message: "LimitRange: forbidden", LastTransitionTime: metav1.Now()}}
	if _, err := tenants.UpdateStatus(context.Background(), tn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectlShows(t, []kubectlCase{
		{[]string{"explain", "tenants.spec.networkIsolation"}, []string{"denies all", "ingress"}},
		{[]string{"get", "tn", tn.Name}, []string{"READY", tn.Name + "   False"}},
		{[]string{"get", "tn", tn.Name, "-o", "wide"}, []string{"READY REASON ISOLATED", "False ChildFailed"}},
	})
}
