package integration_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
)

// Two replicas over 1,000 ConfigMaps, with warm standbys (the default):
// the standby fills its cache while the leader handles; when the leader
// stops, the standby handles every object from its cache, making no LIST
// and no watch that streams an initial list, and no handling of one
// replica overlaps one of the other.
func TestAWarmStandbyTakesOverWithoutAList(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	const objects = 1000
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Go(func() {
			for i := w; i < objects; i += 10 {
				if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}}, metav1.CreateOptions{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	rec := &handlings{}
	type replica struct {
		wire   *wire
		ctrl   *controller.Controller
		runner *leaderelection.Runner
		stop   func() error
		mu     sync.Mutex
		seen   map[string]bool
	}
	start := func(id string) *replica {
		r := &replica{wire: &wire{}, seen: map[string]bool{}}
		cfg := r.wire.config(rest.CopyConfig(cluster.Config()))
		cfg.QPS, cfg.Burst = 200, 400
		cl := kubernetes.NewForConfigOrDie(cfg)
		var err error
		r.ctrl, err = controller.New(controller.Config{
			Name: id,
			Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
				began := time.Now()
				time.Sleep(time.Millisecond)
				r.mu.Lock()
				r.seen[obj.(*corev1.ConfigMap).Name] = true
				r.mu.Unlock()
				rec.record(id, began, time.Now())
				return nil
			}),
			Retriever:       configMaps(cl, ns),
			ResyncInterval:  -1,
			ShutdownTimeout: 400 * time.Millisecond, // below 3s - 2s - 500ms
		})
		if err != nil {
			t.Fatal(err)
		}
		r.runner, err = leaderelection.New(leaderelection.Config{
			Name: "warm", Namespace: ns, Client: cl.CoordinationV1(), Identity: id,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
		}, r.ctrl)
		if err != nil {
			t.Fatal(err)
		}
		r.stop, _ = runInBackground(t, r.runner.Run)
		return r
	}
	handled := func(r *replica) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.seen)
	}

	a := start("a")
	eventually(t, 30*time.Second, "a leads and handles every ConfigMap", func() bool { return a.runner.Leading() && handled(a) == objects })
	b := start("b")
	// A cold standby would not run its controller: its cache would stay
	// empty.
	eventually(t, 30*time.Second, "b's cache is filled while it stands by", func() bool { return b.ctrl.HasSynced() })
	if status, err := b.runner.Ready(); !b.runner.Standby() || err != nil || status != "standby" || handled(b) != 0 {
		t.Fatalf("got b standby %t, ready %q (%v), %d handled, want a ready warm standby that handled nothing", b.runner.Standby(), status, err, handled(b))
	}
	before := len(b.wire.to("/configmaps"))

	if err := a.stop(); err != nil {
		t.Fatalf("a: %v", err)
	}
	stopped := time.Now()
	eventually(t, 30*time.Second, "b handles every ConfigMap", func() bool { return handled(b) == objects })
	all := time.Since(stopped)
	bHandlings := rec.since(stopped)
	first := bHandlings[0].start
	for _, h := range bHandlings {
		if h.start.Before(first) {
			first = h.start
		}
	}
	t.Logf("b handled its first ConfigMap %s after a stopped, all %d within %s", first.Sub(stopped).Round(time.Millisecond), objects, all.Round(time.Millisecond))

	// No new list at the takeover: the requests b made since.
	for _, r := range b.wire.to("/configmaps")[before:] {
		if r.method == "GET" && !strings.Contains(r.query, "watch=true") {
			t.Errorf("got a LIST at the takeover: %s?%s", r.path, r.query)
		}
		if strings.Contains(r.query, "sendInitialEvents=true") {
			t.Errorf("got a watch streaming an initial list at the takeover: %s?%s", r.path, r.query)
		}
	}
	// Never two replicas handling at once.
	var aEnd time.Time
	for _, h := range rec.since(time.Time{}) {
		if h.identity == "a" && h.end.After(aEnd) {
			aEnd = h.end
		}
	}
	if !first.After(aEnd) {
		t.Errorf("b started handling at %s, before a's last handling ended at %s", first.Format(time.StampMicro), aEnd.Format(time.StampMicro))
	}
}
