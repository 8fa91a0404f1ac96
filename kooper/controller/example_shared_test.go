package controller_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

// Two controllers of pods sharing one cache: one watch and one copy of each
// pod, two queues and two handlers.
func ExampleNewShared() {
	pods := controllertest.NewRetriever(&corev1.Pod{}, controllertest.Options{})
	_, _ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})

	shared, err := controller.NewShared(controller.SharedConfig{Retriever: pods})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var handled []string
	var running sync.WaitGroup
	for _, name := range []string{"audit", "labeler"} {
		ctrl, err := controller.New(controller.Config{
			Name:      name,
			Retriever: shared, // the same *Shared: the same cache
			Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, name+": "+obj.(*corev1.Pod).Name)
				if len(handled) == 2 {
					cancel()
				}
				return nil
			}),
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		running.Go(func() { _ = ctrl.Run(ctx) })
	}
	running.Wait()

	slices.Sort(handled)
	fmt.Println(handled)
	watches := 0
	for _, c := range pods.Calls() {
		if c.Verb == "watch" {
			watches++
		}
	}
	fmt.Println("watches:", watches)
	// Output:
	// [audit: web-1 labeler: web-1]
	// watches: 1
}

// A controller that needs only the metadata of pods: its cache holds
// *metav1.PartialObjectMetadata, a fraction of each pod. It needs a
// cluster, so it is compiled but not run by go test.
func ExampleNewMetadataRetriever() {
	var restConfig *rest.Config // from clientcmd or rest.InClusterConfig
	md, err := metadata.NewForConfig(restConfig)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctrl, err := controller.New(controller.Config{
		Name:      "pod-owners",
		Retriever: controller.NewMetadataRetriever(md, corev1.SchemeGroupVersion.WithResource("pods"), ""),
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			pod := obj.(*metav1.PartialObjectMetadata)
			fmt.Println(pod.Namespace, pod.Name, len(pod.OwnerReferences))
			return nil
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = ctrl.Run(context.Background())
}
