package e2etest_test

import (
	"context"
	"net"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
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
