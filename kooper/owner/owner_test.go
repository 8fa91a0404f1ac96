package owner_test

import (
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/owner"
)

var deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")

func meta(namespace, name string, uid types.UID, refs ...metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid, OwnerReferences: refs}
}

func controllerRef(kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func TestSetController(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "cfg-uid"}
	tests := []struct {
		name      string
		owner     metav1.Object
		obj       metav1.Object
		gvk       schema.GroupVersionKind // the zero value means apps/v1 Deployment
		wantRefs  []metav1.OwnerReference
		wantErr   bool
		wantOwned bool // the error wraps ErrAlreadyOwned
	}{
		{
			name:     "an object without owners gets a controller reference",
			owner:    &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")},
			obj:      &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "")},
			wantRefs: []metav1.OwnerReference{controllerRef("Deployment", "web", "web-uid")},
		},
		{
			name:     "other owner references are kept",
			owner:    &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")},
			obj:      &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "", other)},
			wantRefs: []metav1.OwnerReference{other, controllerRef("Deployment", "web", "web-uid")},
		},
		{
			name:  "a plain reference to the same owner becomes the controller reference",
			owner: &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")},
			obj: &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "",
				metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid"})},
			wantRefs: []metav1.OwnerReference{controllerRef("Deployment", "web", "web-uid")},
		},
		{
			name:  "an object already controlled by the owner is left as it is",
			owner: &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")},
			obj: &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "",
				metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid", Controller: ptr.To(true)})},
			wantRefs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid", Controller: ptr.To(true)}},
		},
		{
			name:      "an object controlled by another owner is refused",
			owner:     &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")},
			obj:       &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "", controllerRef("Deployment", "web", "old-uid"))},
			wantRefs:  []metav1.OwnerReference{controllerRef("Deployment", "web", "old-uid")},
			wantErr:   true,
			wantOwned: true,
		},
		{
			name:    "an owner in another namespace is refused",
			owner:   &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")},
			obj:     &appsv1.ReplicaSet{ObjectMeta: meta("other", "web-1", "")},
			wantErr: true,
		},
		{
			name:    "a cluster-scoped object with a namespaced owner is refused",
			owner:   &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")},
			obj:     &corev1.Namespace{ObjectMeta: meta("", "web-ns", "")},
			wantErr: true,
		},
		{
			name:     "a cluster-scoped owner can own a namespaced object",
			owner:    &corev1.Namespace{ObjectMeta: meta("", "team", "team-uid")},
			obj:      &corev1.ConfigMap{ObjectMeta: meta("team", "quota", "")},
			gvk:      schema.GroupVersionKind{Version: "v1", Kind: "Namespace"},
			wantRefs: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "team", UID: "team-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		{
			name:     "a cluster-scoped owner can own a cluster-scoped object",
			owner:    &corev1.Namespace{ObjectMeta: meta("", "team", "team-uid")},
			obj:      &corev1.PersistentVolume{ObjectMeta: meta("", "disk", "")},
			gvk:      schema.GroupVersionKind{Version: "v1", Kind: "Namespace"},
			wantRefs: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "team", UID: "team-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		{
			name:    "an owner without a uid is refused",
			owner:   &appsv1.Deployment{ObjectMeta: meta("ns", "web", "")},
			obj:     &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "")},
			wantErr: true,
		},
		{
			name:    "an incomplete owner kind is refused",
			owner:   &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")},
			obj:     &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "")},
			gvk:     schema.GroupVersionKind{Group: "apps", Version: "v1"},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvk := tt.gvk
			if gvk.Empty() {
				gvk = deploymentGVK
			}

			err := owner.SetController(tt.owner, tt.obj, gvk)

			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if got := errors.Is(err, owner.ErrAlreadyOwned); got != tt.wantOwned {
				t.Errorf("got errors.Is(err, ErrAlreadyOwned) %v, want %v (err: %v)", got, tt.wantOwned, err)
			}
			if got := tt.obj.GetOwnerReferences(); !reflect.DeepEqual(got, tt.wantRefs) {
				t.Errorf("got owner references %+v, want %+v", got, tt.wantRefs)
			}
		})
	}
}

func TestSetControllerDoesNotChangeAnotherCopy(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "cfg-uid"}
	shared := make([]metav1.OwnerReference, 1, 4)
	shared[0] = other
	a := &appsv1.ReplicaSet{ObjectMeta: meta("ns", "a", "", shared...)}
	b := &appsv1.ReplicaSet{ObjectMeta: meta("ns", "b", "", shared...)}

	if err := owner.SetController(&appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")}, a, deploymentGVK); err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if got, want := b.OwnerReferences, []metav1.OwnerReference{other}; !reflect.DeepEqual(got, want) {
		t.Errorf("got owner references %+v, want %+v", got, want)
	}
}
