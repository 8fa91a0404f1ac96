package integration_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/faults"
	"github.com/kooperkit/kooper/kooper/controller"
)

// A handler whose API call goes into a blackhole (no answer, no reset,
// and a client with no timeout of its own) returns when ProcessingTimeout
// elapses, with the context's deadline error, and the key is retried: a
// worker is never held for longer by a call the API server does not
// answer. The controller's own watch reaches the API server directly; only
// the handler's client goes through the proxy.
func TestAHandlersCallEndsAtTheProcessingTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ns := fmt.Sprintf("timeout-%d-%d", os.Getpid(), runs.Add(1))
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cm, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := url.Parse(cluster.Config().Host)
	proxy, err := faults.NewProxy("timeout", host.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	rc := cluster.Config()
	rc.Host = "https://" + proxy.Addr()
	rc.Timeout = 0 // the handler's context is the only bound
	proxied := kubernetes.NewForConfigOrDie(rc)

	type handling struct {
		rv         string
		began, end time.Time
		err        error
	}
	var mu sync.Mutex
	var done []handling
	cms := admin.CoreV1().ConfigMaps(ns)
	c, err := controller.New(controller.Config{
		Name:              "timeout",
		Retriever:         controller.NewRetriever(cms.List, cms.Watch),
		ProcessingTimeout: timeout,
		ResyncInterval:    -1,
		Handler: controller.HandlerFunc(func(ctx context.Context, obj kruntime.Object) error {
			h := handling{rv: obj.(*corev1.ConfigMap).ResourceVersion, began: time.Now()}
			_, h.err = proxied.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
			h.end = time.Now()
			mu.Lock()
			done = append(done, h)
			mu.Unlock()
			return h.err
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return 30s after its context was cancelled")
		}
	})
	// find waits for the first handling of version rv after from that
	// satisfies ok.
	find := func(rv string, from time.Time, ok func(handling) bool) (handling, bool) {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			for _, h := range done {
				if h.rv == rv && !h.began.Before(from) && ok(h) {
					mu.Unlock()
					return h, true
				}
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
		return handling{}, false
	}
	if _, ok := find(cm.ResourceVersion, time.Time{}, func(h handling) bool { return h.err == nil }); !ok {
		t.Fatal("cm-0 was not handled through the proxy 30s after Run")
	}

	heal, err := proxy.Blackhole()
	if err != nil {
		t.Fatal(err)
	}
	holed := time.Now()
	cm.Data = map[string]string{"n": "1"}
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		heal()
		t.Fatal(err)
	}
	h, ok := find(cm.ResourceVersion, holed, func(handling) bool { return true })
	heal()
	if !ok {
		t.Fatalf("no handling of version %s ended within 30s of the blackhole: a call held the worker", cm.ResourceVersion)
	}
	took := h.end.Sub(h.began)
	if !errors.Is(h.err, context.DeadlineExceeded) || took < timeout {
		t.Fatalf("the handling in the blackhole ended after %s with %v; want the context's deadline, after %s", took, h.err, timeout)
	}
	t.Logf("the handler's call into the blackhole returned after %s (ProcessingTimeout %s): %v", took.Round(time.Millisecond), timeout, h.err)
	healed := time.Now()
	retried, ok := find(cm.ResourceVersion, healed, func(h handling) bool { return h.err == nil })
	if !ok {
		t.Fatal("the key was not handled again once the blackhole healed")
	}
	t.Logf("retried and handled %s after the heal", retried.end.Sub(healed).Round(time.Millisecond))
}
