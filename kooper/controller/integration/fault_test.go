package integration_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/kooper/controller"
)

// While 500 ConfigMaps are being updated, kube-apiserver is stopped and
// started again. Writes resume, the controller never exits, and every
// object's final version is handled: nothing is lost.
func TestNothingIsLostAcrossAnAPIServerRestart(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	const objects = 500
	for i := range objects {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"round": "0"}}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu        sync.Mutex
		lastSeen  = map[string]string{} // name -> resourceVersion last handled
		restarted atomic.Int64          // unix nanos when the restart finished
		afterRest atomic.Int64          // handlings after the restart
	)
	ctrl, err := controller.New(controller.Config{
		Name: "fault", Retriever: configMaps(client, ns), ResyncInterval: -1,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			m := obj.(metav1.Object)
			mu.Lock()
			lastSeen[m.GetName()] = m.GetResourceVersion()
			mu.Unlock()
			if r := restarted.Load(); r != 0 && time.Now().UnixNano() > r {
				afterRest.Add(1)
			}
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, done := runInBackground(t, ctrl.Run)

	// Three rounds of updates to every object; a write failing while the
	// API server is down is retried until it succeeds.
	writer := kubernetes.NewForConfigOrDie(cluster.Config())
	var failedWrites atomic.Int64
	updatesDone := make(chan struct{})
	go func() {
		defer close(updatesDone)
		for round := 1; round <= 3; round++ {
			for i := range objects {
				name := fmt.Sprintf("cm-%03d", i)
				for {
					cm, err := writer.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
					if err == nil {
						cm.Data["round"] = fmt.Sprint(round)
						_, err = writer.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
					}
					if err == nil {
						break
					}
					failedWrites.Add(1)
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
	}()

	time.Sleep(time.Second) // mid-stream
	cluster.StopAPIServer()
	time.Sleep(2 * time.Second)
	if err := cluster.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	restarted.Store(time.Now().UnixNano())
	select {
	case <-updatesDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("updates did not finish within 2 minutes of the restart")
	}

	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	final := map[string]string{}
	for _, cm := range list.Items {
		if cm.Name != "kube-root-ca.crt" {
			final[cm.Name] = cm.ResourceVersion
		}
	}
	missing := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for name, rv := range final {
			if lastSeen[name] != rv {
				out = append(out, name)
			}
		}
		return out
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if m := missing(); len(m) > 0 {
		t.Errorf("got %d of %d objects whose final version was never handled (lost), e.g. %v", len(m), len(final), m[:min(5, len(m))])
	}
	if afterRest.Load() == 0 {
		t.Error("the handler was not called after the restart")
	}
	if failedWrites.Load() == 0 {
		t.Error("no write failed: the API server was not down while writing")
	}
	select {
	case <-done:
		t.Error("the controller exited during the fault")
	default:
	}
	t.Logf("%d objects, 3 rounds of updates, %d failed writes during the outage, %d handlings after the restart",
		len(final), failedWrites.Load(), afterRest.Load())
}
