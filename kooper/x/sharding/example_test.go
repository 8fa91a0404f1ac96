package sharding_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/x/sharding"
)

// One replica of a sharded pod controller: the handler goes through the
// Runner's slot gate, the Retriever is the Runner's, and the Runner runs
// the controller. Alone in its group, the replica holds every slot and
// handles every pod; on the way out it deletes its Lease. Run the same in
// several replicas, and each handles the pods of its slots only.
func Example() {
	client := fake.NewClientset(examplePod("a"), examplePod("b"), examplePod("c"))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	// A Retriever of every pod (over a fake clientset, which cannot stream
	// lists), and a handler that records the pods it handled.
	typed := client.CoreV1().Pods("")
	pods := controller.WithoutWatchList(controller.NewRetriever(typed.List, typed.Watch))
	seen := handledPods{stopAt: 3, stop: stop}
	handler := controller.Typed(seen.handle)

	// region: wiring
	shards, err := sharding.New(sharding.Config{Name: "pods", Namespace: "default", Client: client.CoordinationV1()})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := controller.New(controller.Config{
		Name:      "pods",
		Handler:   shards.Handler(handler),
		Retriever: shards.Retriever(pods),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = shards.Run(ctx, c)
	// endregion: wiring
	if err != nil {
		fmt.Println(err)
		return
	}

	leases, err := client.CoordinationV1().Leases("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("handled", seen.names(), "in mode", shards.Mode())
	fmt.Println("Leases left:", len(leases.Items))
	// Output:
	// handled [a b c] in mode client-side
	// Leases left: 0
}

// examplePod is a pod with a UID, as the API server gives it: its slot is
// a hash of the UID.
func examplePod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-of-" + name)}}
}

// handledPods records the pods handled, and calls stop once stopAt
// different pods were.
type handledPods struct {
	mu     sync.Mutex
	seen   map[string]bool
	stopAt int
	stop   func()
}

func (h *handledPods) handle(_ context.Context, pod *corev1.Pod) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	h.seen[pod.Name] = true
	if len(h.seen) == h.stopAt {
		h.stop()
	}
	return nil
}

func (h *handledPods) names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for name := range h.seen {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
