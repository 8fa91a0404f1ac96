package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// Pins: client-go behaviour that kooper/controller relies on and that
// client-go does not promise in its API. Each TestPin... runs client-go's
// real types and fails, naming what changed and which kooper code depends
// on it, on the client-go version that changes the behaviour; each
// TestThePinCatches... shows the same check failing against a fake of the
// change, so a pin cannot rot into a test that always passes. docs/client-go.md
// lists every assumption and its pin. After `make bump-kubernetes`, a
// failure here is a decision to make, not a flake.

// streamingLW is a ListerWatcher that streams an initial list of n config
// maps (watch-list) and records what it sends and which calls it gets.
type streamingLW struct {
	n int

	mu    sync.Mutex
	calls []string // "list", "watch", or "stream" (sendInitialEvents)
}

func (s *streamingLW) record(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

func (s *streamingLW) firstCall() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return ""
	}
	return s.calls[0]
}

func (s *streamingLW) objects() []runtime.Object {
	var objs []runtime.Object
	for i := range s.n {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("cm%d", i), ResourceVersion: fmt.Sprint(i + 1),
		}})
	}
	return objs
}

func (s *streamingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s *streamingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

func (s *streamingLW) ListWithContext(_ context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	s.record("list")
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(s.n)}}
	for _, o := range s.objects() {
		list.Items = append(list.Items, *o.(*corev1.ConfigMap))
	}
	return list, nil
}

func (s *streamingLW) WatchWithContext(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(s.n+1, false)
	if !ptr.Deref(opts.SendInitialEvents, false) {
		s.record("watch")
		return w, nil
	}
	s.record("stream")
	for _, o := range s.objects() {
		w.Add(o)
	}
	w.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: fmt.Sprint(s.n),
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}})
	return w, nil
}

// runInformer runs a real shared informer over lw until it has synced,
// then stops it.
func runInformer(t *testing.T, lw cache.ListerWatcher) {
	t.Helper()
	informer := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	synced := cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)
	cancel()
	<-done
	if !synced {
		t.Fatal("the informer did not sync within 10s")
	}
}

// listOf is lw's ListWithContext with the typed result NewRetriever wants.
func listOf(lw *streamingLW) func(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
		obj, err := lw.ListWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.ConfigMapList), nil
	}
}

// checkReflectorLists reports whether a real informer over lw lists instead
// of streaming its initial list.
func checkReflectorLists(t *testing.T, lw *streamingLW, informerLW cache.ListerWatcher) error {
	runInformer(t, informerLW)
	if got := lw.firstCall(); got != "list" {
		return fmt.Errorf("got first call %q from a reflector over a client marked WatchListUnsupported, want \"list\": "+
			"client-go no longer reads IsWatchListSemanticsUnSupported (watchlist.DoesClientNotSupportWatchListSemantics); "+
			"kooper/controller/retriever.go (WatchListUnsupported, WithoutWatchList, NewMetadataRetriever) and every "+
			"Retriever over a fake clientset depend on it: a cache over a fake now waits forever", got)
	}
	return nil
}

// marked is a ListerWatcher that says it cannot stream, the way kooper's
// WithoutWatchList does.
type marked struct{ *streamingLW }

func (marked) IsWatchListSemanticsUnSupported() bool { return true }

func TestPinTheReflectorListsForAClientWithoutWatchList(t *testing.T) {
	defer goleak.VerifyNone(t)
	lw := &streamingLW{n: 2}
	if err := checkReflectorLists(t, lw, marked{lw}); err != nil {
		t.Fatal(err)
	}
	// And through kooper's own wrappers, as a controller builds them.
	lw2 := &streamingLW{n: 2}
	r := WithWatchIdleTimeout(WithoutWatchList(NewRetriever(listOf(lw2), lw2.WatchWithContext)), time.Minute)
	if err := checkReflectorLists(t, lw2, listerWatcher{ctx: context.Background(), r: r}); err != nil {
		t.Fatal(err)
	}
}

// renamed says it cannot stream under another method name: what kooper's
// marker becomes if client-go renames the method it looks for.
type renamed struct{ *streamingLW }

func (renamed) IsWatchListUnsupported() bool { return true }

func TestThePinCatchesAReflectorThatNoLongerReadsTheMarker(t *testing.T) {
	lw := &streamingLW{n: 2}
	err := checkReflectorLists(t, lw, renamed{lw})
	if err == nil {
		t.Fatal("got no error from a reflector that streamed, want the pin to fail")
	}
	t.Logf("the pin fails with: %v", err)
}

// decodeCase is an answer the API server might give, decoded by client-go's
// real clients, and whether it is a decode error.
type decodeCase struct {
	name   string
	client string // "typed" or "metadata"
	verb   string // "list" or "watch"
	body   string // the list, or the object of one watch event
	decode bool
}

