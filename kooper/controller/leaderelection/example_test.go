package leaderelection_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
)

// Run a controller only while this replica holds the Lease ops/pod-logger.
// With a real cluster, Client is clientset.CoordinationV1().
func ExampleNew() {
	pods := controllertest.NewRetriever(&corev1.Pod{})
	_, _ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl, err := controller.New(controller.Config{
		Name:      "pod-logger",
		Retriever: pods,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			fmt.Println("leader handles", obj.(*corev1.Pod).Name)
			cancel() // stop after one object, for the example
			return nil
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	runner, err := leaderelection.New(leaderelection.Config{
		Name:      "pod-logger",
		Namespace: "ops",
		Client:    fake.NewClientset().CoordinationV1(),
		Identity:  "replica-1",
		// Defaults are 15s/10s/2s; a short retry gets the example going.
		RetryPeriod: 100 * time.Millisecond,
	}, ctrl)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := runner.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// leader handles web-1
}

// With Disabled, for a single replica (a development run, a test), the same
// Runner runs its controllers at once and holds no Lease: no Name, Namespace
// or Client. It neither leads nor stands by, and its Ready (for /readyz)
// answers "synced" once its controllers' caches are filled.
func ExampleConfig_disabled() {
	pods := controllertest.NewRetriever(&corev1.Pod{})
	_, _ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl, err := controller.New(controller.Config{
		Name:      "pod-logger",
		Retriever: pods,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			fmt.Println("handles", obj.(*corev1.Pod).Name)
			cancel() // stop after one object, for the example
			return nil
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	runner, err := leaderelection.New(leaderelection.Config{Disabled: true}, ctrl)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leading:", runner.Leading(), "standby:", runner.Standby())
	_, err = runner.Ready()
	fmt.Println("ready:", err)
	if err := runner.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// leading: false standby: false
	// ready: caches not synced yet
	// handles web-1
}

// filled stands for a *controller.Controller whose cache is filled.
type filled struct{}

func (filled) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (filled) HasSynced() bool               { return true }

// Ready says what /readyz answers (kooper/health's Config.Ready). Without
// leader election the replica is ready once its caches are filled; under
// leader election, a new runner is a standby, ready to take over, until it
// holds the Lease.
func ExampleRunner_Ready() {
	ctrl := filled{}
	single, err := leaderelection.New(leaderelection.Config{Disabled: true}, ctrl)
	if err != nil {
		fmt.Println(err)
		return
	}
	replica, err := leaderelection.New(leaderelection.Config{
		Name:      "pod-terminator",
		Namespace: "kooper-pod-terminator",
		Client:    fake.NewClientset().CoordinationV1(),
	}, ctrl)
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, r := range []*leaderelection.Runner{single, replica} {
		status, err := r.Ready()
		if err != nil {
			fmt.Println(503, err)
			continue
		}
		fmt.Println(200, status)
	}
	// Output:
	// 200 synced
	// 200 standby
}
