package conversion_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/conversion"
)

var podTerminators = conversion.Between[chaosv1alpha1.PodTerminator, chaosv1beta1.PodTerminator](
	chaosv1alpha1.SchemeGroupVersion, chaosv1beta1.SchemeGroupVersion)

// alpha is a v1alpha1 PodTerminator as the API server sends it: metadata
// the conversion must give back as it is.
const alpha = `{"apiVersion":"chaos.kooperkit.io/v1alpha1","kind":"PodTerminator",
 "metadata":{"name":"web","uid":"u-1","resourceVersion":"42","generation":3,"creationTimestamp":"2026-11-27T10:00:00Z",
  "labels":{"team":"web"},"finalizers":["chaos.kooperkit.io/pod-terminator"],
  "managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"chaos.kooperkit.io/v1alpha1","time":"2026-11-27T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
 "spec":{"selector":{"matchLabels":{"app":"web"}},"periodSeconds":30,"terminationPercent":25,"minimumInstances":2,"terminationMethod":"Delete"},
 "status":{"observedGeneration":3,"terminatedTotal":7}}`

func review(desired string, objects ...string) []byte {
	req := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "r-1", DesiredAPIVersion: desired},
	}
	for _, o := range objects {
		req.Request.Objects = append(req.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	b, _ := json.Marshal(req)
	return b
}

func post(t *testing.T, h http.Handler, body []byte) (*httptest.ResponseRecorder, *apiextensionsv1.ConversionResponse) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, conversion.Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		return rec, nil
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("got %q, %v, want a ConversionReview with a response", rec.Body, err)
	}
	return rec, out.Response
}

func TestHandlerConverts(t *testing.T) {
	h := conversion.Handler(podTerminators, log.Noop)
	_, resp := post(t, h, review("chaos.kooperkit.io/v1beta1", alpha, alpha))
	if resp.UID != "r-1" || resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 2 {
		t.Fatalf("got %+v, want uid r-1, Success and 2 objects", resp)
	}
	var in, out unstructured.Unstructured
	if err := in.UnmarshalJSON([]byte(alpha)); err != nil {
		t.Fatal(err)
	}
	if err := out.UnmarshalJSON(resp.ConvertedObjects[0].Raw); err != nil {
		t.Fatal(err)
	}
	if out.GetAPIVersion() != "chaos.kooperkit.io/v1beta1" || out.GetKind() != "PodTerminator" {
		t.Errorf("got %s %s, want PodTerminator in v1beta1", out.GetAPIVersion(), out.GetKind())
	}
	// The API server refuses a conversion that changes the metadata but
	// for labels and annotations.
	if d := cmp.Diff(in.Object["metadata"], out.Object["metadata"]); d != "" {
		t.Errorf("metadata changed (-sent +got):\n%s", d)
	}
	for path, want := range map[string]any{"period": "30s", "percent": int64(25), "minimumInstances": int64(2), "method": "Delete"} {
		var got any
		if path == "period" {
			got, _, _ = unstructured.NestedFieldNoCopy(out.Object, "spec", "period")
		} else {
			got, _, _ = unstructured.NestedFieldNoCopy(out.Object, "spec", "termination", path)
		}
		if got != want {
			t.Errorf("spec %s: got %v, want %v", path, got, want)
		}
	}
	if got, _, _ := unstructured.NestedInt64(out.Object, "status", "terminatedTotal"); got != 7 {
		t.Errorf("status.terminatedTotal: got %d, want 7", got)
	}

	t.Run("and back", func(t *testing.T) {
		_, back := post(t, h, review("chaos.kooperkit.io/v1alpha1", string(resp.ConvertedObjects[0].Raw)))
		var got unstructured.Unstructured
		if err := got.UnmarshalJSON(back.ConvertedObjects[0].Raw); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(in.Object, got.Object); d != "" {
			t.Errorf("came back different (-sent +got):\n%s", d)
		}
	})
}

func TestHandlerRefuses(t *testing.T) {
	h := conversion.Handler(podTerminators, log.Noop)
	tests := []struct {
		name     string
		method   string
		body     []byte
		wantCode int
		wantFail string // a Failure result's message, for 200
	}{
		{"a GET", http.MethodGet, nil, http.StatusMethodNotAllowed, ""},
		{"not a review", http.MethodPost, []byte(`{"kind":"AdmissionReview"}`), http.StatusBadRequest, ""},
		{"too large", http.MethodPost, bytes.Repeat([]byte(" "), conversion.MaxBodyBytes+1), http.StatusRequestEntityTooLarge, ""},
		{"a version it does not know", http.MethodPost, review("chaos.kooperkit.io/v2", alpha), http.StatusOK, `object 1 of 1: cannot convert from "chaos.kooperkit.io/v1alpha1" to "chaos.kooperkit.io/v2"`},
		{"an object that is not JSON", http.MethodPost, review("chaos.kooperkit.io/v1beta1", alpha, `{"apiVersion":1}`), http.StatusOK, "object 2 of 2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, conversion.Path, bytes.NewReader(tt.body)))
			if rec.Code != tt.wantCode {
				t.Fatalf("got %d %q, want %d", rec.Code, rec.Body, tt.wantCode)
			}
			if tt.wantFail == "" {
				return
			}
			var out apiextensionsv1.ConversionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if r := out.Response; r.Result.Status != metav1.StatusFailure || !strings.Contains(r.Result.Message, tt.wantFail) || r.ConvertedObjects != nil {
				t.Errorf("got %+v, want a Failure saying %q and no objects", r, tt.wantFail)
			}
		})
	}
}

// Beyond MaxReviews at once, a review is refused at once.
func TestHandlerRefusesBeyondMaxReviews(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 2*conversion.MaxReviews)
	h := conversion.Handler(func(obj *unstructured.Unstructured, _ string) (*unstructured.Unstructured, error) {
		entered <- struct{}{}
		<-release
		return obj, nil
	}, log.Noop)
	var done sync.WaitGroup
	for range conversion.MaxReviews {
		done.Go(func() {
			if rec, _ := post(t, h, review("chaos.kooperkit.io/v1alpha1", alpha)); rec.Code != http.StatusOK {
				t.Errorf("a review within the limit: got %d", rec.Code)
			}
		})
	}
	for range conversion.MaxReviews {
		<-entered
	}
	if rec, _ := post(t, h, review("chaos.kooperkit.io/v1alpha1", alpha)); rec.Code != http.StatusTooManyRequests {
		t.Errorf("one more: got %d, want 429", rec.Code)
	}
	close(release)
	done.Wait()
	if rec, _ := post(t, h, review("chaos.kooperkit.io/v1alpha1", alpha)); rec.Code == http.StatusTooManyRequests {
		t.Error("after the others ended: got 429, want the review handled")
	}
}
