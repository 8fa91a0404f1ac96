package catalog_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kooperkit/kooper/grafana/internal/catalog"
	kooperprom "github.com/kooperkit/kooper/kooper/metrics/prometheus"
)

// TestTheCatalogMatchesWhatTheLibraryRegisters registers the library's
// metrics (and the runtime collectors the operators add) on a registry,
// makes one controller and one REST client call record something, and
// compares the gathered families with the catalog, both ways.
func TestTheCatalogMatchesWhatTheLibraryRegisters(t *testing.T) {
	reg := prom.NewRegistry()
	rec, err := kooperprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := kooperprom.RegisterRESTClientMetrics(reg); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rec.IncQueuedEvent("c", "change")
	rec.SetLeader("c", true)
	rec.SetShards("c", "server-side", 1, 2)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}`, http.StatusNotFound)
	}))
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	_, _ = client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := map[string]catalog.Family{}
	for _, mf := range mfs {
		f := catalog.Family{Name: mf.GetName(), Type: catalog.Type(strings.ToLower(mf.GetType().String()))}
		if len(mf.GetMetric()) > 0 {
			for _, l := range mf.GetMetric()[0].GetLabel() {
				f.Labels = append(f.Labels, l.GetName())
			}
		}
		gathered[f.Name] = f
	}
	for _, want := range catalog.Exposed(catalog.Library, catalog.Sharding, catalog.RESTClient, catalog.Runtime) {
		got, ok := gathered[want.Name]
		if !ok {
			t.Errorf("%s (%s) is in the catalog but not registered", want.Name, want.Source)
			continue
		}
		wantLabels := slices.Sorted(slices.Values(want.Labels))
		if got.Type != want.Type || !slices.Equal(got.Labels, wantLabels) {
			t.Errorf("%s: registered as %s %v, catalog says %s %v", want.Name, got.Type, got.Labels, want.Type, wantLabels)
		}
	}
	for name := range gathered {
		if strings.HasPrefix(name, "kooper_") {
			if f, ok := catalog.Lookup(name); !ok || !slices.Contains([]catalog.Source{catalog.Library, catalog.Sharding, catalog.RESTClient}, f.Source) {
				t.Errorf("the library registers %s, which the catalog does not list as the library's", name)
			}
		}
	}
}

func TestLookupFindsHistogramSeriesNames(t *testing.T) {
	tests := []struct {
		name string
		want string
		ok   bool
	}{
		{catalog.HandleDuration, catalog.HandleDuration, true},
		{catalog.HandleDuration + "_bucket", catalog.HandleDuration, true},
		{catalog.HandleDuration + "_count", catalog.HandleDuration, true},
		{catalog.QueueLength + "_count", "", false},
		{"kooper_unknown", "", false},
	}
	for _, tt := range tests {
		f, ok := catalog.Lookup(tt.name)
		if ok != tt.ok || f.Name != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.name, f.Name, ok, tt.want, tt.ok)
		}
	}
}

func TestEveryOperatorExposesTheLibrary(t *testing.T) {
	for name, sources := range catalog.Operators {
		for _, s := range []catalog.Source{catalog.Library, catalog.RESTClient, catalog.Runtime} {
			if !slices.Contains(sources, s) {
				t.Errorf("operator %s does not list %s", name, s)
			}
		}
		if len(catalog.Exposed(sources...)) <= len(catalog.Exposed(catalog.Library, catalog.RESTClient, catalog.Runtime)) {
			t.Errorf("operator %s lists no family of its own", name)
		}
	}
}
