package integration_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/controller"
)

// What read-your-own-writes costs a handler that writes, on the real API
// server: b.N ConfigMaps are created, and the handler marks each with an
// annotation (a PATCH) unless its cached copy has it already. ns/op is the
// time from the first create to the last mark, per ConfigMap; writes/op
// counts the marks, more than one when a handling read a cache from
// before its own mark; allocs/op are the whole process's. Run it both ways
// in one session and compare:
//
//	go test -run '^$' -bench AHandlerThatWrites -benchtime 300x -count 5 ./controller/integration
func BenchmarkAHandlerThatWrites(b *testing.B) {
	for _, track := range []bool{false, true} {
		b.Run(fmt.Sprintf("TrackWrites=%v", track), func(b *testing.B) {
			ctx := context.Background()
			cfg := cluster.Config()
			cfg.QPS, cfg.Burst = 1000, 2000
			admin := kubernetes.NewForConfigOrDie(cfg)
			if track {
				cfg = controller.TrackWrites(cfg)
			}
			client := kubernetes.NewForConfigOrDie(cfg)
			ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
			var marked atomic.Int64
			mark := []byte(`{"metadata":{"annotations":{"kooper.kooperkit.io/handled":"yes"}}}`)
			c, err := controller.New(controller.Config{
				Name:      "bench-writes",
				Retriever: configMaps(client, ns.Name),
				Handler: controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
					cm := obj.(*corev1.ConfigMap)
					if cm.Annotations["kooper.kooperkit.io/handled"] == "yes" {
						return nil
					}
					_, err := client.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, mark, metav1.PatchOptions{})
					if err == nil {
						marked.Add(1)
					}
					return err
				}),
			})
			if err != nil {
				b.Fatal(err)
			}
			stop, _ := runInBackground(b, c.Run)
			defer func() {
				if err := stop(); err != nil {
					b.Error(err)
				}
			}()
			for !c.HasSynced() {
				time.Sleep(10 * time.Millisecond)
			}

			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := admin.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			deadline := time.Now().Add(time.Minute)
			for marked.Load() < int64(b.N) {
				if time.Now().After(deadline) {
					b.Fatalf("%d of %d ConfigMaps marked after a minute", marked.Load(), b.N)
				}
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			time.Sleep(500 * time.Millisecond) // a late second mark counts too
			b.ReportMetric(float64(marked.Load())/float64(b.N), "writes/op")
		})
	}
}
