package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/controllertest"
)

type ctxKey struct{}

// spy is a ListerWatcher that records the contexts and options it gets.
type spy struct {
	src *controllertest.Retriever
	mu  sync.Mutex
	got []string // "verb ctxValue sendInitialEvents allowWatchBookmarks labelSelector"
}

func (s *spy) record(ctx context.Context, verb string, o metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, fmt.Sprintf("%s %v %v %v %q", verb, ctx.Value(ctxKey{}),
		ptr.Deref(o.SendInitialEvents, false), o.AllowWatchBookmarks, o.LabelSelector))
}

func (s *spy) listWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			s.record(ctx, "list", o)
			return s.src.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			s.record(ctx, "watch", o)
			return s.src.Watch(ctx, o)
		},
	}
}

func TestRetrieverFromListerWatcherPassesContextAndOptionsThrough(t *testing.T) {
	s := &spy{src: controllertest.NewRetriever(&corev1.Pod{}, controllertest.Options{})}
	r := controller.RetrieverFromListerWatcher(s.listWatch())
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	opts := metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, LabelSelector: "app=web"}
	if _, err := r.List(ctx, opts); err != nil {
		t.Fatal(err)
	}
	w, err := r.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	want := []string{`list caller true true "app=web"`, `watch caller true true "app=web"`}
	if fmt.Sprint(s.got) != fmt.Sprint(want) {
		t.Errorf("got calls %v, want %v", s.got, want)
	}
}

func TestTheControllersContextAndWatchListOptionsReachTheRetriever(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := controllertest.NewRetriever(&corev1.Pod{}, controllertest.Options{})
	mustAdd(t, src, pod("a"))
	s := &spy{src: src}
	handled := make(chan struct{}, 1)
	c, err := controller.New(controller.Config{Name: "test", Retriever: controller.RetrieverFromListerWatcher(s.listWatch()),
		Handler: controller.HandlerFunc(func(context.Context, runtime.Object) error {
			handled <- struct{}{}
			return nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "run"))
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	<-handled
	cancel()
	if err := <-done; err != nil {
		t.Errorf("got Run error %v, want nil", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// One streamed watch and no LIST: client-go 0.36's watch-list.
	if want := `watch run true true ""`; len(s.got) == 0 || s.got[0] != want {
		t.Errorf("got calls %v, want the first to be %s", s.got, want)
	}
}

func TestAControllerOverAFakeClientsetSyncs(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "p2"}},
	)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Pods("").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Pods("").Watch(ctx, o)
		},
	}, client)
	r := controller.RetrieverFromListerWatcher(lw)
	if !watchlist.DoesClientNotSupportWatchListSemantics(r) {
		t.Fatal("got a Retriever hiding the fake clientset's watch-list marker, want it forwarded")
	}
	h := &recorder{}
	stop := start(t, controller.Config{Name: "test", Handler: controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
		return h.Handle(ctx, obj)
	}), Retriever: r, DisableResync: true})
	eventually(t, "both pods are handled (an informer hiding the marker hangs here)", func() bool {
		return h.countOf("p1") == 1 && h.countOf("p2") == 1
	})
	_ = stop()
}

func TestNewRetrieverOverAFakeClientsetSyncs(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1"}})
	pods := client.CoreV1().Pods("")
	r := controller.NewRetriever(client, pods.List, pods.Watch)
	if !watchlist.DoesClientNotSupportWatchListSemantics(r) {
		t.Fatal("got a Retriever hiding the fake clientset's watch-list marker, want it forwarded")
	}
	h := &recorder{}
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: r, DisableResync: true})
	eventually(t, "the pod is handled", func() bool { return h.countOf("p1") == 1 })
	if _, err := pods.List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = stop()
}
