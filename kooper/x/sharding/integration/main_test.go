package integration_test

import (
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/controller"
)

// cluster is the package's control plane; envtest turns the
// ShardedListAndWatch feature gate on.
var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(envtest.RunTests(m, envtest.Options{Progress: os.Stderr}, &cluster))
}

// setup returns a client and a fresh namespace.
func setup(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(cluster.Config())
	ns, err := client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "it-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return client, ns.Name
}

// configMaps retrieves the ConfigMaps of one namespace.
func configMaps(client kubernetes.Interface, ns string) controller.Retriever {
	cms := client.CoreV1().ConfigMaps(ns)
	return controller.NewRetriever(cms.List, cms.Watch)
}

// runInBackground runs r until the returned stop is called; stop returns
// Run's error. done is closed when Run returns by itself.
func runInBackground(t *testing.T, run func(context.Context) error) (stop func() error, done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	var err error
	go func() {
		err = run(ctx)
		close(ch)
	}()
	var once sync.Once
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				t.Error("Run did not return within 30s of its context being cancelled")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop, ch
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
