package owner_test

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/owner"
)

var deploymentGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}

// getter is a map-based owner.Getter keyed by "namespace/name"; err, when
// set, is returned instead.
type getter struct {
	objs  map[string]runtime.Object
	err   error
	calls []string
}

func (g *getter) get(_ context.Context, namespace, name string) (runtime.Object, error) {
	g.calls = append(g.calls, namespace+"/"+name)
	if g.err != nil {
		return nil, g.err
	}
	o, ok := g.objs[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, name)
	}
	return o, nil
}

func TestHandler(t *testing.T) {
	errBoom := errors.New("apiserver unavailable")
	errNext := errors.New("handler failed")
	web := &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")}
	child := func(refs ...metav1.OwnerReference) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "rs-uid", refs...)}
	}
	tests := []struct {
		name      string
		obj       runtime.Object
		getErr    error
		nextErr   error
		wantErr   error
		wantOwner string // the name next is called with; "" for not called
		wantGets  []string
	}{
		{
			name: "an object without owner references is ignored",
			obj:  child(),
		},
		{
			name: "an object controlled by another kind is ignored",
			obj:  child(controllerRef("StatefulSet", "web", "web-uid")),
		},
		{
			name: "an object controlled by the same kind of another group is ignored",
			obj: child(metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Deployment", Name: "web", UID: "web-uid",
				Controller: ptr.To(true)}),
		},
		{
			name: "an object with a plain owner reference to the kind is ignored",
			obj:  child(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "web-uid"}),
		},
		{
			name:      "an owned object calls next with its owner",
			obj:       child(controllerRef("Deployment", "web", "web-uid")),
			wantOwner: "web",
			wantGets:  []string{"ns/web"},
		},
		{
			name:      "a deleted owned object calls next with its live owner",
			obj:       &controller.Deleted{Object: child(controllerRef("Deployment", "web", "web-uid"))},
			wantOwner: "web",
			wantGets:  []string{"ns/web"},
		},
		{
			name: "an owner referenced with another version is still found",
			obj: child(metav1.OwnerReference{APIVersion: "apps/v1beta2", Kind: "Deployment", Name: "web", UID: "web-uid",
				Controller: ptr.To(true)}),
			wantOwner: "web",
			wantGets:  []string{"ns/web"},
		},
		{
			name:     "an owner re-created with the same name is not the owner",
			obj:      child(controllerRef("Deployment", "web", "old-uid")),
			wantGets: []string{"ns/web"},
		},
		{
			name:     "an owner that is gone is ignored",
			obj:      child(controllerRef("Deployment", "api", "api-uid")),
			wantGets: []string{"ns/api"},
		},
		{
			name:     "a getter error is returned",
			obj:      child(controllerRef("Deployment", "web", "web-uid")),
			getErr:   errBoom,
			wantErr:  errBoom,
			wantGets: []string{"ns/web"},
		},
		{
			name:      "the next handler's error is returned",
			obj:       child(controllerRef("Deployment", "web", "web-uid")),
			nextErr:   errNext,
			wantErr:   errNext,
			wantOwner: "web",
			wantGets:  []string{"ns/web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &getter{objs: map[string]runtime.Object{"ns/web": web.DeepCopy()}, err: tt.getErr}
			var got runtime.Object
			next := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
				got = obj
				return tt.nextErr
			})
			h := owner.NewHandler(deploymentGK, g.get, next)

			err := h.Handle(context.Background(), tt.obj)

			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if controller.IsTerminal(err) {
				t.Errorf("got terminal error %v, want a retried one", err)
			}
			if tt.wantOwner == "" {
				if got != nil {
					t.Errorf("got next called with %v, want not called", got)
				}
			} else {
				d, ok := got.(*appsv1.Deployment)
				if !ok {
					t.Fatalf("got next called with %T, want *appsv1.Deployment", got)
				}
				if d.Name != tt.wantOwner {
					t.Errorf("got owner %q, want %q", d.Name, tt.wantOwner)
				}
			}
			if len(g.calls) != len(tt.wantGets) || (len(g.calls) > 0 && g.calls[0] != tt.wantGets[0]) {
				t.Errorf("got gets %v, want %v", g.calls, tt.wantGets)
			}
		})
	}
}

func TestHandlerPassesACopy(t *testing.T) {
	stored := &appsv1.Deployment{ObjectMeta: meta("ns", "web", "web-uid")}
	g := &getter{objs: map[string]runtime.Object{"ns/web": stored}}
	next := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		obj.(*appsv1.Deployment).Labels = map[string]string{"changed": "yes"}
		return nil
	})
	child := &appsv1.ReplicaSet{ObjectMeta: meta("ns", "web-1", "", controllerRef("Deployment", "web", "web-uid"))}

	if err := controller.Chain(next, owner.Middleware(deploymentGK, g.get)).Handle(context.Background(), child); err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if stored.Labels != nil {
		t.Errorf("got getter's object labels %v, want nil", stored.Labels)
	}
}

func TestHandlerMisconfigured(t *testing.T) {
	next := controller.HandlerFunc(func(context.Context, runtime.Object) error { return nil })
	tests := []struct {
		name string
		h    controller.Handler
	}{
		{name: "a handler without a getter fails terminally", h: owner.NewHandler(deploymentGK, nil, next)},
		{name: "a handler without a next handler fails terminally", h: owner.NewHandler(deploymentGK, (&getter{}).get, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.h.Handle(context.Background(), &appsv1.ReplicaSet{})
			if !controller.IsTerminal(err) {
				t.Errorf("got error %v, want a terminal error", err)
			}
		})
	}
}
