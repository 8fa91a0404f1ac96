package operator

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
)

func tenantWithReady(status metav1.ConditionStatus) *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{}
	if status != "" {
		t.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ConditionReady, Status: status}}
	}
	return t
}

func TestTheTenantsGaugeCountsTheCacheByReadiness(t *testing.T) {
	tests := []struct {
		name   string
		cache  []runtime.Object
		synced bool
		want   string // exposition of kooper_tenants, without HELP and TYPE
	}{
		{name: "not synced or not leading: no series", synced: false, want: ""},
		{name: "synced and empty: both at zero", synced: true, want: `
kooper_tenants{ready="false"} 0
kooper_tenants{ready="true"} 0
`},
		{name: "True is ready; False, Unknown and no condition are not", synced: true, cache: []runtime.Object{
			tenantWithReady(metav1.ConditionTrue), tenantWithReady(metav1.ConditionTrue),
			tenantWithReady(metav1.ConditionFalse), tenantWithReady(metav1.ConditionUnknown), tenantWithReady(""),
		}, want: `
kooper_tenants{ready="false"} 3
kooper_tenants{ready="true"} 2
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tenantsCollector{list: func() ([]runtime.Object, bool) { return tt.cache, tt.synced }}
			want := ""
			if tt.want != "" {
				want = "# HELP kooper_tenants " + tenantsHelp + "\n# TYPE kooper_tenants gauge" + tt.want
			}
			if err := testutil.CollectAndCompare(c, strings.NewReader(want), "kooper_tenants"); err != nil {
				t.Error(err)
			}
		})
	}
}
