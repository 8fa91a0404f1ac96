package owner_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
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

// A second controller, watching ReplicaSets, routes each one to its
// Deployment: the Deployment handler runs only in the Deployment
// controller's workers, whichever kind changed.
func ExampleEnqueueOwner() {
	deploymentRetriever := controllertest.NewRetriever(&appsv1.Deployment{}, controllertest.Options{})
	replicaSetRetriever := controllertest.NewRetriever(&appsv1.ReplicaSet{}, controllertest.Options{})
	web, _ := deploymentRetriever.Add(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "6c1f"}})
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}}
	_ = owner.SetController(web.(*appsv1.Deployment), rs, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	_, _ = replicaSetRetriever.Add(rs)

	handled := make(chan string, 10)
	handleDeployment := controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		d := obj.(*appsv1.Deployment)
		handled <- d.Namespace + "/" + d.Name
		return nil
	})
	// region: enqueue-owner
	deployments, err := controller.New(controller.Config{
		Name:      "deployments",
		Handler:   handleDeployment,
		Retriever: deploymentRetriever,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	replicaSets, err := controller.New(controller.Config{
		Name: "deployment-replicasets",
		// Queue each ReplicaSet's Deployment in the Deployment controller.
		Handler:       owner.EnqueueOwner(deployments, schema.GroupKind{Group: "apps", Kind: "Deployment"}),
		Retriever:     replicaSetRetriever,
		HandleDeleted: true, // a deleted ReplicaSet has its Deployment handled
		DisableResync: true, // the Deployment controller resyncs
	})
	// endregion: enqueue-owner
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = deployments.Run(ctx) })
	wg.Go(func() { _ = replicaSets.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	fmt.Println("handled", <-handled) // the initial list
	for !replicaSets.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	_ = replicaSetRetriever.Delete(rs)
	fmt.Println("handled", <-handled, "after its ReplicaSet was deleted")
	// Output:
	// handled shop/web
	// handled shop/web after its ReplicaSet was deleted
}
