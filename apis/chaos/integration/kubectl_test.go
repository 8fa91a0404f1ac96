package integration_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/devcluster"
)

// What a user sees with kubectl: the field docs (kubectl explain, from the
// CRD schema's descriptions) and the printer columns (kubectl get).
func TestKubectlShowsTheFieldDocsAndPrinterColumns(t *testing.T) {
	client := chaosClient(t)
	pt, err := client.ChaosV1alpha1().PodTerminators().Create(context.Background(), &chaosv1alpha1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "columns-"},
		Spec:       validSpec(),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.ChaosV1alpha1().PodTerminators().Delete(context.Background(), pt.Name, metav1.DeleteOptions{})
	})
	// A Ready condition, as the operator would write it (none runs here).
	pt.Status.Conditions = []metav1.Condition{{Type: chaosv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: chaosv1alpha1.ReasonReconciled, Message: "2 of 8 live pods terminated", LastTransitionTime: metav1.Now()}}
	if _, err := client.ChaosV1alpha1().PodTerminators().UpdateStatus(context.Background(), pt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tn, err := client.TenancyV1alpha1().Tenants().Create(context.Background(), &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "columns-"},
		Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.TenancyV1alpha1().Tenants().Delete(context.Background(), tn.Name, metav1.DeleteOptions{})
	})
	tn.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: "ChildFailed", Message: "LimitRange: forbidden", LastTransitionTime: metav1.Now()}}
	if _, err := client.TenancyV1alpha1().Tenants().UpdateStatus(context.Background(), tn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(cluster.BinDir(), devcluster.BinKubectl),
			append([]string{"--kubeconfig", cluster.KubeconfigPath()}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"explain", "podterminators.spec.terminationPercent"}, []string{"floor(terminationPercent", "minimumInstances"}},
		{[]string{"explain", "pt.spec.selector"}, []string{"an empty selector would match"}},
		{[]string{"explain", "tenants.spec.networkIsolation"}, []string{"denies all", "ingress"}},
		{[]string{"get", "pt", pt.Name}, []string{"READY", "PERCENT", "MINIMUM", "DRY-RUN", "LAST TERMINATION", "AGE", pt.Name + "   True   25"}},
		{[]string{"get", "pt", pt.Name, "-o", "wide"}, []string{"READY REASON PERCENT", pt.Name + " True Reconciled 25"}},
		{[]string{"get", "tn", tn.Name}, []string{"READY", tn.Name + "   False"}},
		{[]string{"get", "tn", tn.Name, "-o", "wide"}, []string{"READY REASON ISOLATED", "False ChildFailed"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := kubectl(tt.args...)
			for _, want := range tt.want {
				if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
					t.Errorf("got:\n%s\nwant it to contain %q", out, want)
				}
			}
		})
	}
}
