package webhook_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

func terminator(edit func(*chaosv1beta1.PodTerminator)) *chaosv1beta1.PodTerminator {
	pt := &chaosv1beta1.PodTerminator{
		TypeMeta:   metav1.TypeMeta{APIVersion: chaosv1beta1.SchemeGroupVersion.String(), Kind: "PodTerminator"},
		ObjectMeta: metav1.ObjectMeta{Name: "victims"},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			Period:      &metav1.Duration{Duration: time.Minute},
			Termination: chaosv1beta1.Termination{Percent: 30, MinimumInstances: ptr.To[int32](1)},
		},
	}
	if edit != nil {
		edit(pt)
	}
	return pt
}

func inKubeSystem(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = []string{"kube-system"} }

func in(namespaces ...string) func(*chaosv1beta1.PodTerminator) {
	return func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = namespaces }
}

// mayDelete says where each user may delete pods ("" for everywhere).
var mayDelete = map[string][]string{"admin": {""}, "alice": {"shop", "shop-2"}}

// access is a fake webhook.Access answering from may, or mayDelete when
// may is nil, recording the questions asked.
type access struct {
	may        map[string][]string
	err        error
	mu         sync.Mutex
	asked      int
	users      []authenticationv1.UserInfo
	namespaces []string
}

func (a *access) MayDeletePods(_ context.Context, user authenticationv1.UserInfo, namespace string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked++
	a.users = append(a.users, user)
	a.namespaces = append(a.namespaces, namespace)
	if a.err != nil {
		return false, a.err
	}
	may := mayDelete[user.Username]
	if a.may != nil {
		may = a.may[user.Username]
	}
	return slices.Contains(may, namespace) || slices.Contains(may, ""), nil
}

