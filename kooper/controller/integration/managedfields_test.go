package integration_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
)

// The API server records managedFields on every write; a controller drops
// them from its cache.
func TestManagedFieldsFromTheAPIServerAreDropped(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	cm, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tracked"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{FieldManager: "kooper-test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) == 0 {
		t.Fatal("the API server returned no managedFields: nothing to drop")
	}
	got := make(chan int, 1)
	ctrl, err := controller.New(controller.Config{
		Name: "managedfields", Retriever: configMaps(client, ns), ResyncInterval: -1,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			select {
			case got <- len(obj.(*corev1.ConfigMap).ManagedFields):
			default:
			}
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runInBackground(t, ctrl.Run)
	var n int
	select {
	case n = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the ConfigMap was not handled within 30s")
	}
	cached, ok := ctrl.List()
	if !ok || len(cached) != 1 {
		t.Fatalf("cache holds %d objects (synced %v), want 1", len(cached), ok)
	}
	inCache := len(cached[0].(*corev1.ConfigMap).ManagedFields)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n != 0 || inCache != 0 {
		t.Errorf("handler saw %d managedFields entries, cache held %d; want none", n, inCache)
	}
}