var decodeCases = []decodeCase{
	{"a field of the wrong type", "typed", "list", `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"a"},"spec":{"containers":"oops"}}]}`, true},
	{"truncated JSON", "typed", "list", `{"kind":"PodList","apiVersion":"v1","items":[`, true},
	{"not JSON", "typed", "list", `not json`, true},
	{"a quantity that does not parse", "typed", "list", `{"kind":"PodList","apiVersion":"v1","items":[{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1e1.5"}}}]}}]}`, true},
	{"a kind the scheme does not know", "typed", "list", `{"kind":"Gadget","apiVersion":"v1","items":[]}`, true},
	{"a watch event of the wrong type", "typed", "watch", `{"kind":"Pod","apiVersion":"v1","spec":{"containers":"oops"}}`, true},
	{"a watch event that is not JSON", "typed", "watch", `]`, true},
	{"metadata of the wrong type", "metadata", "list", `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","items":[{"metadata":{"name":5}}]}`, true},
	{"metadata of an unknown kind that does not decode", "metadata", "list", `{"kind":"Pod","apiVersion":"v1","items":[{"metadata":{"name":5}}]}`, true},
	{"metadata, truncated", "metadata", "list", `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","items":[`, true},
	{"an error status", "typed", "list", `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"reason":"InternalError","message":"etcd"}`, false},
	{"an error status as a watch event", "typed", "watch", `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"reason":"InternalError","message":"etcd"}`, false},
}

// retrieveError returns the error client-go's real typed or metadata
// client gives for c's answer: what the reflector passes on (wrapped in
// its "failed to list <type>: ").
func retrieveError(t *testing.T, c decodeCase) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			typ := "ADDED"
			if strings.Contains(c.body, `"kind":"Status"`) {
				typ = "ERROR"
			}
			fmt.Fprintf(w, `{"type":%q,"object":%s}`+"\n", typ, c.body)
			return
		}
		fmt.Fprint(w, c.body)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	ctx := context.Background()
	var (
		w   watch.Interface
		err error
	)
	switch c.client + " " + c.verb {
	case "typed list":
		_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return fmt.Errorf("failed to list *v1.Pod: %w", err)
	case "metadata list":
		_, err = metadata.NewForConfigOrDie(cfg).Resource(corev1.SchemeGroupVersion.WithResource("pods")).List(ctx, metav1.ListOptions{})
		return fmt.Errorf("failed to list pods (metadata): %w", err)
	case "typed watch":
		w, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
	default:
		t.Fatalf("no %s %s", c.client, c.verb)
	}
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	if ev.Type != watch.Error {
		t.Fatalf("%s: got a %s event, want an error", c.name, ev.Type)
	}
	return apierrors.FromObject(ev.Object) // as the reflector turns it into an error
}

// checkDecodeError reports whether isDecodeError classifies err as c says.
func checkDecodeError(c decodeCase, err error) error {
	if err == nil {
		return fmt.Errorf("%s: got no error, want one", c.name)
	}
	if got := isDecodeError(err); got != c.decode {
		return fmt.Errorf("%s: isDecodeError(%q) = %v, want %v: client-go or apimachinery reports this %s failure "+
			"differently now (kooper/controller/retrieveerror.go, isDecodeError, tells decode errors by their types, "+
			"the ClientWatchDecoding cause and the messages \"json: \", \"couldn't get version/kind; json parse error\" "+
			"and \"unable to decode\"): update it, or SyncError, the retrieve error metric's kind and the log level misreport it",
			c.name, err, got, c.decode, c.client+" "+c.verb)
	}
	return nil
}

func TestPinDecodeErrorsOfClientGosClientsAreToldApart(t *testing.T) {
	for _, c := range decodeCases {
		t.Run(c.name, func(t *testing.T) {
			if err := checkDecodeError(c, retrieveError(t, c)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The same failures, worded as another client-go might word them.
func TestThePinCatchesDecodeErrorsWithAnotherMessage(t *testing.T) {
	reworded := []error{
		errors.New("failed to list *v1.Pod: cannot get version/kind; json parse error: unexpected end of JSON input"),
		errors.New("failed to list *v1.Pod: cannot unmarshal string into Go struct field PodSpec.items.spec.containers of type []v1.Container"),
		errors.New("failed to list pods (metadata): could not decode returned object as PartialObjectMetadataList: invalid character"),
		apierrors.FromObject(apierrors.NewClientErrorReporter(500, "GET", "WatchDecoding").AsObject(errors.New("unable to decode an event from the watch stream"))),
	}
	for _, err := range reworded {
		got := checkDecodeError(decodeCase{name: "reworded", client: "typed", verb: "list", decode: true}, err)
		if got == nil {
			t.Errorf("got no error for %q, want the pin to fail", err)
			continue
		}
		t.Logf("the pin fails with: %v", got)
	}
}
