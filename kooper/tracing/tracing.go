// Package tracing makes each handling an OpenTelemetry span, and each API
// call the handler makes a child span of it.
//
// Tracing is off unless an operator turns it on: Middleware and
// InstrumentClient take a trace.TracerProvider, and a no-op one (the
// default of otel.GetTracerProvider before anything is configured) costs
// next to nothing.
//
//	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
//	defer tp.Shutdown(ctx)
//	tracing.InstrumentClient(restConfig, tp) // before building clients
//	cfg.Handler = controller.Chain(handler, tracing.Middleware(tp))
//
// A handling's span is named "handle <controller>" and carries:
//
//	| attribute         | value                                               |
//	|-------------------|-----------------------------------------------------|
//	| kooper.controller | the controller's name                               |
//	| kooper.object     | the object's key, "namespace/name"                  |
//	| kooper.attempt    | 1 for the first handling since the last success     |
//	| kooper.outcome    | success, requeue, error or terminal                 |
//
// Errors are recorded on the span and set its status. The API calls made
// with the handler's context (client-go passes it to the transport) are its
// children, named by otelhttp after the HTTP method.
package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
)

// ScopeName is the instrumentation scope of Kooper's spans.
const ScopeName = "github.com/kooperkit/kooper/kooper/tracing"

// Attribute keys of a handling's span.
const (
	AttrController = attribute.Key("kooper.controller")
	AttrObject     = attribute.Key("kooper.object")
	AttrAttempt    = attribute.Key("kooper.attempt")
	AttrOutcome    = attribute.Key("kooper.outcome")
)

// Outcomes of a handling, the values of AttrOutcome.
const (
	OutcomeSuccess  = "success"
	OutcomeRequeue  = "requeue"
	OutcomeError    = "error"
	OutcomeTerminal = "terminal"
)

// Middleware returns a controller.Middleware that runs each handling in a
// span of tp. Put it first in the chain so that the span covers the other
// middlewares.
func Middleware(tp trace.TracerProvider) controller.Middleware {
	tracer := tp.Tracer(ScopeName)
	return func(next controller.Handler) controller.Handler {
		return controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
			info, _ := controller.HandlingFrom(ctx)
			ctx, span := tracer.Start(ctx, "handle "+info.Controller,
				trace.WithSpanKind(trace.SpanKindInternal),
				trace.WithAttributes(
					AttrController.String(info.Controller),
					AttrObject.String(info.Key),
					AttrAttempt.Int(info.Attempt),
				))
			defer span.End()
			err := next.Handle(ctx, obj)
			span.SetAttributes(AttrOutcome.String(outcome(err)))
			if err != nil {
				if _, requeue := controller.RequeueDelay(err); !requeue {
					span.RecordError(err)
					span.SetStatus(codes.Error, err.Error())
				}
			}
			return err
		})
	}
}

func outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeSuccess
	case controller.IsTerminal(err):
		return OutcomeTerminal
	}
	if _, requeue := controller.RequeueDelay(err); requeue {
		return OutcomeRequeue
	}
	return OutcomeError
}

// InstrumentClient makes every request of clients built from cfg a span of
// tp, a child of the span in the request's context (a handling's). Call it
// before building the clients.
func InstrumentClient(cfg *rest.Config, tp trace.TracerProvider) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(tp))
	})
}
