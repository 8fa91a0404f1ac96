package integration_test

import (
	"context"
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

// services retrieves the Services of one namespace.
func services(client kubernetes.Interface, ns string) controller.Retriever {
	svcs := client.CoreV1().Services(ns)
	return controller.NewRetriever(svcs.List, svcs.Watch)
}

// runInBackground runs r until the returned stop is called; stop returns
// Run's error. done is closed when Run returns by itself.
func runInBackground(t testing.TB, run func(context.Context) error) (stop func() error, done <-chan struct{}) {
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

// The tests run against the API server they are meant for: make test-skew
// sets KOOPER_WANT_SERVER_VERSION to the previous minor's, so a run that
// silently fell back to the current binaries fails here.
func TestTheServerIsTheWantedVersion(t *testing.T) {
	client, _ := setup(t)
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver %s", v.GitVersion)
	if want := os.Getenv("KOOPER_WANT_SERVER_VERSION"); want != "" && v.GitVersion != want {
		t.Errorf("got kube-apiserver %s, want %s", v.GitVersion, want)
	}
}
