package leaderelection_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
)

// synced is a runnable that reports whether its cache has synced, and can
// run warm, as a *controller.Controller does.
type synced bool

func (synced) Run(ctx context.Context) error { <-ctx.Done(); return nil }

func (synced) RunWarm(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return nil }

func (s synced) HasSynced() bool { return bool(s) }

// failing has not synced, and knows why.
type failing struct{ err error }

func (failing) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (failing) HasSynced() bool               { return false }
func (f failing) SyncError() error            { return f.err }

// runners builds Runners of each role that never run: SetLeading gives
// the leader its role.
type runners struct{ t *testing.T }

func (r runners) build(cfg leaderelection.Config, leading bool, rs []leaderelection.Runnable) *leaderelection.Runner {
	r.t.Helper()
	runner := newRunner(r.t, cfg, rs...)
	leaderelection.SetLeading(runner, leading)
	return runner
}

// disabled runs without leader election.
func (r runners) disabled(rs ...leaderelection.Runnable) *leaderelection.Runner {
	return r.build(leaderelection.Config{Disabled: true}, false, rs)
}

// standby is a cold standby: Config.DisableWarmStandby.
func (r runners) standby(rs ...leaderelection.Runnable) *leaderelection.Runner {
	cfg := testConfig(newClient(), "standby")
	cfg.DisableWarmStandby = true
	return r.build(cfg, false, rs)
}

// warmStandby is a standby whose runnables fill their caches.
func (r runners) warmStandby(rs ...leaderelection.Runnable) *leaderelection.Runner {
	return r.build(testConfig(newClient(), "warm"), false, rs)
}

// leader holds the Lease.
func (r runners) leader(rs ...leaderelection.Runnable) *leaderelection.Runner {
	return r.build(testConfig(newClient(), "leader"), true, rs)
}

func TestReady(t *testing.T) {
	r := runners{t}
	// region: readiness
	tests := []struct {
		name       string
		runner     *leaderelection.Runner
		wantReady  bool
		wantStatus string
	}{
		{"synced with leader election disabled", r.disabled(synced(true), synced(true)), true, "synced"},
		{"one controller not synced", r.disabled(synced(true), synced(false)), false, ""},
		{"a cold standby is ready", r.standby(synced(false)), true, "standby"},
		{"a warm standby before sync is not", r.warmStandby(synced(false)), false, ""},
		{"a warm standby after sync is", r.warmStandby(synced(true)), true, "standby"},
		{"a leader before sync is not", r.leader(synced(false)), false, ""},
		{"a leader after sync is", r.leader(synced(true)), true, "leading"},
	}
	// endregion: readiness
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, err := tt.runner.Ready()
			if (err == nil) != tt.wantReady || status != tt.wantStatus {
				t.Errorf("got %q, %v, want ready %v with %q", status, err, tt.wantReady, tt.wantStatus)
			}
		})
	}
}

func TestReadyAsksOnlyWhatAWarmStandbyRuns(t *testing.T) {
	r := runners{t}
	// A runnable without RunWarm starts only once the replica leads: a warm
	// standby does not wait for its cache.
	if status, err := r.warmStandby(synced(true), failing{}).Ready(); err != nil || status != "standby" {
		t.Errorf("got a warm standby %q, %v, want ready as standby", status, err)
	}
	if _, err := r.leader(synced(true), failing{}).Ready(); err == nil {
		t.Error("got a leader ready with a runnable not synced, want not ready")
	}
	// A runnable without HasSynced has nothing to wait for.
	if status, err := r.leader(runFunc(func(ctx context.Context) error { <-ctx.Done(); return nil })).Ready(); err != nil || status != "leading" {
		t.Errorf("got a leader %q, %v, want ready as leading", status, err)
	}
}

func TestReadySaysWhyControllersHaveNotSynced(t *testing.T) {
	r := runners{t}
	decode := errors.New("tenants: could not decode the retrieved objects of *v1alpha1.Tenant: quantities must match")
	forbidden := errors.New("pods: could not list or watch *v1.Pod: forbidden")
	tests := []struct {
		name   string
		runner *leaderelection.Runner
		want   []string
	}{
		{"with leader election disabled", r.disabled(synced(true), failing{decode}),
			[]string{"caches not synced yet: ", decode.Error()}},
		{"a leader", r.leader(failing{decode}, failing{forbidden}),
			[]string{"leading, caches not synced yet: ", decode.Error(), forbidden.Error()}},
		{"no reason known yet", r.leader(failing{}),
			[]string{"leading, caches not synced yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.runner.Ready()
			if err == nil {
				t.Fatal("got ready, want not ready")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			if wantLeading := tt.runner.Leading(); strings.HasPrefix(err.Error(), "leading") != wantLeading {
				t.Errorf("got %q, want it to start with leading only for a leader", err)
			}
		})
	}
}
