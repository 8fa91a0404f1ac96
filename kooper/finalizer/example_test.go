package finalizer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kooperkit/kooper/kooper/finalizer"
)

// A handler that owns a DNS record outside the cluster: Finalize first,
// Ensure second, then the real work.
func ExampleFinalizer() {
	// region: dance
	f := finalizer.Finalizer{
		Name: "example.com/dns-record",
		// In an operator: updated, err := client.CoreV1().ConfigMaps(ns).Update(...),
		// then *obj.(*corev1.ConfigMap) = *updated.
		Update: func(_ context.Context, obj metav1.Object) error {
			fmt.Println("update, finalizers:", obj.GetFinalizers())
			return nil
		},
	}
	handle := func(ctx context.Context, cm *corev1.ConfigMap) error {
		deleting, err := f.Finalize(ctx, cm, func(context.Context) error {
			fmt.Println("delete the DNS record (idempotent)")
			return nil
		})
		if deleting || err != nil {
			return err
		}
		if _, err := f.Ensure(ctx, cm); err != nil {
			return err
		}
		fmt.Println("create or update the DNS record")
		return nil
	}
	// endregion: dance

	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	_ = handle(ctx, cm) // first handling: the finalizer is stored first
	_ = handle(ctx, cm) // later handlings: no write for the finalizer

	now := metav1.Now()
	cm.DeletionTimestamp = &now // kubectl delete: the API server sets this
	_ = handle(ctx, cm)

	// Output:
	// update, finalizers: [example.com/dns-record]
	// create or update the DNS record
	// create or update the DNS record
	// delete the DNS record (idempotent)
	// update, finalizers: []
}

func ExampleHas() {
	cm := &corev1.ConfigMap{}
	cm.Finalizers = []string{"example.com/x"}
	fmt.Println(finalizer.Has(cm, "example.com/x"), finalizer.Has(cm, "example.com/y"))
	// Output:
	// true false
}
