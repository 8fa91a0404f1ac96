package prometheus_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientmetrics "k8s.io/client-go/tools/metrics"

	kooperprom "github.com/kooperkit/kooper/kooper/metrics/prometheus"
)

// restRequest makes one client-go request, answered 404, and returns the
// host it went to.
func restRequest(t *testing.T) string {
	t.Helper()
	get, host := restServer(t)
	get()
	return host
}

// restServer starts a server that answers 404 until the test ends, and
// returns a function making one client-go request to it and its host.
func restServer(t *testing.T) (get func(), host string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	get = func() { _, _ = client.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{}) }
	return get, srv.Listener.Addr().String()
}

// freshProcessEnv names the test that inFreshProcess runs in a process of
// its own.
const freshProcessEnv = "KOOPER_TEST_FRESH_PROCESS"

// inFreshProcess reports whether this is a process of the test's own. If
// not, it runs the test again in one and fails t if that fails: client-go's
// hooks are set once per process, and the tests of one package share it.
func inFreshProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(freshProcessEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v") //nolint:gosec // the test binary itself
	cmd.Env = append(os.Environ(), freshProcessEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Errorf("in a process of its own: got %v, want it to pass:\n%s", err, out)
	}
	return false
}

// In a process where nothing set client-go's hooks, importing the package
// takes nothing over: requests are counted only once
// RegisterRESTClientMetrics set the hooks.
func TestRESTClientMetricsCountOnlyOnceRegistered(t *testing.T) {
	if !inFreshProcess(t) {
		return
	}
	get, host := restServer(t)
	get()
	reg := prom.NewRegistry()
	if err := kooperprom.RegisterRESTClientMetrics(reg); err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if got := requests(t, reg, host); got != 0 {
		t.Errorf("got %v requests counted before RegisterRESTClientMetrics, want 0", got)
	}
	get()
	if got := requests(t, reg, host); got != 1 {
		t.Errorf("got %v requests counted after RegisterRESTClientMetrics, want 1", got)
	}
}

// countingResult is another package's client-go hook.
type countingResult struct{ n atomic.Int64 }

func (c *countingResult) Increment(context.Context, string, string, string) { c.n.Add(1) }

// When another package set client-go's hooks first, they stay its own:
// RegisterRESTClientMetrics registers nothing and says why, instead of
// series that would stay at zero.
func TestRESTClientMetricsLeaveHooksSetByAnotherPackage(t *testing.T) {
	if !inFreshProcess(t) {
		return
	}
	theirs := &countingResult{}
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestResult: theirs})
	reg := prom.NewRegistry()
	if err := kooperprom.RegisterRESTClientMetrics(reg); err == nil {
		t.Error("got no error, want one saying another package set client-go's hooks")
	}
	get, _ := restServer(t)
	get()
	if got := theirs.n.Load(); got != 1 {
		t.Errorf("got %d requests counted by the other package's hook, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("got %d series registered (%v), want none", n, err)
	}
}

// A real client-go request is counted on every registry the metrics were
// registered on.
func TestRESTClientMetricsCountClientGoRequests(t *testing.T) {
	regA, regB := prom.NewRegistry(), prom.NewRegistry()
	for _, reg := range []*prom.Registry{regA, regB} {
		if err := kooperprom.RegisterRESTClientMetrics(reg); err != nil {
			t.Fatal(err)
		}
	}
	if err := kooperprom.RegisterRESTClientMetrics(regA); err == nil {
		t.Error("got no error registering twice on one registry")
	}
	host := restRequest(t)
	for name, reg := range map[string]*prom.Registry{"A": regA, "B": regB} {
		if got := requests(t, reg, host); got != 1 {
			t.Errorf("registry %s: got %v requests to %s with code 404, want 1", name, got, host)
		}
		if n, err := testutil.GatherAndCount(reg, "kooper_rest_client_request_duration_seconds"); err != nil || n < 1 {
			t.Errorf("registry %s: got %d latency series (%v), want some", name, n, err)
		}
	}
}

// requests returns the GET requests to host answered 404. The collectors are
// process-wide: other tests' requests went to other hosts.
func requests(t *testing.T, reg *prom.Registry, host string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "kooper_rest_client_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["code"] == "404" && labels["method"] == "GET" && labels["host"] == host {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
