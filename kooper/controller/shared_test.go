package controller_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

// callsOf counts the List and Watch calls a source received.
func callsOf(src *controllertest.Retriever) (lists, watches int) {
	for _, c := range src.Calls() {
		switch c.Verb {
		case "list":
			lists++
		case "watch":
			watches++
		}
	}
	return lists, watches
}

func TestControllersSharingACacheWatchOnceAndEachHandleEverything(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			src := controllertest.NewRetriever(&corev1.Pod{}, m.opts)
			mustAdd(t, src, pod("p1"))
			mustAdd(t, src, pod("p2"))
			shared, err := controller.NewShared(controller.SharedConfig{Retriever: src})
			if err != nil {
				t.Fatal(err)
			}
			a, b := &recorder{}, &recorder{}
			stopA := start(t, controller.Config{Name: "a", Handler: a, Retriever: shared, ResyncInterval: -1})
			stopB := start(t, controller.Config{Name: "b", Handler: b, Retriever: shared, ResyncInterval: -1})
			eventually(t, "both controllers handle both pods", func() bool {
				return a.countOf("p1") == 1 && a.countOf("p2") == 1 && b.countOf("p1") == 1 && b.countOf("p2") == 1
			})
			lists, watches := callsOf(src)
			wantLists := 0
			if m.opts.DisableWatchList {
				wantLists = 1
			}
			if lists != wantLists || watches != 1 {
				t.Errorf("got %d lists and %d watches for two controllers, want %d and 1: one cache", lists, watches, wantLists)
			}

			// One stops; the other keeps getting changes from the cache.
			if err := stopA(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			mustAdd(t, src, pod("p3"))
			eventually(t, "the remaining controller handles a new pod", func() bool { return b.countOf("p3") == 1 })
			settle()
			if n := a.countOf("p3"); n != 0 {
				t.Errorf("a stopped controller handled p3 %d times, want 0", n)
			}
			if err := stopB(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			// goleak: the last controller stopping stopped the cache.
		})
	}
}

func TestIndependentControllersWatchOnceEach(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := controllertest.NewRetriever(&corev1.Pod{}, controllertest.Options{})
	mustAdd(t, src, pod("p1"))
	a, b := &recorder{}, &recorder{}
	stopA := start(t, controller.Config{Name: "a", Handler: a, Retriever: src, ResyncInterval: -1})
	stopB := start(t, controller.Config{Name: "b", Handler: b, Retriever: src, ResyncInterval: -1})
	eventually(t, "both handle p1", func() bool { return a.countOf("p1") == 1 && b.countOf("p1") == 1 })
	if _, watches := callsOf(src); watches != 2 {
		t.Errorf("got %d watches, want 2: by default each controller has its own cache", watches)
	}
	_, _ = stopA(), stopB()
}

func TestAControllerJoiningASharedCacheLateHandlesWhatIsCachedAndItStartsAgainAfterAllStopped(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := controllertest.NewRetriever(&corev1.Pod{}, controllertest.Options{})
	mustAdd(t, src, pod("p1"))
	shared, err := controller.NewShared(controller.SharedConfig{Retriever: src})
	if err != nil {
		t.Fatal(err)
	}
	first := &recorder{}
	stopFirst := start(t, controller.Config{Name: "first", Handler: first, Retriever: shared, ResyncInterval: -1})
	eventually(t, "first handles p1", func() bool { return first.countOf("p1") == 1 })

	late := &recorder{}
	c, err := controller.New(controller.Config{Name: "late", Handler: late, Retriever: shared, ResyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	eventually(t, "the late controller syncs and handles p1", func() bool { return c.HasSynced() && late.countOf("p1") == 1 })
	if objs, ok := c.List(); !ok || len(objs) != 1 {
		t.Errorf("List: got %d objects, %v; want 1, true", len(objs), ok)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	_, watchesBefore := callsOf(src)

	// Everyone stopped: a new Run starts a new cache.
	again := &recorder{}
	stop := start(t, controller.Config{Name: "again", Handler: again, Retriever: shared, ResyncInterval: -1})
	eventually(t, "a controller started after all stopped handles p1", func() bool { return again.countOf("p1") == 1 })
	if _, watches := callsOf(src); watches != watchesBefore+1 {
		t.Errorf("got %d watches after restarting, want %d", watches, watchesBefore+1)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestASharedCacheAppliesItsTransformAndDropsManagedFields(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := controllertest.NewRetriever(&corev1.Pod{}, controllertest.Options{})
	p := pod("p1")
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	p.Annotations = map[string]string{"big": "xxxxxxxx"}
	mustAdd(t, src, p)
	shared, err := controller.NewShared(controller.SharedConfig{Retriever: src, Transform: func(obj any) (any, error) {
		obj.(*corev1.Pod).Annotations = nil
		return obj, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *corev1.Pod, 1)
	stop := start(t, controller.Config{Name: "t", Retriever: shared, ResyncInterval: -1, Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
		select {
		case got <- obj.(*corev1.Pod):
		default:
		}
		return nil
	})})
	h := <-got
	if len(h.ManagedFields) != 0 || len(h.Annotations) != 0 {
		t.Errorf("got managedFields %v and annotations %v, want both dropped by the shared cache", h.ManagedFields, h.Annotations)
	}
	_ = stop()
}

func TestSharedConfigErrors(t *testing.T) {
	src := controllertest.NewRetriever(&corev1.Pod{}, controllertest.Options{})
	shared, err := controller.NewShared(controller.SharedConfig{Retriever: src})
	if err != nil {
		t.Fatal(err)
	}
	h := controller.HandlerFunc(func(context.Context, runtime.Object) error { return nil })
	tests := []struct {
		name string
		new  func() error
	}{
		{"no retriever", func() error { _, err := controller.NewShared(controller.SharedConfig{}); return err }},
		{"shared over shared", func() error {
			_, err := controller.NewShared(controller.SharedConfig{Retriever: shared})
			return err
		}},
		{"transform on a controller of a shared cache", func() error {
			_, err := controller.New(controller.Config{Name: "x", Handler: h, Retriever: shared, Transform: func(o any) (any, error) { return o, nil }})
			return err
		}},
		{"keep managed fields on a controller of a shared cache", func() error {
			_, err := controller.New(controller.Config{Name: "x", Handler: h, Retriever: shared, KeepManagedFields: true})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.new(); !errors.Is(err, controller.ErrInvalidConfig) {
				t.Errorf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
}
