package controller_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
	"github.com/kooperkit/kooper/kooper/log"
)

// A controller that logs every pod of a cluster, the README's quickstart.
// It needs a cluster, so it is compiled but not run by go test.
func Example_podLogger() {
	// region: quickstart
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	client := kubernetes.NewForConfigOrDie(cfg)

	// Retriever: list and watch pods in every namespace.
	pods := client.CoreV1().Pods("")
	retriever := controller.NewRetriever(pods.List, pods.Watch)

	// Handler: called with the latest state of each pod.
	logPod := func(ctx context.Context, pod *corev1.Pod) error {
		fmt.Printf("pod %s/%s is %s\n", pod.Namespace, pod.Name, pod.Status.Phase)
		return nil
	}

	ctrl, err := controller.New(controller.Config{
		Name:      "pod-logger",
		Handler:   controller.Typed(logPod),
		Retriever: retriever,
		Logger:    log.NewStd(os.Stderr, log.StdOptions{}),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	if err := ctrl.Run(ctx); err != nil { // until Ctrl-C
		fmt.Fprintln(os.Stderr, err)
	}
	// endregion: quickstart
}

// region: example-new

// New and Run a controller over an in-memory retriever.
func ExampleNew() {
	pods := controllertest.NewRetriever(&corev1.Pod{})
	for _, name := range []string{"web-1", "web-2"} {
		_, _ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}})
	}

	ctx, cancel := context.WithCancel(context.Background())
	var handled []string
	ctrl, err := controller.New(controller.Config{
		Name:      "example",
		Retriever: pods,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			pod := obj.(*corev1.Pod)
			handled = append(handled, pod.Namespace+"/"+pod.Name)
			if len(handled) == 2 {
				cancel()
			}
			return nil
		}),
		ConcurrentWorkers: 1, // one at a time: handled needs no lock
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := ctrl.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Objects listed together are handled in no particular order.
	slices.Sort(handled)
	fmt.Println("handled", handled)
	// Output:
	// handled [shop/web-1 shop/web-2]
}

// endregion: example-new

// A typed handler skips the type assertion.
func ExampleTyped() {
	h := controller.Typed(
		func(_ context.Context, pod *corev1.Pod) error {
			fmt.Println("pod", pod.Name)
			return nil
		})

	_ = h.Handle(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}})
	err := h.Handle(context.Background(), &corev1.Service{})
	fmt.Println(err, controller.IsTerminal(err))
	// Output:
	// pod web-1
	// terminal: handler wants *v1.Pod, got *v1.Service true
}

// Chain wraps a handler in middlewares, the first one outermost.
func ExampleChain() {
	trace := func(name string) controller.Middleware {
		return func(next controller.Handler) controller.Handler {
			return controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
				fmt.Println("enter", name)
				defer fmt.Println("leave", name)
				return next.Handle(ctx, obj)
			})
		}
	}
	h := controller.Chain(controller.HandlerFunc(func(context.Context, runtime.Object) error {
		fmt.Println("handle")
		return nil
	}), trace("logging"), trace("metrics"))

	_ = h.Handle(context.Background(), &corev1.Pod{})
	// Output:
	// enter logging
	// enter metrics
	// handle
	// leave metrics
	// leave logging
}

// A warm standby: RunWarm fills the cache and queues every key while this
// replica waits, and handles the moment leading is closed. Under leader
// election, leaderelection.Runner does this for you.
func ExampleController_RunWarm() {
	src := controllertest.NewRetriever(&corev1.Pod{})
	_, _ = src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})
	handled := make(chan string, 1)
	c, err := controller.New(controller.Config{
		Name: "pods",
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			handled <- obj.(*corev1.Pod).Name
			return nil
		}),
		Retriever: src,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	leading := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- c.RunWarm(ctx, leading) }()
	for !c.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("synced; handled while standing by:", len(handled))
	close(leading) // this replica leads
	fmt.Println("handled once leading:", <-handled)
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// synced; handled while standing by: 0
	// handled once leading: web-1
	// Run: <nil>
}
