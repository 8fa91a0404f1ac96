package owner_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	ref := metav1.GetControllerOf(rs)
	fmt.Println(ref.APIVersion, ref.Kind, ref.Name, ref.UID, *ref.BlockOwnerDeletion)

	// Another Deployment cannot take the ReplicaSet over.
	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "9a0e"}}
	fmt.Println(owner.SetController(api, rs, appsv1.SchemeGroupVersion.WithKind("Deployment")))
	// Output:
	// apps/v1 Deployment web 6c1f true
	// could not set Deployment shop/api as controller of shop/web-1: object already has another controller: Deployment web
}
