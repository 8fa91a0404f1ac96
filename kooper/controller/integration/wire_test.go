package integration_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
)

// request is one HTTP request a client made, as the wire saw it.
type request struct {
	method, path, query, accept, contentType string
}

// wire records the requests made through a rest.Config.
type wire struct {
	mu   sync.Mutex
	reqs []request
}

func (w *wire) config(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			rec := request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, accept: r.Header.Get("Accept")}
			if resp != nil {
				rec.contentType = resp.Header.Get("Content-Type")
			}
			w.mu.Lock()
			w.reqs = append(w.reqs, rec)
			w.mu.Unlock()
			return resp, err
		})
	})
	return cfg
}

// to returns the requests whose path ends with suffix.
func (w *wire) to(suffix string) []request {
	w.mu.Lock()
	defer w.mu.Unlock()
	var got []request
	for _, r := range w.reqs {
		if strings.HasSuffix(r.path, suffix) {
			got = append(got, r)
		}
	}
	return got
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Every way to build a Retriever, and both the shared cache and handling
// during the sync, keep what client-go gets for free from an API server of
// its own minor, and of the minor before (make test-skew): the initial list
// streamed in one watch (no LIST), in protobuf.
// A wrapper hiding the watch-list support or the content type would show
// here as a LIST request or a JSON response.
func TestEveryRetrieverStreamsTheInitialListInProtobuf(t *testing.T) {
	client, ns := setup(t)
	ctx := context.Background()
	const objects = 20
	for i := range objects {
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	typed := func(w *wire) controller.Retriever {
		c := kubernetes.NewForConfigOrDie(w.config(cluster.Config()))
		cms := c.CoreV1().ConfigMaps(ns)
		return controller.NewRetriever(cms.List, cms.Watch)
	}
	tests := []struct {
		name        string
		retriever   func(w *wire) controller.Retriever
		controllers int
		config      controller.Config
	}{
		{"NewRetriever", typed, 1, controller.Config{}},
		{"NewMetadataRetriever", func(w *wire) controller.Retriever {
			md := metadata.NewForConfigOrDie(w.config(cluster.Config()))
			return controller.NewMetadataRetriever(md, corev1.SchemeGroupVersion.WithResource("configmaps"), ns)
		}, 1, controller.Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &wire{}
			r := tt.retriever(w)
			var mu sync.Mutex
			seen := map[string]bool{}
			var stops []func() error
			for i := range tt.controllers {
				cfg := tt.config
				cfg.Name = fmt.Sprintf("wire-%d", i)
				cfg.Retriever = r
				cfg.ResyncInterval = -1
				cfg.Handler = controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
					m := obj.(metav1.Object)
					mu.Lock()
					seen[fmt.Sprintf("%d/%s", i, m.GetName())] = true
					mu.Unlock()
					return nil
				})
				ctrl, err := controller.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				stop, _ := runInBackground(t, ctrl.Run)
				stops = append(stops, stop)
			}
			eventually(t, 30*time.Second, "every controller handles every ConfigMap", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) == objects*tt.controllers
			})
			for _, stop := range stops {
				if err := stop(); err != nil {
					t.Fatal(err)
				}
			}

			reqs := w.to("/namespaces/" + ns + "/configmaps")
			watches := 0
			for _, r := range reqs {
				if !strings.Contains(r.query, "watch=true") {
					t.Errorf("got a LIST request (%s ?%s), want the initial list streamed by a watch", r.method, r.query)
					continue
				}
				watches++
				if !strings.Contains(r.query, "sendInitialEvents=true") {
					t.Errorf("got a watch without sendInitialEvents (?%s)", r.query)
				}
				if !strings.HasPrefix(r.accept, "application/vnd.kubernetes.protobuf") {
					t.Errorf("got Accept %q, want protobuf first", r.accept)
				}
				if !strings.HasPrefix(r.contentType, "application/vnd.kubernetes.protobuf") {
					t.Errorf("got a %q response, want protobuf", r.contentType)
				}
			}
			if watches != 1 {
				t.Errorf("got %d watches for %d controller(s), want 1", watches, tt.controllers)
			}
		})
	}
}
