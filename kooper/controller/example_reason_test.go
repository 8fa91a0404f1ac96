package controller_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/kooper/controller"
)

// A handler that says why it runs: the pod was there when the controller
// started, then the handler asked to run again.
func ExampleReasons() {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})
	pods := client.CoreV1().Pods("")
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	// region: reasons
	handle := func(ctx context.Context, pod *corev1.Pod) error {
		for _, r := range controller.Reasons(ctx) {
			fmt.Printf("%s: %s\n", pod.Name, r)
		}
		// endregion: reasons
		if runs++; runs == 1 {
			return controller.RequeueAfter(0)
		}
		cancel()
		return nil
	}
	ctrl, err := controller.New(controller.Config{
		Name:      "example",
		Retriever: controller.WithoutWatchList(controller.NewRetriever(pods.List, pods.Watch)),
		Handler:   controller.Typed(handle),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := ctrl.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// web-1: initial
	// web-1: requeue (0s)
}
