package observe_test

import (
	"context"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/client-go/rest"

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
	if s.REST != cfg || len(s.Middlewares) != 0 || s.Recorder == nil {
		t.Errorf("without tracing: got %+v, want the config as given, no middleware and a recorder", s)
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
