package controller_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/kooper/controller"
)

// A controller over client-go's fake clientset, which cannot stream its
// initial list: without WithoutWatchList, Run would wait for it forever.
func ExampleWithoutWatchList() {
	// region: fake-clientset
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})
	pods := client.CoreV1().Pods("")
	r := controller.WithoutWatchList(controller.NewRetriever(pods.List, pods.Watch))
	// endregion: fake-clientset

	ctx, cancel := context.WithCancel(context.Background())
	ctrl, err := controller.New(controller.Config{
		Name:      "example",
		Retriever: r,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			fmt.Println("handled", obj.(*corev1.Pod).Name)
			cancel()
			return nil
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := ctrl.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// handled web-1
}
