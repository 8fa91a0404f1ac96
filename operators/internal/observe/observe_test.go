package observe_test

import (
	"context"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kooperkit/kooper/operators/internal/observe"
)

func TestNew(t *testing.T) {
	own := prom.NewCounter(prom.CounterOpts{Name: "own_total", Help: "own"})
	cfg := &rest.Config{Host: "https://127.0.0.1"}

	reg := prom.NewRegistry()
	s, err := observe.New(cfg, reg, nil, own)
	if err != nil {
		t.Fatal(err)
	}
	if s.REST == cfg || s.REST.Host != cfg.Host || s.REST.WrapTransport == nil || cfg.WrapTransport != nil || len(s.Middlewares) != 0 || s.Recorder == nil {
		t.Errorf("without tracing: got %+v, want a copy whose clients' writes are tracked (a wrapped transport; controller.TrackWrites), the given config untouched, no middleware and a recorder", s)
	}
	s.Recorder.IncRetry("c")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	for _, name := range []string{"own_total", "go_goroutines", "process_cpu_seconds_total", "kooper_controller_retries_total"} {
		if !got[name] {
			t.Errorf("got no %s among %v", name, got)
		}
	}
	if _, err := observe.New(cfg, reg, nil, own); err == nil {
		t.Error("got no error registering twice on one registry")
	}

	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	s, err = observe.New(cfg, prom.NewRegistry(), tp)
	if err != nil {
		t.Fatal(err)
	}
	if s.REST == cfg || s.REST.WrapTransport == nil || cfg.WrapTransport != nil || len(s.Middlewares) != 1 {
		t.Errorf("with tracing: got %+v, want an instrumented copy and the tracing middleware", s)
	}
}

// A clientset made from OwnLimiter's config has a rate limiter nobody else
// uses, even when the config it copies carries one (which every copy would
// otherwise share): exhausting the shared one, and another OwnLimiter
// clientset's, leaves it whole.
func TestOwnLimiterGivesAClientsetALimiterOfItsOwn(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  *rest.Config
	}{
		{name: "a config with QPS and burst", cfg: &rest.Config{Host: "https://127.0.0.1:1", QPS: 50, Burst: 100}},
		{name: "a config carrying a rate limiter", cfg: &rest.Config{Host: "https://127.0.0.1:1", RateLimiter: flowcontrol.NewTokenBucketRateLimiter(50, 100)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shared := kubernetes.NewForConfigOrDie(tt.cfg).CoreV1().RESTClient().GetRateLimiter()
			lease := kubernetes.NewForConfigOrDie(observe.OwnLimiter(tt.cfg, observe.LeaseQPS, observe.LeaseBurst)).CoordinationV1().RESTClient().GetRateLimiter()
			reviews := kubernetes.NewForConfigOrDie(observe.OwnLimiter(tt.cfg, observe.MetricsQPS, observe.MetricsBurst)).AuthenticationV1().RESTClient().GetRateLimiter()
			for shared.TryAccept() {
			}
			for reviews.TryAccept() {
			}
			for i := range observe.LeaseBurst {
				if !lease.TryAccept() {
					t.Fatalf("got request %d of leader election's burst held back once the others' limiters were exhausted, want %d let through at once", i+1, observe.LeaseBurst)
				}
			}
			if tt.cfg.RateLimiter != nil && tt.cfg.RateLimiter.TryAccept() {
				t.Error("the config's own rate limiter was not the one exhausted: the test proves nothing")
			}
		})
	}
}
