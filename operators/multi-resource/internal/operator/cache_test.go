package operator

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/operators/multi-resource/internal/tenant"
)

func TestSlimKeepsOnlyWhatTheOperatorReads(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tenantRef := metav1.OwnerReference{APIVersion: "tenancy.kooperkit.io/v1alpha1", Kind: "Tenant", Name: "acme", UID: "acme-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	typeMeta := metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}
	tests := []struct {
		name string
		in   *metav1.PartialObjectMetadata
		want *metav1.PartialObjectMetadata
	}{
		{
			name: "a child its tenant's admins annotated, labelled and gave finalizers and owners: only its identity, version, the operator's labels and its controller are kept",
			in: &metav1.PartialObjectMetadata{TypeMeta: typeMeta, ObjectMeta: metav1.ObjectMeta{
				Name: tenant.RoleBindingName, Namespace: "tenant-acme", UID: "rb-uid", ResourceVersion: "42", Generation: 3,
				CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), DeletionTimestamp: &deleted,
				Labels:      map[string]string{tenant.ManagedByLabel: tenant.ManagedBy, tenant.TenantLabel: "acme", "big": "yes"},
				Annotations: map[string]string{"ballast": string(make([]byte, 100<<10))},
				OwnerReferences: []metav1.OwnerReference{
					{APIVersion: "v1", Kind: "ConfigMap", Name: "extra", UID: "cm-uid"},
					tenantRef,
				},
				Finalizers:    []string{"example.com/hold"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}},
			}},
			want: &metav1.PartialObjectMetadata{TypeMeta: typeMeta, ObjectMeta: metav1.ObjectMeta{
				Name: tenant.RoleBindingName, Namespace: "tenant-acme", UID: "rb-uid", ResourceVersion: "42", Generation: 3,
				DeletionTimestamp: &deleted,
				Labels:            map[string]string{tenant.ManagedByLabel: tenant.ManagedBy, tenant.TenantLabel: "acme"},
				OwnerReferences:   []metav1.OwnerReference{tenantRef},
			}},
		},
		{
			name: "a namespace without labels or owners: nothing is added",
			in: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Name: "tenant-acme", UID: "ns-uid", ResourceVersion: "7", Annotations: map[string]string{"a": "b"},
			}},
			want: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "tenant-acme", UID: "ns-uid", ResourceVersion: "7"}},
		},
		{
			name: "owners but no controller: no owner is kept",
			in: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Name: tenant.QuotaName, Namespace: "tenant-acme",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "tenancy.kooperkit.io/v1alpha1", Kind: "Tenant", Name: "acme", UID: "acme-uid"}},
			}},
			want: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: tenant.QuotaName, Namespace: "tenant-acme"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.DeepCopy()
			got, err := slim(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if !equality.Semantic.DeepEqual(tt.in, before) {
				t.Errorf("got the input changed to %+v, want it as it was", tt.in)
			}
			// client-go may apply a transform twice to one object.
			again, err := slim(got)
			if err != nil || !equality.Semantic.DeepEqual(again, tt.want) {
				t.Errorf("applied twice: got %+v (%v), want %+v", again, err, tt.want)
			}
		})
	}
}

func TestSlimReturnsAnythingButMetadataAsItIs(t *testing.T) {
	for _, obj := range []any{
		cache.DeletedFinalStateUnknown{Key: "tenant-acme/tenant-admins"},
		&metav1.Status{Message: "not metadata"},
		nil,
	} {
		got, err := slim(obj)
		if err != nil || !equality.Semantic.DeepEqual(got, obj) {
			t.Errorf("got %#v (%v), want %#v unchanged", got, err, obj)
		}
	}
}

func TestChildCachesHoldNothingUntilRunMakesTheControllers(t *testing.T) {
	var c ChildCaches
	if objs, ok := c.List(tenant.KindRoleBinding); ok || objs != nil {
		t.Errorf("got %v, %v, want nil, false", objs, ok)
	}
	var none *ChildCaches
	none.set(tenant.KindRoleBinding, nil) // Config.ChildCaches unset: a no-op
}
