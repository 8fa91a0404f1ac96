// Command uses is what the tests of hack/surface -uses measure: a small
// controller over an in-memory retriever. It must compile: the test fails
// on a type error.
package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

func main() {
	// A handler that prints the kind of each object.
	var h controller.Handler = controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		fmt.Println(obj.GetObjectKind().GroupVersionKind())
		return nil
	})

	cfg := controller.Config{
		Name:      "uses",
		Handler:   h,
		Retriever: controllertest.NewRetriever(&corev1.Pod{}),
	}
	cfg.ConcurrentWorkers = 1 // one worker

	c, err := controller.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.Handle(ctx, &corev1.Pod{})
	fmt.Println(c.Run(ctx))
}
