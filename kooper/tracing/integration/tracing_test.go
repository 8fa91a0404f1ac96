package integration_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/tracing"
)

var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(envtest.RunTests(m, envtest.Options{}, &cluster))
}

// One real handling, which reads and updates its ConfigMap through an
// instrumented client, is one span with the API calls as its children.
func TestAHandlingIsASpanWithItsAPICallsAsChildren(t *testing.T) {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(ctx) }()

	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tracing-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "traced"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := rest.CopyConfig(cluster.Config())
	tracing.InstrumentClient(cfg, tp)
	client := kubernetes.NewForConfigOrDie(cfg)
	handled := make(chan struct{})
	h := func(ctx context.Context, cm *corev1.ConfigMap) error {
		if cm.Data["seen"] == "yes" {
			return nil
		}
		fresh, err := client.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fresh.Data = map[string]string{"seen": "yes"}
		if _, err := client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
			return err
		}
		close(handled)
		return nil
	}
	// The retriever uses an uninstrumented client: only the handler's calls
	// are traced.
	cms := admin.CoreV1().ConfigMaps(ns.Name)
	ctrl, err := controller.New(controller.Config{
		Name:           "traced",
		Handler:        controller.Chain(controller.Typed(h), tracing.Middleware(tp)),
		Retriever:      controller.NewRetriever(cms.List, cms.Watch),
		ResyncInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(runCtx) }()
	select {
	case <-handled:
	case <-time.After(30 * time.Second):
		t.Fatal("the ConfigMap was not handled in 30s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var handle *tracetest.SpanStub
	spans := exp.GetSpans()
	for i := range spans {
		attrs := attribute.NewSet(spans[i].Attributes...)
		if obj, _ := attrs.Value("kooper.object"); spans[i].Name == "handle traced" && obj.AsString() == ns.Name+"/traced" {
			if outcome, _ := attrs.Value("kooper.outcome"); outcome.AsString() == "success" {
				if handle == nil {
					handle = &spans[i]
				}
			}
		}
	}
	if handle == nil {
		t.Fatalf("got spans %v, want a successful \"handle traced\" span for %s/traced", names(spans), ns.Name)
	}
	attrs := attribute.NewSet(handle.Attributes...)
	if c, _ := attrs.Value("kooper.controller"); c.AsString() != "traced" {
		t.Errorf("got controller %q, want traced", c.AsString())
	}
	if a, _ := attrs.Value("kooper.attempt"); a.AsInt64() != 1 {
		t.Errorf("got attempt %d, want 1", a.AsInt64())
	}
	// The ConfigMap was there before the controller started.
	if r, _ := attrs.Value("kooper.reasons"); !slices.Equal(r.AsStringSlice(), []string{"initial"}) {
		t.Errorf("got reasons %q, want [initial]", r.AsStringSlice())
	}
	var children []string
	for _, s := range spans {
		if s.Parent.SpanID() == handle.SpanContext.SpanID() && s.SpanContext.TraceID() == handle.SpanContext.TraceID() {
			if s.SpanKind != trace.SpanKindClient {
				t.Errorf("child %q is a %v span, want a client span", s.Name, s.SpanKind)
			}
			children = append(children, s.Name)
		}
	}
	if len(children) != 2 || children[0] != "HTTP GET" || children[1] != "HTTP PUT" {
		t.Errorf("got children %v of the handling span, want the GET and the PUT", children)
	}
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}