func newWebhook(t *testing.T, a webhook.Access) http.Handler {
	t.Helper()
	h, err := webhook.New(webhook.Config{Rules: validation.Rules{Namespace: "kooper-pod-terminator", ProtectedNamespaces: []string{"payments"}}, Access: a})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestTheWebhookAnswersAdmissionReviews(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("team-%d", i)
	}
	tests := []struct {
		name         string
		op           admissionv1.Operation
		user         string // default admin
		old, obj     *chaosv1beta1.PodTerminator
		wantAllowed  bool
		wantMessage  string
		wantWarnings int
		wantAsked    bool // whether Access was asked
	}{
		{name: "a valid create", op: admissionv1.Create, obj: terminator(nil), wantAllowed: true, wantAsked: true},
		{
			name: "a create in kube-system", op: admissionv1.Create, obj: terminator(inKubeSystem),
			wantMessage: `spec.namespaces: "kube-system" is protected`,
		},
		{
			name: "a valid but risky create warns", op: admissionv1.Create,
			obj:         terminator(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.Percent = 90 }),
			wantAllowed: true, wantWarnings: 1, wantAsked: true,
		},
		{
			name: "a create in a namespace the runner protects", op: admissionv1.Create, obj: terminator(in("payments")),
			wantMessage: `spec.namespaces: "payments" is protected`,
		},
		{
			name: "a create where the user may delete pods", op: admissionv1.Create, user: "alice",
			obj: terminator(in("shop", "shop-2")), wantAllowed: true, wantAsked: true,
		},
		{
			name: "a create where the user may not delete pods", op: admissionv1.Create, user: "alice",
			obj: terminator(in("shop", "team-b")), wantAsked: true,
			wantMessage: `user "alice" may not delete pods in every namespace this PodTerminator targets: "shop", "team-b"; a PodTerminator deletes pods in your name, so creating one needs that permission`,
		},
		{
			name: "a create in every namespace by a user who may not delete pods everywhere", op: admissionv1.Create, user: "alice",
			obj: terminator(nil), wantAsked: true,
			wantMessage: `user "alice" may not delete pods in every namespace this PodTerminator targets: every namespace (spec.namespaces is empty); a PodTerminator deletes pods in your name, so creating one needs that permission`,
		},
		{
			name: "a create in many namespaces where the user may not delete pods names a few", op: admissionv1.Create, user: "alice",
			obj: terminator(in(many...)), wantAsked: true,
			wantMessage: `user "alice" may not delete pods in every namespace this PodTerminator targets: "team-0", "team-1", "team-2", "team-3", "team-4" and 7 more; a PodTerminator`,
		},
		{
			name: "an update moving to a namespace where the user may not delete pods", op: admissionv1.Update, user: "alice",
			old: terminator(in("shop")), obj: terminator(in("team-b")), wantAsked: true,
			wantMessage: `user "alice" may not delete pods in every namespace this PodTerminator targets: "team-b"; a PodTerminator deletes pods in your name, so making one more destructive (spec.namespaces changed) needs that permission`,
		},
		{
			name: "an update changing the selector is checked too", op: admissionv1.Update, user: "alice",
			old: terminator(in("team-b")), wantAsked: true,
			obj: terminator(func(pt *chaosv1beta1.PodTerminator) {
				pt.Spec.Namespaces = []string{"team-b"}
				pt.Spec.Selector.MatchLabels = map[string]string{"app": "database"}
			}),
			wantMessage: `user "alice" may not delete pods in every namespace this PodTerminator targets: "team-b"; a PodTerminator deletes pods in your name, so making one more destructive (spec.selector changed) needs that permission`,
		},
		{
			name: "an update lowering the percentage (of an admin's, cluster-wide) is not checked", op: admissionv1.Update, user: "alice",
			old:         terminator(nil),
			obj:         terminator(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Termination.Percent = 10 }),
			wantAllowed: true,
		},
		{
			name: "an update into kube-system", op: admissionv1.Update,
			old: terminator(nil), obj: terminator(inKubeSystem),
			wantMessage: `"kube-system" is protected`,
		},
		{
			name: "an update leaving an invalid spec unchanged (a finalizer added)", op: admissionv1.Update,
			old: terminator(inKubeSystem), user: "alice",
			obj: terminator(func(pt *chaosv1beta1.PodTerminator) {
				inKubeSystem(pt)
				pt.Finalizers = []string{"chaos.kooperkit.io/pod-terminator"}
			}),
			wantAllowed: true,
		},
		{
			name: "an update of an object being deleted", op: admissionv1.Update,
			old: terminator(nil), user: "alice",
			obj: terminator(func(pt *chaosv1beta1.PodTerminator) {
				inKubeSystem(pt)
				now := metav1.Now()
				pt.DeletionTimestamp = &now
			}),
			wantAllowed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &access{}
			h := newWebhook(t, a)
			user := cmp.Or(tt.user, "admin")
			resp := review(t, h, request(t, tt.op, user, tt.old, tt.obj))
			if resp.Allowed != tt.wantAllowed {
				t.Fatalf("got allowed %v (%+v), want %v", resp.Allowed, resp.Result, tt.wantAllowed)
			}
			if tt.wantMessage != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tt.wantMessage)) {
				t.Errorf("got result %+v, want a message saying %q", resp.Result, tt.wantMessage)
			}
			if len(resp.Warnings) != tt.wantWarnings {
				t.Errorf("got warnings %q, want %d", resp.Warnings, tt.wantWarnings)
			}
			if asked := a.asked > 0; asked != tt.wantAsked {
				t.Errorf("got access asked %d times, want asked: %v", a.asked, tt.wantAsked)
			}
		})
	}
}

// The access check runs as the requesting user, with everything the API
// server knows of them.
func TestTheAccessCheckIsAskedAsTheRequestingUser(t *testing.T) {
	a := &access{}
	h := newWebhook(t, a)
	user := authenticationv1.UserInfo{
		Username: "alice", UID: "42", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"pods"}},
	}
	resp := review(t, h, &admissionv1.AdmissionRequest{
		UID: "1", Name: "victims", Operation: admissionv1.Create,
		Kind:     metav1.GroupVersionKind{Group: "chaos.kooperkit.io", Version: "v1alpha1", Kind: "PodTerminator"},
		Resource: metav1.GroupVersionResource{Group: "chaos.kooperkit.io", Version: "v1alpha1", Resource: "podterminators"},
		Object:   raw(t, terminator(in("shop"))), UserInfo: user,
	})
	if !resp.Allowed {
		t.Fatalf("got refused (%+v), want allowed", resp.Result)
	}
	if len(a.users) == 0 {
		t.Fatal("access was never asked")
	}
	for _, got := range a.users {
		if !reflect.DeepEqual(got, user) {
			t.Errorf("got access asked as %+v, want %+v", got, user)
		}
	}
}

