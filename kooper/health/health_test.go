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

type synced bool

func (s synced) HasSynced() bool { return bool(s) }

// role is a Leadership that stays in one role.
type role struct{ leading, standby, warm bool }

func (r role) Leading() bool     { return r.leading }
func (r role) Standby() bool     { return r.standby }
func (r role) WarmStandby() bool { return r.warm }

var (
	leader      = role{leading: true, warm: true}
	standby     = role{standby: true}
	warmStandby = role{standby: true, warm: true}
	// disabled neither leads nor stands by: a runner with leader election
	// disabled.
	disabled = role{}
)

func TestReadiness(t *testing.T) {
	// region: readiness
	tests := []struct {
		name        string
		leadership  health.Leadership // nil: no leader election
		controllers []health.Synced
		wantReady   bool
		wantStatus  string
	}{
		{"synced without leader election", nil, []health.Synced{synced(true), synced(true)}, true, "synced"},
		{"synced with leader election disabled", disabled, []health.Synced{synced(true)}, true, "synced"},
		{"one controller not synced", disabled, []health.Synced{synced(true), synced(false)}, false, ""},
		{"a cold standby is ready", standby, []health.Synced{synced(false)}, true, "standby"},
		{"a warm standby before sync is not", warmStandby, []health.Synced{synced(false)}, false, ""},
		{"a warm standby after sync is", warmStandby, []health.Synced{synced(true)}, true, "standby"},
		{"a leader before sync is not", leader, []health.Synced{synced(false)}, false, ""},
		{"a leader after sync is", leader, []health.Synced{synced(true)}, true, "leading"},
	}
	// endregion: readiness
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, err := health.Readiness(tt.leadership, tt.controllers...)()
			if (err == nil) != tt.wantReady || status != tt.wantStatus {
				t.Errorf("got %q, %v, want ready %v with %q", status, err, tt.wantReady, tt.wantStatus)
			}
		})
	}
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

// failing has not synced, and knows why.
type failing struct{ err error }

func (failing) HasSynced() bool    { return false }
func (f failing) SyncError() error { return f.err }

func TestReadinessSaysWhyControllersHaveNotSynced(t *testing.T) {
	decode := errors.New("tenants: could not decode the retrieved objects of *v1alpha1.Tenant: quantities must match")
	tests := []struct {
		name        string
		leadership  health.Leadership
		controllers []health.Synced
		want        []string
	}{
		{"without leader election", nil, []health.Synced{synced(true), failing{decode}},
			[]string{"caches not synced yet: ", decode.Error()}},
		{"with leader election disabled", disabled, []health.Synced{failing{decode}},
			[]string{"caches not synced yet: ", decode.Error()}},
		{"a leader", leader, []health.Synced{failing{decode}, failing{errors.New("pods: could not list or watch *v1.Pod: forbidden")}},
			[]string{"leading, caches not synced yet: ", decode.Error(), "pods: could not list or watch *v1.Pod: forbidden"}},
		{"no reason known yet", leader, []health.Synced{failing{}},
			[]string{"leading, caches not synced yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := health.Readiness(tt.leadership, tt.controllers...)()
			if err == nil {
				t.Fatal("got ready, want not ready")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			if wantLeading := tt.leadership == leader; strings.HasPrefix(err.Error(), "leading") != wantLeading {
				t.Errorf("got %q, want it to start with leading only for a leader", err)
			}
		})
	}
}
