package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/fakeapi"
)

type ctxKey struct{}

// spy is a ListerWatcher that records the contexts and options it gets.
type spy struct {
	src *fakeapi.Retriever
	mu  sync.Mutex
	got []string // "verb ctxValue sendInitialEvents allowWatchBookmarks labelSelector"
}

func (s *spy) record(ctx context.Context, verb string, o metav1.ListOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, fmt.Sprintf("%s %v %v %v %q", verb, ctx.Value(ctxKey{}),
		ptr.Deref(o.SendInitialEvents, false), o.AllowWatchBookmarks, o.LabelSelector))
}

func (s *spy) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	s.record(ctx, "list", o)
	return s.src.List(ctx, o)
}

func (s *spy) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	s.record(ctx, "watch", o)
	return s.src.Watch(ctx, o)
}

func TestDecoratorsPassContextAndOptionsThrough(t *testing.T) {
	s := &spy{src: fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})}
	r := controller.WithWatchIdleTimeout(controller.WithoutWatchList(s), time.Minute)
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
	src := fakeapi.NewRetriever(&corev1.Pod{}, fakeapi.Options{})
	mustAdd(t, src, pod("a"))
	s := &spy{src: src}
	handled := make(chan struct{}, 1)
	c, err := controller.New(controller.Config{Name: "test", Retriever: s,
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

func TestNewRetrieverOverAFakeClientsetSyncsWithoutWatchList(t *testing.T) {
	defer goleak.VerifyNone(t)
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1"}})
	pods := client.CoreV1().Pods("")
	r := controller.WithoutWatchList(controller.NewRetriever(pods.List, pods.Watch))
	if !watchlist.DoesClientNotSupportWatchListSemantics(r) {
		t.Fatal("got a Retriever without the watch-list marker client-go reads, want it marked")
	}
	h := &recorder{}
	stop := start(t, controller.Config{Name: "test", Handler: h, Retriever: r, ResyncInterval: -1})
	eventually(t, "the pod is handled", func() bool { return h.countOf("p1") == 1 })
	if _, err := pods.List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = stop()
}

// A fake clientset says it cannot stream an initial list, and a
// Retriever over it can say so too: the need is declared, not guessed.
func TestFakeClientsetsAreWatchListUnsupported(t *testing.T) {
	pods := fake.NewClientset().CoreV1().Pods("")
	clients := map[string]any{
		"kubernetes":       fake.NewClientset(),
		"metadata":         metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()),
		"WithoutWatchList": controller.WithoutWatchList(controller.NewRetriever(pods.List, pods.Watch)),
	}
	for name, c := range clients {
		if !watchlist.DoesClientNotSupportWatchListSemantics(c) {
			t.Errorf("%s: got no IsWatchListSemanticsUnSupported marker returning true, want one", name)
		}
	}
	if watchlist.DoesClientNotSupportWatchListSemantics(controller.NewRetriever(pods.List, pods.Watch)) {
		t.Error("got NewRetriever marked as unable to stream, want it streaming unless wrapped")
	}
}

// Over fakes, which cannot stream the initial list, every wrapper keeps
// the "watch-list unsupported" marker visible, so the cache lists then
// watches instead of waiting forever.
func TestEveryRetrieverOverAFakeClientSyncs(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	podMeta := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1"},
	}
	typed := func() controller.Retriever {
		client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1"}})
		pods := client.CoreV1().Pods("")
		return controller.WithoutWatchList(controller.NewRetriever(pods.List, pods.Watch))
	}
	tests := []struct {
		name      string
		retriever func(t *testing.T) controller.Retriever
		cfg       controller.Config
	}{
		{"NewMetadataRetriever", func(*testing.T) controller.Retriever {
			md := metadatafake.NewSimpleMetadataClient(scheme, podMeta)
			return controller.NewMetadataRetriever(md, corev1.SchemeGroupVersion.WithResource("pods"), "")
		}, controller.Config{}},
		{"WithWatchIdleTimeout", func(*testing.T) controller.Retriever {
			return controller.WithWatchIdleTimeout(typed(), time.Minute)
		}, controller.Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			r := tt.retriever(t)
			if !watchlist.DoesClientNotSupportWatchListSemantics(r) {
				t.Fatal("got a Retriever hiding the fake's watch-list marker, want it forwarded")
			}
			got := make(chan string, 10)
			cfg := tt.cfg
			cfg.Name, cfg.Retriever, cfg.ResyncInterval = "fake", r, -1
			cfg.Handler = controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
				got <- obj.(metav1.Object).GetName()
				return nil
			})
			stop := start(t, cfg)
			select {
			case name := <-got:
				if name != "p1" {
					t.Errorf("handled %q, want p1", name)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("p1 not handled within 10s (an informer hiding the marker hangs here)")
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
