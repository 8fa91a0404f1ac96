// Package conversion serves the API server's ConversionReviews
// (apiextensions.k8s.io/v1) for a custom resource served in more than one
// version: the CRD's spec.conversion names the webhook, and the API server
// calls it for every read and write of an object in a version other than
// the one it is stored in, and for every object of a list.
//
// A conversion webhook is in the path of every read, including the garbage
// collector's and the namespace controller's: while no replica answers,
// nothing in another version than the stored one can be read, and the
// garbage collector and namespace deletion stop at this resource
// (docs/tutorial-api-versions.md). So it runs in every replica, not only
// the leader, and never fails on what a user wrote: Func's errors are for
// what cannot be converted at all (a version it does not know).
package conversion

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/bounded"
)

// Path is where Handler is served; the CRD's
// spec.conversion.webhook.clientConfig names it.
const Path = "/convert"

// region: bounds

// The bounds on what a caller can make the webhook spend. Anyone who
// reaches its port can call it.
const (
	// MaxReviews is how many ConversionReviews are handled at once; beyond
	// it a request is answered at once with 429 (the API server's read or
	// write fails, and its client retries).
	MaxReviews = 4
	// MaxBodyBytes bounds a request's body: the API server sends the
	// objects of a whole list page in one review. Larger is answered 413,
	// having read no more.
	MaxBodyBytes = 8 << 20
	// MaxReadTime is the most a request may take, its body's arrival
	// included, or four fifths of the API server's timeout parameter if
	// that is shorter.
	MaxReadTime = 5 * time.Second
)

// endregion: bounds

// Func converts obj, an object of the custom resource in one of its served
// versions, to version to ("group/version"). An object already in version
// to comes back as it is.
type Func func(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error)

// region: between

// Between returns the Func of a kind served in two versions, a and b,
// whose a type converts to and from b's (A's ConvertTo and ConvertFrom).
// Each object goes through the typed conversion; its metadata comes back
// as it was, but for the labels and annotations the conversion sets.
func Between[A, B any, PA interface {
	*A
	ConvertTo(*B)
	ConvertFrom(*B)
}](a, b schema.GroupVersion) Func {
	return func(obj *unstructured.Unstructured, to string) (*unstructured.Unstructured, error) {
		from := obj.GetAPIVersion()
		if from == to {
			return obj, nil
		}
		var out any
		switch {
		case from == a.String() && to == b.String():
			var src A
			dst := new(B)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &src); err != nil {
				return nil, fmt.Errorf("could not read %s %s: %w", from, obj.GetName(), err)
			}
			PA(&src).ConvertTo(dst)
			out = dst
		case from == b.String() && to == a.String():
			var src B
			dst := new(A)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &src); err != nil {
				return nil, fmt.Errorf("could not read %s %s: %w", from, obj.GetName(), err)
			}
			PA(dst).ConvertFrom(&src)
			out = dst
		default:
			return nil, fmt.Errorf("cannot convert from %q to %q: the versions are %s and %s", from, to, a, b)
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
		if err != nil {
			return nil, fmt.Errorf("could not write %s %s: %w", to, obj.GetName(), err)
		}
		converted := &unstructured.Unstructured{Object: m}
		converted.SetAPIVersion(to)
		converted.SetKind(obj.GetKind())
		return converted, nil
	}
}

// endregion: between

// Handler serves ConversionReviews with convert, within MaxReviews,
// MaxBodyBytes and MaxReadTime (package bounded, as the admission
// webhook). A review whose objects cannot all be converted is answered
// with a failure naming the first (the API server then fails the request
// that needed it); refusals and failures are logged at most once per 10
// seconds.
func Handler(convert Func, logger log.Logger) http.Handler {
	clk := clock.RealClock{}
	reviews := bounded.Limits{
		What:     "conversion review",
		AtOnce:   MaxReviews,
		MaxBytes: MaxBodyBytes,
		MaxTime:  MaxReadTime,
		Logger:   logger,
		Clock:    clk,
	}.Handler(&handler{convert: convert, log: logger, failed: bounded.NewThrottle(clk)})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "Method Not Allowed: POST a ConversionReview", http.StatusMethodNotAllowed)
			return
		}
		reviews.ServeHTTP(w, r)
	})
}

type handler struct {
	convert Func
	log     log.Logger
	failed  *bounded.Throttle
}

// ServeHTTP converts one review, whose body bounded.Limits has read.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Decoded from the body bounded.Limits holds, not copied again.
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "Bad Request: not a ConversionReview of apiextensions.k8s.io/v1 with a request", http.StatusBadRequest)
		return
	}
	resp := h.review(review.Request)
	if resp.Result.Status == metav1.StatusFailure {
		h.failed.Log(h.log.Warn, "could not convert", "uid", resp.UID, "err", resp.Result.Message)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
		Response: resp,
	})
}

// review converts req's objects, all or none.
func (h *handler) review(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	fail := func(i int, err error) *apiextensionsv1.ConversionResponse {
		resp.ConvertedObjects = nil
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: fmt.Sprintf("object %d of %d: %v", i+1, len(req.Objects), err)}
		return resp
	}
	resp.ConvertedObjects = make([]runtime.RawExtension, 0, len(req.Objects))
	for i, raw := range req.Objects {
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			return fail(i, err)
		}
		converted, err := h.convert(&obj, req.DesiredAPIVersion)
		if err != nil {
			return fail(i, err)
		}
		b, err := converted.MarshalJSON()
		if err != nil {
			return fail(i, err)
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
	}
	return resp
}
