package health_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/kooperkit/kooper/kooper/health"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestTheServerAnswersEachEndpoint(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "things_total", Help: "Things."}))
	var ready atomic.Bool
	// region: start
	srv, err := health.Start(health.Config{
		Addr:     "127.0.0.1:0",
		Gatherer: reg,
		Ready: func() (string, error) {
			if !ready.Load() {
				return "", errors.New("caches not synced yet")
			}
			return "leading", nil
		},
	})
	// endregion: start
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.Addr()
	tests := []struct {
		path     string
		ready    bool
		wantCode int
		wantBody string
	}{
		{"/healthz", false, http.StatusOK, "ok"},
		{"/readyz", false, http.StatusServiceUnavailable, "caches not synced yet"},
		{"/readyz", true, http.StatusOK, "leading"},
		{"/metrics", true, http.StatusOK, "things_total 0"},
		{"/nothing", true, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		ready.Store(tt.ready)
		code, body := get(t, base+tt.path)
		if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
			t.Errorf("GET %s (ready %v): got %d %q, want %d with %q", tt.path, tt.ready, code, body, tt.wantCode, tt.wantBody)
		}
	}
	srv.Stop()
}

func TestProfilingIsServedOnlyWhenEnabled(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, enabled := range []bool{false, true} {
		srv, err := health.Start(health.Config{Addr: "127.0.0.1:0", EnableProfiling: enabled})
		if err != nil {
			t.Fatal(err)
		}
		code, _ := get(t, "http://"+srv.Addr()+"/debug/pprof/cmdline")
		srv.Stop()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[enabled]; code != want {
			t.Errorf("profiling %v: got %d, want %d", enabled, code, want)
		}
	}
}
