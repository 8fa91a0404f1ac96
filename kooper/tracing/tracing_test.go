package tracing_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/internal/handling"
	"github.com/kooperkit/kooper/kooper/tracing"
)

func TestMiddlewareRecordsTheOutcome(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantOutcome string
		wantStatus  codes.Code
	}{
		{"success", nil, "success", codes.Unset},
		{"requeue", controller.RequeueAfter(time.Second), "requeue", codes.Unset},
		{"error", errors.New("apiserver unavailable"), "error", codes.Error},
		{"terminal", controller.Terminal(errors.New("bad spec")), "terminal", codes.Error},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			h := controller.Chain(controller.HandlerFunc(func(context.Context, runtime.Object) error { return tt.err }), tracing.Middleware(tp))
			if err := h.Handle(context.Background(), &corev1.Pod{}); !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want the handler's error passed on", err)
			}
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("got %d spans, want 1", len(spans))
			}
			s := spans[0]
			attrs := attribute.NewSet(s.Attributes...)
			if v, _ := attrs.Value("kooper.outcome"); v.AsString() != tt.wantOutcome {
				t.Errorf("got outcome %q, want %q", v.AsString(), tt.wantOutcome)
			}
			if s.Status.Code != tt.wantStatus {
				t.Errorf("got status %v, want %v", s.Status.Code, tt.wantStatus)
			}
		})
	}
}

// A handling's span says why it runs.
func TestTheSpanCarriesTheReasons(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := controller.Chain(controller.HandlerFunc(func(context.Context, runtime.Object) error { return nil }), tracing.Middleware(tp))
	var rs handling.Reasons
	rs.Add(handling.Reason{Why: "created"})
	rs.Add(handling.Reason{Why: "owned", Detail: "deployments.apps ns/web"})
	ctx := handling.With(context.Background(), handling.Info{Controller: "c", Key: "ns/web", Attempt: 1, Reasons: rs})
	if err := h.Handle(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	attrs := attribute.NewSet(spans[0].Attributes...)
	want := []string{"created", "owned (deployments.apps ns/web)"}
	if v, _ := attrs.Value("kooper.reasons"); !slices.Equal(v.AsStringSlice(), want) {
		t.Errorf("got reasons %q, want %q", v.AsStringSlice(), want)
	}
}
