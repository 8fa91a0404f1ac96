package integration_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
)

// RunAll runs controllers of two kinds in one process, without leader
// election: each handles its own objects on the API server, and a clean
// stop returns nil once both have returned. The first error stops the
// others: a controller given twice fails its second Run, and RunAll
// returns that error at once, the other Run stopped.
func TestRunAllRunsControllersTogether(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	handled := make(chan string, 100)
	newController := func(name string, r controller.Retriever) *controller.Controller {
		t.Helper()
		c, err := controller.New(controller.Config{Name: name, Retriever: r, ResyncInterval: -1,
			Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
				handled <- name + " " + obj.(metav1.Object).GetName()
				return nil
			})})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	secrets := client.CoreV1().Secrets(ns)
	cms := newController("runall-configmaps", configMaps(client, ns))
	scs := newController("runall-secrets", controller.NewRetriever(secrets.List, secrets.Watch))
	stop, done := runInBackground(t, func(ctx context.Context) error { return controller.RunAll(ctx, cms, scs) })
	eventually(t, 30*time.Second, "both controllers have synced", func() bool { return cms.HasSynced() && scs.HasSynced() })

	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"runall-configmaps a": true, "runall-secrets b": true}
	for deadline := time.After(30 * time.Second); len(want) > 0; {
		select {
		case h := <-handled:
			delete(want, h)
		case <-done:
			t.Fatal("RunAll returned before it was stopped")
		case <-deadline:
			t.Fatalf("not handled after 30s: %v", want)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("got %v from a clean stop, want nil", err)
	}

	twice := newController("runall-twice", configMaps(client, ns))
	began := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := controller.RunAll(rctx, twice, twice)
	if !errors.Is(err, controller.ErrAlreadyRun) {
		t.Errorf("got %v from a controller given twice, want ErrAlreadyRun", err)
	}
	if rctx.Err() != nil {
		t.Errorf("RunAll returned after %s, at its context's deadline: the other Run was not stopped", time.Since(began).Round(time.Millisecond))
	}
}
