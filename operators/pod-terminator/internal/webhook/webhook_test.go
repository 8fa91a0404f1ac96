package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

func terminator(edit func(*chaosv1alpha1.PodTerminator)) *chaosv1alpha1.PodTerminator {
	pt := &chaosv1alpha1.PodTerminator{
		TypeMeta:   metav1.TypeMeta{APIVersion: chaosv1alpha1.SchemeGroupVersion.String(), Kind: "PodTerminator"},
		ObjectMeta: metav1.ObjectMeta{Name: "victims"},
		Spec: chaosv1alpha1.PodTerminatorSpec{
			Selector:           metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			PeriodSeconds:      ptr.To[int32](60),
			TerminationPercent: 30,
			MinimumInstances:   ptr.To[int32](1),
		},
	}
	if edit != nil {
		edit(pt)
	}
	return pt
}

func inKubeSystem(pt *chaosv1alpha1.PodTerminator) { pt.Spec.Namespaces = []string{"kube-system"} }

func TestTheWebhookAnswersAdmissionReviews(t *testing.T) {
	h, err := webhook.New(validation.Rules{Namespace: "kooper-system"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		op           admissionv1.Operation
		old, obj     *chaosv1alpha1.PodTerminator
		wantAllowed  bool
		wantMessage  string
		wantWarnings int
	}{
		{name: "a valid create", op: admissionv1.Create, obj: terminator(nil), wantAllowed: true},
		{
			name: "a create in kube-system", op: admissionv1.Create, obj: terminator(inKubeSystem),
			wantMessage: `spec.namespaces: "kube-system" is protected`,
		},
		{
			name: "a valid but risky create warns", op: admissionv1.Create,
			obj:         terminator(func(pt *chaosv1alpha1.PodTerminator) { pt.Spec.TerminationPercent = 90 }),
			wantAllowed: true, wantWarnings: 1,
		},
		{
			name: "an update into kube-system", op: admissionv1.Update,
			old: terminator(nil), obj: terminator(inKubeSystem),
			wantMessage: `"kube-system" is protected`,
		},
		{
			name: "an update leaving an invalid spec unchanged (a finalizer added)", op: admissionv1.Update,
			old: terminator(inKubeSystem),
			obj: terminator(func(pt *chaosv1alpha1.PodTerminator) {
				inKubeSystem(pt)
				pt.Finalizers = []string{"chaos.kooperkit.io/pod-terminator"}
			}),
			wantAllowed: true,
		},
		{
			name: "an update of an object being deleted", op: admissionv1.Update,
			old: terminator(nil),
			obj: terminator(func(pt *chaosv1alpha1.PodTerminator) {
				inKubeSystem(pt)
				now := metav1.Now()
				pt.DeletionTimestamp = &now
			}),
			wantAllowed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &admissionv1.AdmissionRequest{
				UID:       "1",
				Kind:      metav1.GroupVersionKind{Group: "chaos.kooperkit.io", Version: "v1alpha1", Kind: "PodTerminator"},
				Resource:  metav1.GroupVersionResource{Group: "chaos.kooperkit.io", Version: "v1alpha1", Resource: "podterminators"},
				Name:      tt.obj.Name,
				Operation: tt.op,
				Object:    raw(t, tt.obj),
			}
			if tt.old != nil {
				req.OldObject = raw(t, tt.old)
			}
			resp := review(t, h, req)
			if resp.Allowed != tt.wantAllowed {
				t.Fatalf("got allowed %v (%+v), want %v", resp.Allowed, resp.Result, tt.wantAllowed)
			}
			if tt.wantMessage != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tt.wantMessage)) {
				t.Errorf("got result %+v, want a message saying %q", resp.Result, tt.wantMessage)
			}
			if len(resp.Warnings) != tt.wantWarnings {
				t.Errorf("got warnings %q, want %d", resp.Warnings, tt.wantWarnings)
			}
		})
	}
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func review(t *testing.T, h http.Handler, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("got HTTP %d: %s", rec.Code, rec.Body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("could not decode the answer %s: %v", rec.Body, err)
	}
	if out.Response == nil || out.Response.UID != req.UID {
		t.Fatalf("got response %+v, want one for request %s", out.Response, req.UID)
	}
	return out.Response
}
