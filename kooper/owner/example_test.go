package owner_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/owner"
)

// A handler creating a child sets itself as the child's controller before
// creating it; the garbage collector then deletes the child with its owner.
func ExampleSetController() {
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "6c1f"}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}}

	// region: set-controller
	if err := owner.SetController(web, rs, appsv1.SchemeGroupVersion.WithKind("Deployment")); err != nil {
		fmt.Println(err)
		return
	}
	// endregion: set-controller
	ref := owner.ControllerOf(rs)
	fmt.Println(ref.APIVersion, ref.Kind, ref.Name, ref.UID, *ref.BlockOwnerDeletion)

	// Another Deployment cannot take the ReplicaSet over.
	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "9a0e"}}
	fmt.Println(owner.SetController(api, rs, appsv1.SchemeGroupVersion.WithKind("Deployment")))
	// Output:
	// apps/v1 Deployment web 6c1f true
	// could not set Deployment shop/api as controller of shop/web-1: object already has another controller: Deployment web
}

// A second controller watching ReplicaSets shares the Deployment handler:
// the middleware turns each ReplicaSet into its controlling Deployment.
func ExampleMiddleware() {
	deployments := map[string]*appsv1.Deployment{
		"shop/web": {ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "6c1f"}},
	}
	// region: middleware
	// In an operator: return lister.Deployments(namespace).Get(name); the
	// lister's NotFound error is what the middleware expects.
	get := func(_ context.Context, namespace, name string) (runtime.Object, error) {
		d, ok := deployments[namespace+"/"+name]
		if !ok {
			return nil, apierrors.NewNotFound(appsv1.Resource("deployments"), name)
		}
		return d, nil
	}
	handleDeployment := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		d := obj.(*appsv1.Deployment)
		fmt.Println("handle deployment", d.Namespace+"/"+d.Name)
		return nil
	})
	h := controller.Chain(handleDeployment, owner.Middleware(schema.GroupKind{Group: "apps", Kind: "Deployment"}, get))
	// endregion: middleware

	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}}
	_ = owner.SetController(deployments["shop/web"], rs, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	orphan := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "manual"}}

	fmt.Println(h.Handle(context.Background(), rs))
	fmt.Println(h.Handle(context.Background(), orphan)) // no controller: ignored
	// Output:
	// handle deployment shop/web
	// <nil>
	// <nil>
}
