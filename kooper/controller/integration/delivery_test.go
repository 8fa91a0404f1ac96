package integration_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
)

// calls records handlings as "name@resourceVersion".
type calls struct {
	mu  sync.Mutex
	all []string
}

func (c *calls) add(obj runtime.Object) string {
	m := obj.(metav1.Object)
	s := m.GetName() + "@" + m.GetResourceVersion()
	c.mu.Lock()
	c.all = append(c.all, s)
	c.mu.Unlock()
	return m.GetName()
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

func (c *calls) count(name string) int {
	n := 0
	for _, s := range c.get() {
		if len(s) > len(name) && s[:len(name)+1] == name+"@" {
			n++
		}
	}
	return n
}

func TestServicesAreDeliveredInOrderWithTheirLatestState(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	rec := &calls{}
	ctrl, err := controller.New(controller.Config{
		Name: "delivery", Retriever: services(client, ns), ResyncInterval: -1,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			rec.add(obj)
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runInBackground(t, ctrl.Run)

	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	var want []string
	created, err := client.CoreV1().Services(ns).Create(ctx, svc("svc1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "svc1@"+created.ResourceVersion)
	eventually(t, 20*time.Second, "svc1 is handled", func() bool { return len(rec.get()) == 1 })
	created, err = client.CoreV1().Services(ns).Create(ctx, svc("svc2"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "svc2@"+created.ResourceVersion)
	eventually(t, 20*time.Second, "svc2 is handled", func() bool { return len(rec.get()) == 2 })
	s1, err := client.CoreV1().Services(ns).Get(ctx, "svc1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s1.Labels = map[string]string{"updated": "yes"}
	updated, err := client.CoreV1().Services(ns).Update(ctx, s1, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "svc1@"+updated.ResourceVersion)
	eventually(t, 20*time.Second, "the update of svc1 is handled", func() bool { return len(rec.get()) == 3 })
	time.Sleep(500 * time.Millisecond) // nothing more may come
	if err := stop(); err != nil {
		t.Errorf("got Run error %v, want nil", err)
	}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Errorf("got handlings %v, want exactly %v", got, want)
	}
}

func TestAnAlwaysFailingObjectIsRetriedExactlyWhileOthersFlow(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	for _, name := range []string{"bad", "good-1", "good-2"} {
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &calls{}
	const maxRetries = 4
	ctrl, err := controller.New(controller.Config{
		Name: "retries", Retriever: configMaps(client, ns), ResyncInterval: -1,
		MaxRetries: maxRetries, RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 50 * time.Millisecond,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			if rec.add(obj) == "bad" {
				return errors.New("always fails")
			}
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := runInBackground(t, ctrl.Run)
	eventually(t, 20*time.Second, "bad is handled 1 + MaxRetries times", func() bool { return rec.count("bad") >= 1+maxRetries })
	time.Sleep(time.Second) // no further retry may come
	_ = stop()
	if got := rec.count("bad"); got != 1+maxRetries {
		t.Errorf("got %d calls for the failing object, want exactly %d", got, 1+maxRetries)
	}
	for _, name := range []string{"good-1", "good-2"} {
		if got := rec.count(name); got != 1 {
			t.Errorf("got %d calls for %s, want 1", got, name)
		}
	}
}
