package prometheus_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	kooperprom "github.com/kooperkit/kooper/kooper/metrics/prometheus"
)

// restRequest makes one client-go request, answered 404, and returns the
// host it went to.
func restRequest(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
	}))
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	_, _ = client.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
	return srv.Listener.Addr().String()
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
