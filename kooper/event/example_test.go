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
	defer rec.Shutdown()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}
	rec.Warning(pod, "InvalidSpec", "replicas must be positive, got %d", -1)

	// Events are written in the background: wait for it (kubectl describe
	// pod web-0 would show it under Events).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		list, _ := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		if len(list.Items) > 0 {
			e := list.Items[0]
			fmt.Println(e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
			return
		}
	}
	// Output:
	// Warning InvalidSpec Pod web-0 replicas must be positive, got -1
}
