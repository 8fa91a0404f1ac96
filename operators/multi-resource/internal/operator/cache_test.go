package operator

import (
	"maps"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
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
			got := slim(tt.in)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if !equality.Semantic.DeepEqual(tt.in, before) {
				t.Errorf("got the input changed to %+v, want it as it was", tt.in)
			}
			if again := slim(got); !equality.Semantic.DeepEqual(again, tt.want) {
				t.Errorf("applied twice: got %+v, want %+v", again, tt.want)
			}
		})
	}
}

// The watch of a child retriever slims what it passes on and records it;
// a bookmark passes as it is. Stop ends its goroutine even while it holds
// an event nobody reads.
func TestSlimWatch(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := watch.NewFake()
	var seen ChildObjects
	w := newSlimWatch(in, func(ev watch.Event) { seen.watched(tenant.KindRoleBinding, ev) })
	big := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: tenant.RoleBindingName, Namespace: "tenant-acme",
		ResourceVersion: "2", Annotations: map[string]string{"ballast": "x"}}}
	bookmark := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "3",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	go func() {
		in.Add(big)
		in.Action(watch.Bookmark, bookmark)
	}()
	if ev := <-w.ResultChan(); ev.Type != watch.Added || len(ev.Object.(*metav1.PartialObjectMetadata).Annotations) != 0 {
		t.Errorf("got %s %+v, want it added without annotations", ev.Type, ev.Object)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Bookmark || !equality.Semantic.DeepEqual(ev.Object, bookmark) {
		t.Errorf("got %s %+v, want the bookmark as it was", ev.Type, ev.Object)
	}
	objs, ok := seen.List(tenant.KindRoleBinding)
	if !ok || len(objs) != 1 || objs[0].ResourceVersion != "2" || len(objs[0].Annotations) != 0 {
		t.Errorf("got %+v, %v recorded, want the slimmed RoleBinding", objs, ok)
	}
	go in.Delete(big)
	for objs, _ := seen.List(tenant.KindRoleBinding); len(objs) != 0; objs, _ = seen.List(tenant.KindRoleBinding) {
		time.Sleep(time.Millisecond) // the event is recorded, then held
	}
	w.Stop() // the event held is never read
}

func TestChildObjects(t *testing.T) {
	rb := func(ns, rv string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: tenant.RoleBindingName, Namespace: ns, ResourceVersion: rv}}
	}
	var c ChildObjects
	if objs, ok := c.List(tenant.KindRoleBinding); ok || objs != nil {
		t.Errorf("got %v, %v before anything, want nil, false", objs, ok)
	}
	c.listed(tenant.KindRoleBinding, []metav1.PartialObjectMetadata{rb("a", "1"), rb("b", "1")})
	a2, c1 := rb("a", "2"), rb("c", "1")
	c.watched(tenant.KindRoleBinding, watch.Event{Type: watch.Modified, Object: &a2})
	c.watched(tenant.KindRoleBinding, watch.Event{Type: watch.Added, Object: &c1})
	b := rb("b", "1")
	c.watched(tenant.KindRoleBinding, watch.Event{Type: watch.Deleted, Object: &b})
	objs, ok := c.List(tenant.KindRoleBinding)
	got := map[string]string{}
	for _, o := range objs {
		got[o.Namespace] = o.ResourceVersion
	}
	if !ok || !maps.Equal(got, map[string]string{"a": "2", "c": "1"}) {
		t.Errorf("got %v, %v, want a at 2 and c at 1", got, ok)
	}
	c.listed(tenant.KindRoleBinding, nil) // a relist replaces
	if objs, ok := c.List(tenant.KindRoleBinding); !ok || len(objs) != 0 {
		t.Errorf("got %v, %v after an empty list, want none, true", objs, ok)
	}
	var none *ChildObjects // Config.ChildObjects unset: no-ops
	none.listed(tenant.KindRoleBinding, []metav1.PartialObjectMetadata{rb("a", "1")})
	none.watched(tenant.KindRoleBinding, watch.Event{Type: watch.Added, Object: &c1})
}
