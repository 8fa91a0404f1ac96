package operator

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

// The child retrievers list and watch what the operator makes, and not
// what anyone can label as its own: on the API server, by the label and,
// for the namespaced kinds, by the child's fixed name. What they list
// reaches the cache slimmed, and recorded.
func TestTheChildRetrieversSelectTheOperatorsObjectsOnTheAPIServer(t *testing.T) {
	const label = tenant.ManagedByLabel + "=" + tenant.ManagedBy
	tests := []struct {
		kind         string
		label, field string
	}{
		{tenant.KindNamespace, label, ""},
		{tenant.KindResourceQuota, label, "metadata.name=" + tenant.QuotaName},
		{tenant.KindLimitRange, label, "metadata.name=" + tenant.LimitRangeName},
		{tenant.KindRoleBinding, label, "metadata.name=" + tenant.RoleBindingName},
		{tenant.KindNetworkPolicy, label, "metadata.name=" + tenant.NetworkPolicyName},
	}
	if len(tests) != len(children) {
		t.Fatalf("got %d child kinds, want %d: add the new kind here", len(children), len(tests))
	}
	for i, tt := range tests {
		c := children[i]
		t.Run(tt.kind, func(t *testing.T) {
			if c.kind != tt.kind {
				t.Fatalf("got kind %s, want %s", c.kind, tt.kind)
			}
			md := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
			var got []k8stesting.ListRestrictions
			var namespaces []string
			md.PrependReactor("list", c.resource.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
				got = append(got, a.(k8stesting.ListAction).GetListRestrictions())
				namespaces = append(namespaces, a.GetNamespace())
				// The fake turns a List into metadata.
				return true, &metav1.List{Items: []runtime.RawExtension{{Object: &metav1.PartialObjectMetadata{
					TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Example"},
					ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{tenant.ManagedByLabel: tenant.ManagedBy}, Annotations: map[string]string{"ballast": "x"}},
				}}}}, nil
			})
			md.PrependWatchReactor(c.resource.Resource, func(a k8stesting.Action) (bool, watch.Interface, error) {
				w := a.(k8stesting.WatchAction).GetWatchRestrictions()
				got = append(got, k8stesting.ListRestrictions{Labels: w.Labels, Fields: w.Fields})
				namespaces = append(namespaces, a.GetNamespace())
				return true, watch.NewFake(), nil
			})
			var seen ChildObjects
			r := managed(md, c, &seen)
			ctx := context.Background()
			list, err := r.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				t.Fatal(err)
			}
			items := list.(*metav1.PartialObjectMetadataList).Items
			if len(items) != 1 || len(items[0].Annotations) != 0 {
				t.Errorf("got %+v listed, want x without annotations", items)
			}
			if objs, ok := seen.List(c.kind); !ok || len(objs) != 1 || objs[0].Name != "x" {
				t.Errorf("got %+v, %v recorded, want x", objs, ok)
			}
			w, err := r.Watch(ctx, metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
			if len(got) != 2 {
				t.Fatalf("got %d calls, want a list and a watch", len(got))
			}
			for i, call := range []string{"list", "watch"} {
				if s := got[i].Labels.String(); s != tt.label {
					t.Errorf("%s: got label selector %q, want %q", call, s, tt.label)
				}
				if s := got[i].Fields.String(); s != tt.field {
					t.Errorf("%s: got field selector %q, want %q", call, s, tt.field)
				}
				if namespaces[i] != "" {
					t.Errorf("%s: got namespace %q, want every namespace", call, namespaces[i])
				}
			}
		})
	}
}
