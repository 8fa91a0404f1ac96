package event_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/kooper/event"
)

func ExampleRecorder() {
	client := fake.NewClientset() // in an operator: kubernetes.NewForConfig(cfg)
	rec, err := event.New(event.Config{Client: client, Component: "web-operator"})
	if err != nil {
		fmt.Println(err)
		return
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}
	rec.Warning(pod, "InvalidSpec", "replicas must be positive, got %d", -1)

	// Events are written in the background. Shutdown writes those still
	// queued, for at most as long as its context allows.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec.Shutdown(ctx)

	list, _ := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	for _, e := range list.Items { // kubectl describe pod web-0 shows them
		fmt.Println(e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
	}
	// Output:
	// Warning InvalidSpec Pod web-0 replicas must be positive, got -1
}