// An access check that fails refuses (fail closed), saying why.
func TestAFailingAccessCheckRefuses(t *testing.T) {
	h := newWebhook(t, &access{err: errors.New("connection refused")})
	resp := review(t, h, &admissionv1.AdmissionRequest{
		UID: "1", Name: "victims", Operation: admissionv1.Create,
		Kind:     metav1.GroupVersionKind{Group: "chaos.kooperkit.io", Version: "v1alpha1", Kind: "PodTerminator"},
		Resource: metav1.GroupVersionResource{Group: "chaos.kooperkit.io", Version: "v1alpha1", Resource: "podterminators"},
		Object:   raw(t, terminator(in("shop"))), UserInfo: authenticationv1.UserInfo{Username: "admin"},
	})
	// The error is the operator's business, logged, not the caller's.
	want := `could not check whether user "admin" may delete pods in every namespace this PodTerminator targets, which it needs, so it is refused; try again later`
	if resp.Allowed || resp.Result == nil || resp.Result.Message != want {
		t.Errorf("got allowed %v, result %+v; want refused with %q", resp.Allowed, resp.Result, want)
	}
}

// Anyone who can reach the webhook can ask in anyone's name: the answer
// tells whether the user may delete pods in every target or not, and
// nothing about which, neither in its words nor in the questions it takes.
func TestARefusalDoesNotTellWhereTheUserMayDeletePods(t *testing.T) {
	targets := []string{"ns-a", "ns-b", "ns-c"}
	dryRun := terminator(func(pt *chaosv1beta1.PodTerminator) { pt.Spec.Namespaces = targets; pt.Spec.DryRun = true })
	reviews := []struct {
		name     string
		op       admissionv1.Operation
		old, obj *chaosv1beta1.PodTerminator
		want     string
	}{
		{
			name: "a create", op: admissionv1.Create, obj: terminator(in(targets...)),
			want: `user "alice" may not delete pods in every namespace this PodTerminator targets: "ns-a", "ns-b", "ns-c"; a PodTerminator deletes pods in your name, so creating one needs that permission`,
		},
		{
			name: "an update turning a dry run off", op: admissionv1.Update, old: dryRun, obj: terminator(in(targets...)),
			want: `user "alice" may not delete pods in every namespace this PodTerminator targets: "ns-a", "ns-b", "ns-c"; a PodTerminator deletes pods in your name, so making one more destructive (spec.dryRun turned off) needs that permission`,
		},
	}
	// Where alice may delete pods: a refusal for each, all alike.
	wheres := [][]string{nil, {"ns-a"}, {"ns-b"}, {"ns-c"}, {"ns-a", "ns-b"}, {"ns-b", "ns-c"}, {"ns-a", "elsewhere"}}
	for _, rv := range reviews {
		t.Run(rv.name, func(t *testing.T) {
			var firstAsked []string
			for i, where := range wheres {
				a := &access{may: map[string][]string{"alice": where}}
				resp := review(t, newWebhook(t, a), request(t, rv.op, "alice", rv.old, rv.obj))
				if resp.Allowed || resp.Result == nil || resp.Result.Message != rv.want {
					t.Errorf("alice may delete pods in %q: got allowed %v, result %+v; want refused with %q", where, resp.Allowed, resp.Result, rv.want)
				}
				if i == 0 {
					firstAsked = a.namespaces
				} else if !slices.Equal(a.namespaces, firstAsked) {
					t.Errorf("alice may delete pods in %q: got questions about %q, want the same as when she may nowhere, %q", where, a.namespaces, firstAsked)
				}
			}
		})
	}
	t.Run("a failing access check", func(t *testing.T) {
		const want = `could not check whether user "alice" may delete pods in every namespace this PodTerminator targets, which it needs, so it is refused; try again later`
		for _, failing := range []string{"", "ns-a", "ns-b", "ns-c"} {
			a := webhook.AccessFunc(func(_ context.Context, _ authenticationv1.UserInfo, ns string) (bool, error) {
				if ns == failing {
					return false, fmt.Errorf("no answer about %q", ns)
				}
				return ns == "ns-a", nil
			})
			resp := review(t, newWebhook(t, a), request(t, admissionv1.Create, "alice", nil, terminator(in(targets...))))
			if resp.Allowed || resp.Result == nil || resp.Result.Message != want {
				t.Errorf("failing on %q: got allowed %v, result %+v; want refused with %q", failing, resp.Allowed, resp.Result, want)
			}
		}
	})
}

