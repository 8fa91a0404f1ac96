package integration_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	stdslog "log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/health"
	kooperslog "github.com/kooperkit/kooper/kooper/log/slog"
	kooperprom "github.com/kooperkit/kooper/kooper/metrics/prometheus"
)

// A custom resource whose schema accepts any string for spec.cpu, while
// its Go type holds a resource.Quantity: "1e1.5" is stored, and cannot be
// decoded.
var widgetGV = schema.GroupVersion{Group: "poison.kooperkit.io", Version: "v1"}

type widgetSpec struct {
	CPU resource.Quantity `json:"cpu"`
}

type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.DeepCopyInto(&c.ObjectMeta)
	c.Spec.CPU = w.Spec.CPU.DeepCopy()
	return &c
}

type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func (l *widgetList) DeepCopyObject() runtime.Object {
	c := &widgetList{TypeMeta: l.TypeMeta}
	l.DeepCopyInto(&c.ListMeta)
	for i := range l.Items {
		c.Items = append(c.Items, *l.Items[i].DeepCopyObject().(*widget))
	}
	return c
}

// createWidgetCRD creates the CRD, waits until it is served, and deletes it
// when the test ends.
func createWidgetCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	crds := apiextensionsclient.NewForConfigOrDie(cluster.Config()).ApiextensionsV1().CustomResourceDefinitions()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + widgetGV.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGV.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: widgetGV.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"cpu": {Type: "string"}, // any string, unlike the Go type
						}},
					},
				}},
			}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("could not delete the CRD: %v", err)
		}
	})
	eventually(t, time.Minute, "the CRD is established", func() bool {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

// widgets retrieves the Widgets of ns with a typed REST client, decoding
// JSON into widget as a generated clientset would.
func widgets(t *testing.T, ns string) controller.Retriever {
	t.Helper()
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(widgetGV.WithKind("Widget"), &widget{})
	scheme.AddKnownTypeWithName(widgetGV.WithKind("WidgetList"), &widgetList{})
	metav1.AddToGroupVersion(scheme, widgetGV)
	cfg := cluster.Config()
	cfg.GroupVersion = &widgetGV
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (*widgetList, error) {
		out := &widgetList{}
		err := rc.Get().Namespace(ns).Resource("widgets").VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(out)
		return out, err
	}
	watchFn := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.Watch = true
		return rc.Get().Namespace(ns).Resource("widgets").VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
	}
	return controller.NewRetriever(list, watchFn)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// One Widget whose spec.cpu the Go type cannot hold makes every list fail
// to decode: the cache never syncs and no Widget is handled. The
// controller says so where an operator looks: /readyz names the resource
// and the decode error, the log has it at error level, and a metric counts
// it. Deleting the bad Widget lets the cache sync and the good one be
// handled.
func TestAnObjectThatCannotBeDecodedIsReportedUntilItIsDeleted(t *testing.T) {
	_, ns := setup(t)
	ctx := context.Background()
	createWidgetCRD(t)
	dyn := dynamic.NewForConfigOrDie(cluster.Config()).Resource(widgetGV.WithResource("widgets")).Namespace(ns)
	for name, cpu := range map[string]string{"good": "100m", "bad": "1e1.5"} {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": widgetGV.String(), "kind": "Widget",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"cpu": cpu},
		}}
		if _, err := dyn.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("could not create widget %s: %v", name, err)
		}
	}

	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	rec, err := kooperprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	var handled sync.Map
	ctrl, err := controller.New(controller.Config{
		Name: "widgets", Retriever: widgets(t, ns), ResyncInterval: -1,
		Logger:          kooperslog.New(stdslog.New(stdslog.NewTextHandler(logs, nil))),
		MetricsRecorder: rec,
		Handler: controller.HandlerFunc(func(_ context.Context, obj runtime.Object) error {
			w := obj.(*widget)
			handled.Store(w.Name, w.Spec.CPU.String())
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := leaderelection.New(leaderelection.Config{Disabled: true}, ctrl)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := health.Start(health.Config{Addr: "127.0.0.1:0", Gatherer: reg, Ready: runner.Ready})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	stop, _ := runInBackground(t, runner.Run)

	// Not ready, and /readyz says why.
	var code int
	var body string
	eventually(t, time.Minute, "/readyz names the decode error", func() bool {
		code, body = httpGet(t, "http://"+srv.Addr()+"/readyz")
		return strings.Contains(body, "could not decode")
	})
	for _, want := range []string{"widgets: could not decode the retrieved objects of *integration_test.widget", "quantities must match"} {
		if code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
			t.Errorf("got /readyz %d %q, want 503 containing %q", code, body, want)
		}
	}
	if err := ctrl.SyncError(); !errors.Is(err, controller.ErrDecode) {
		t.Errorf("got SyncError %v, want it to wrap ErrDecode", err)
	}
	// Counted, as decode errors only.
	_, metrics := httpGet(t, "http://"+srv.Addr()+"/metrics")
	if !strings.Contains(metrics, `kooper_controller_retrieve_errors_total{controller="widgets",kind="api"} 0`) ||
		strings.Contains(metrics, `kooper_controller_retrieve_errors_total{controller="widgets",kind="decode"} 0`) ||
		!strings.Contains(metrics, `kooper_controller_retrieve_errors_total{controller="widgets",kind="decode"}`) {
		t.Errorf("got metrics\n%s\nwant a decode error counted, and no api error", grep(metrics, "retrieve_errors"))
	}
	// Logged at error level, naming the controller, the resource and the error.
	entry := grep(logs.String(), "could not decode retrieved objects")
	for _, want := range []string{"level=ERROR", "controller=widgets", "resource=*integration_test.widget", "quantities must match"} {
		if !strings.Contains(entry, want) {
			t.Errorf("got log entries\n%s\nwant them to contain %q", entry, want)
		}
	}
	if _, ok := handled.Load("good"); ok || ctrl.HasSynced() {
		t.Errorf("got the good widget handled or the cache synced while the bad one cannot be decoded")
	}

	if err := dyn.Delete(ctx, "bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The reflector retries with backoff (at most 30s, with jitter).
	eventually(t, 2*time.Minute, "the cache syncs once the bad widget is gone", ctrl.HasSynced)
	eventually(t, 30*time.Second, "the good widget is handled", func() bool {
		cpu, ok := handled.Load("good")
		return ok && cpu == "100m"
	})
	if code, body := httpGet(t, "http://"+srv.Addr()+"/readyz"); code != http.StatusOK {
		t.Errorf("got /readyz %d %q once synced, want 200", code, body)
	}
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// grep returns the lines of s containing sub.
func grep(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
