package controllertest_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

// A controller handles what a Retriever holds when it starts, then every
// change a test makes.
func ExampleRetriever() {
	pods := controllertest.NewRetriever(&corev1.Pod{})
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	if _, err := pods.Add(web); err != nil {
		fmt.Println(err)
		return
	}

	handled := make(chan string)
	ctrl, err := controller.New(controller.Config{
		Name:      "pods",
		Retriever: pods,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			p := obj.(*corev1.Pod)
			handled <- fmt.Sprint(p.Name, " ", p.Labels)
			return nil
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- ctrl.Run(ctx) }()

	fmt.Println("handled", <-handled)
	web.Labels = map[string]string{"tier": "frontend"}
	if _, err := pods.Update(web); err != nil {
		fmt.Println(err)
	}
	fmt.Println("handled", <-handled)
	if _, err := pods.Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}}); err != nil {
		fmt.Println("error:", err)
	}

	cancel()
	select {
	case err := <-done:
		fmt.Println("stopped:", err)
	case <-time.After(10 * time.Second):
		fmt.Println("the controller did not stop")
	}
	// Output:
	// handled web map[]
	// handled web map[tier:frontend]
	// error: objects "shop/db" not found
	// stopped: <nil>
}
