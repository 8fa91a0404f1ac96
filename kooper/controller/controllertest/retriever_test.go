package controllertest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

// A controller syncs over a Retriever and sees a change made after it
// started, whether its reflector streams the initial list (watch-list) or
// lists and then watches (the Retriever wrapped in WithoutWatchList).
func TestAControllerSyncsAndSeesChangesEitherWay(t *testing.T) {
	tests := []struct {
		name string
		wrap func(controller.Retriever) controller.Retriever
	}{
		{"watch-list", func(r controller.Retriever) controller.Retriever { return r }},
		{"list then watch", controller.WithoutWatchList},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			pods := controllertest.NewRetriever(&corev1.Pod{})
			if _, err := pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}); err != nil {
				t.Fatal(err)
			}
			var (
				mu   sync.Mutex
				seen = map[string]string{} // name to resourceVersion
			)
			ctrl, err := controller.New(controller.Config{
				Name:      "pods",
				Retriever: tt.wrap(pods),
				Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
					mu.Lock()
					defer mu.Unlock()
					seen[obj.(*corev1.Pod).Name] = obj.(*corev1.Pod).ResourceVersion
					return nil
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- ctrl.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			waitFor(t, "the controller syncs", ctrl.HasSynced)

			db, err := pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}})
			if err != nil {
				t.Fatal(err)
			}
			want := db.(*corev1.Pod).ResourceVersion
			waitFor(t, "the new pod is handled", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return seen["web"] == "1" && seen["db"] == want
			})
		})
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
