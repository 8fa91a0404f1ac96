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
// A handling's span is named "handle <controller>", comes from the tracer
// of instrumentation scope github.com/kooperkit/kooper/kooper/tracing, and
// carries:
//
//	| attribute         | value                                               |
//	|-------------------|-----------------------------------------------------|
//	| kooper.controller | the controller's name                               |
//	| kooper.object     | the object's key, "namespace/name"                  |
//	| kooper.attempt    | 1 for the first handling since the last success     |
//	| kooper.reasons    | why it runs (controller.Reasons), e.g. ["changed"]  |
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
	"github.com/kooperkit/kooper/kooper/internal/handling"
)

// scopeName is the instrumentation scope of Kooper's spans.
const scopeName = "github.com/kooperkit/kooper/kooper/tracing"

// The attribute keys of a handling's span, as the package documentation's
// table lists them.
const (
	attrController = attribute.Key("kooper.controller")
	attrObject     = attribute.Key("kooper.object")
	attrAttempt    = attribute.Key("kooper.attempt")
	attrReasons    = attribute.Key("kooper.reasons")
	attrOutcome    = attribute.Key("kooper.outcome")
)

// The outcomes of a handling, the values of attrOutcome.
const (
	outcomeSuccess  = "success"
	outcomeRequeue  = "requeue"
	outcomeError    = "error"
	outcomeTerminal = "terminal"
)

// Middleware returns a controller.Middleware that runs each handling in a
// span of tp. Put it first in the chain so that the span covers the other
// middlewares.
func Middleware(tp trace.TracerProvider) controller.Middleware {
	tracer := tp.Tracer(scopeName)
	return func(next controller.Handler) controller.Handler {
		return controller.HandlerFunc(func(ctx context.Context, obj runtime.Object) error {
			info, _ := handling.From(ctx)
			ctx, span := tracer.Start(ctx, "handle "+info.Controller,
				trace.WithSpanKind(trace.SpanKindInternal),
				trace.WithAttributes(
					attrController.String(info.Controller),
					attrObject.String(info.Key),
					attrAttempt.Int(info.Attempt),
				))
			defer span.End()
			if span.IsRecording() { // formatting them costs: a no-op tracer pays nothing
				span.SetAttributes(attrReasons.StringSlice(info.Reasons.Strings()))
			}
			err := next.Handle(ctx, obj)
			span.SetAttributes(attrOutcome.String(outcome(err)))
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
		return outcomeSuccess
	case controller.IsTerminal(err):
		return outcomeTerminal
	}
	if _, requeue := controller.RequeueDelay(err); requeue {
		return outcomeRequeue
	}
	return outcomeError
}

// InstrumentClient makes every request of clients built from cfg a span of
// tp, a child of the span in the request's context (a handling's). Call it
// before building the clients.
func InstrumentClient(cfg *rest.Config, tp trace.TracerProvider) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(tp))
	})
}