// A review asks at most 1+validation.MaxNamespaces questions: one
// cluster-wide, then one per namespace of a valid spec.
func TestAReviewAsksABoundedNumberOfAccessQuestions(t *testing.T) {
	many := make([]string, validation.MaxNamespaces+1)
	for i := range many {
		many[i] = fmt.Sprintf("team-%d", i)
	}
	tests := []struct {
		name       string
		namespaces []string
		wantAsked  int
	}{
		{name: "the most namespaces a spec may list", namespaces: many[:validation.MaxNamespaces], wantAsked: 1 + validation.MaxNamespaces},
		{name: "one more, refused before any question", namespaces: many, wantAsked: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &access{}
			resp := review(t, newWebhook(t, a), request(t, admissionv1.Create, "bob", nil, terminator(in(tt.namespaces...))))
			if resp.Allowed {
				t.Fatalf("got allowed, want refused: bob may delete no pod")
			}
			if a.asked != tt.wantAsked {
				t.Errorf("got %d questions, want %d", a.asked, tt.wantAsked)
			}
		})
	}
}

func TestNewRequiresAccess(t *testing.T) {
	if _, err := webhook.New(webhook.Config{}); !errors.Is(err, webhook.ErrInvalidConfig) {
		t.Errorf("got %v, want ErrInvalidConfig: without Access everyone would be allowed", err)
	}
}

// A 50,000-entry list of bad namespaces (900 KB, under MaxBodyBytes) gets
// an answer of a few kilobytes, and no access question.
func TestTheAnswerStaysSmallWhateverTheObjectsSize(t *testing.T) {
	a := &access{}
	h := newWebhook(t, a)
	bad := make([]string, 50_000)
	for i := range bad {
		bad[i] = "Not_A_Namespace"
	}
	resp := review(t, h, &admissionv1.AdmissionRequest{
		UID: "1", Name: "victims", Operation: admissionv1.Create,
		Kind:     metav1.GroupVersionKind{Group: "chaos.kooperkit.io", Version: "v1alpha1", Kind: "PodTerminator"},
		Resource: metav1.GroupVersionResource{Group: "chaos.kooperkit.io", Version: "v1alpha1", Resource: "podterminators"},
		Object:   raw(t, terminator(in(bad...))), UserInfo: authenticationv1.UserInfo{Username: "admin"},
	})
	if resp.Allowed || resp.Result == nil {
		t.Fatalf("got allowed %v (%+v), want refused", resp.Allowed, resp.Result)
	}
	if n := len(resp.Result.Message); n > 8<<10 {
		t.Errorf("got a message of %d bytes, want at most 8 KiB", n)
	}
	if !strings.Contains(resp.Result.Message, "more problems") {
		t.Errorf("got message %q, want it to count the problems it does not describe", resp.Result.Message)
	}
	if a.asked > 0 {
		t.Errorf("got access asked %d times for an invalid spec, want 0", a.asked)
	}
}

// request is the AdmissionRequest of user for obj, and old on an update.
func request(t *testing.T, op admissionv1.Operation, user string, old, obj *chaosv1beta1.PodTerminator) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       "1",
		Kind:      metav1.GroupVersionKind{Group: "chaos.kooperkit.io", Version: "v1alpha1", Kind: "PodTerminator"},
		Resource:  metav1.GroupVersionResource{Group: "chaos.kooperkit.io", Version: "v1alpha1", Resource: "podterminators"},
		Name:      obj.Name,
		Operation: op,
		Object:    raw(t, obj),
		UserInfo:  authenticationv1.UserInfo{Username: user},
	}
	if old != nil {
		req.OldObject = raw(t, old)
	}
	return req
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
