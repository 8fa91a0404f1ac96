package e2etest_test

import (
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/operators/internal/e2etest"
)

func TestMetric(t *testing.T) {
	reg := prom.NewRegistry()
	c := prom.NewCounterVec(prom.CounterOpts{Name: "c_total", Help: "c"}, []string{"kind", "ok"})
	h := prom.NewHistogramVec(prom.HistogramOpts{Name: "h_seconds", Help: "h"}, []string{"kind"})
	reg.MustRegister(c, h)
	c.WithLabelValues("a", "true").Add(2)
	c.WithLabelValues("a", "false").Add(3)
	c.WithLabelValues("b", "true").Add(5)
	h.WithLabelValues("a").Observe(1)
	h.WithLabelValues("b").Observe(1)
	h.WithLabelValues("b").Observe(2)
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"c_total", nil, 10},
		{"c_total", map[string]string{"kind": "a"}, 5},
		{"c_total", map[string]string{"kind": "a", "ok": "true"}, 2},
		{"c_total", map[string]string{"kind": "z"}, 0},
		{"h_seconds", nil, 3},
		{"missing_total", nil, 0},
	}
	for _, tt := range tests {
		if got := e2etest.Metric(t, reg, tt.name, tt.labels); got != tt.want {
			t.Errorf("Metric(%s, %v) = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}

func TestAsServiceAccount(t *testing.T) {
	cfg := e2etest.AsServiceAccount(&rest.Config{Host: "https://127.0.0.1"}, "kooper-op", "op", 50, 100)
	if cfg.Impersonate.UserName != "system:serviceaccount:kooper-op:op" || len(cfg.Impersonate.Groups) != 3 || cfg.QPS != 50 || cfg.Burst != 100 {
		t.Errorf("got %+v", cfg)
	}
}

func TestRunStopsWithTheTest(t *testing.T) {
	stopped := make(chan struct{})
	t.Run("inner", func(t *testing.T) {
		e2etest.Run(t, func(ctx context.Context) error {
			<-ctx.Done()
			close(stopped)
			return nil
		})
	})
	select {
	case <-stopped:
	default:
		t.Error("run was not stopped when its test ended")
	}
}

func TestFreeAddrNeverReturnsAnAddressTwice(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		addr := e2etest.FreeAddr(t)
		if seen[addr] {
			t.Fatalf("got %s twice", addr)
		}
		seen[addr] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("got %s, which is not free: %v", addr, err)
		}
		_ = l.Close()
	}
}

// serve serves reg's metrics as an operator's /metrics does, until the
// test ends, and returns their URL.
func serve(t *testing.T, reg *prom.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

func TestScrapeReadsWhatMetricReads(t *testing.T) {
	reg := prom.NewRegistry()
	c := prom.NewCounterVec(prom.CounterOpts{Name: "c_total", Help: "c"}, []string{"kind"})
	h := prom.NewHistogramVec(prom.HistogramOpts{Name: "h_seconds", Help: "h"}, []string{"kind"})
	reg.MustRegister(c, h)
	c.WithLabelValues("a").Add(2)
	c.WithLabelValues("b").Add(5)
	h.WithLabelValues("a").Observe(1)
	h.WithLabelValues("b").Observe(1)
	h.WithLabelValues("b").Observe(2)
	scraped := e2etest.Scrape(t, serve(t, reg))
	for _, q := range []struct {
		name   string
		labels map[string]string
	}{{"c_total", nil}, {"c_total", map[string]string{"kind": "b"}}, {"h_seconds", nil}, {"h_seconds", map[string]string{"kind": "b"}}, {"missing", nil}} {
		if got, want := e2etest.Metric(t, scraped, q.name, q.labels), e2etest.Metric(t, reg, q.name, q.labels); got != want {
			t.Errorf("Metric(%s, %v): got %v scraped, want %v as gathered", q.name, q.labels, got, want)
		}
	}
}

func TestCheckCacheWaits(t *testing.T) {
	newWaits := func() (*prom.Registry, *prom.HistogramVec) {
		reg := prom.NewRegistry()
		h := prom.NewHistogramVec(prom.HistogramOpts{Name: "kooper_controller_cache_wait_seconds", Help: "h"}, []string{"controller", "caught_up"})
		reg.MustRegister(h)
		for _, name := range []string{"op", "other"} {
			h.WithLabelValues(name, "true")
			h.WithLabelValues(name, "false")
		}
		return reg, h
	}
	t.Run("a wait of the controller passes", func(t *testing.T) {
		reg, h := newWaits()
		h.WithLabelValues("op", "false").Observe(10)
		r := &errorRecorder{TB: t}
		e2etest.CheckCacheWaits(r, serve(t, reg), "op", 0)
		if len(r.errors) > 0 {
			t.Errorf("got errors %q, want none", r.errors)
		}
	})
	t.Run("a wait that comes while it polls passes", func(t *testing.T) {
		reg, h := newWaits()
		time.AfterFunc(300*time.Millisecond, func() { h.WithLabelValues("op", "true").Observe(0.01) })
		r := &errorRecorder{TB: t}
		e2etest.CheckCacheWaits(r, serve(t, reg), "op", 10*time.Second)
		if len(r.errors) > 0 {
			t.Errorf("got errors %q, want none", r.errors)
		}
	})
	t.Run("with no timeout, no wait passes: the series are there", func(t *testing.T) {
		reg, _ := newWaits()
		r := &errorRecorder{TB: t}
		e2etest.CheckCacheWaits(r, serve(t, reg), "op", 0)
		if len(r.errors) > 0 {
			t.Errorf("got errors %q, want none", r.errors)
		}
	})
	t.Run("no wait of the controller fails, with the counts", func(t *testing.T) {
		reg, h := newWaits()
		h.WithLabelValues("other", "true").Observe(0.01)
		r := &errorRecorder{TB: t}
		e2etest.CheckCacheWaits(r, serve(t, reg), "op", 200*time.Millisecond)
		if len(r.errors) != 1 || !strings.Contains(r.errors[0], `caught_up="true" 0, caught_up="false" 0`) {
			t.Errorf("got errors %q, want one with both counts at zero", r.errors)
		}
	})
}

func TestSlowWatches(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("{}\n"))
	}))
	t.Cleanup(srv.Close)
	const delay = 2 * time.Second
	client, err := rest.HTTPClientFor(e2etest.SlowWatches(&rest.Config{Host: srv.URL}, "tenants", delay))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		slow bool
	}{
		{"/apis/tenancy.kooperkit.io/v1alpha1/tenants?watch=true", true},
		{"/apis/tenancy.kooperkit.io/v1alpha1/namespaces/a/tenants?watch=1", true},
		{"/apis/tenancy.kooperkit.io/v1alpha1/tenants", false},                        // a list
		{"/apis/tenancy.kooperkit.io/v1alpha1/tenants?watch=false", false},            // a list
		{"/api/v1/namespaces?watch=true", false},                                      // another kind
		{"/apis/tenancy.kooperkit.io/v1alpha1/tenants/acme/status?watch=true", false}, // not the kind's collection
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			resp, err := client.Get(srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(body) != "{}\n" {
				t.Fatalf("got %q, %v, want the body as served", body, err)
			}
			if took := time.Since(start); (took >= delay) != tt.slow {
				t.Errorf("read in %s, want slowed by %s: %v", took, delay, tt.slow)
			}
		})
	}
}

func TestCountRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(srv.Close)
	cfg, requests := e2etest.CountRequests(&rest.Config{Host: srv.URL})
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/namespaces/a/pods?labelSelector=app%3Dv"},
		{http.MethodGet, "/api/v1/pods?limit=500"},
		{http.MethodGet, "/api/v1/namespaces/a/pods?watch=true"},
		{http.MethodGet, "/api/v1/namespaces/a/pods/p"},
		{http.MethodPost, "/api/v1/namespaces/a/pods/p/eviction"},
		{http.MethodPost, "/api/v1/namespaces/a/pods/q/eviction"},
		{http.MethodPut, "/apis/chaos.kooperkit.io/v1alpha1/podterminators/t/status"},
		{http.MethodPut, "/api/v1/namespaces/a/finalize"},
		{http.MethodPatch, "/apis/coordination.k8s.io/v1/namespaces/k/leases/l"},
		{http.MethodGet, "/version"},
	} {
		req, err := http.NewRequest(r.method, srv.URL+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := map[string]int{
		"LIST pods": 2, "WATCH pods": 1, "GET pods": 1, "POST pods/eviction": 2,
		"PUT podterminators/status": 1, "PUT namespaces/finalize": 1, "PATCH leases": 1, "GET /version": 1,
	}
	if got := requests.Counts(); !maps.Equal(got, want) {
		t.Errorf("got counts %v, want %v", got, want)
	}
}
