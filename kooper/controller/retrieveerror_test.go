package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/log"
)

// widget is a type whose JSON can fail to decode in several ways.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	CPU               resource.Quantity `json:"cpu"`
	Replicas          int               `json:"replicas"`
	Since             metav1.Time       `json:"since"`
}

func (w *widget) DeepCopyObject() runtime.Object { c := *w; return &c }

// decodeWidget decodes body the way a typed REST client does, and returns
// the error the reflector would get, after its "failed to list" prefix.
func decodeWidget(t *testing.T, body string) error {
	t.Helper()
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, &widget{})
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	_, _, err := codecs.DecoderToVersion(info.Serializer, gv).Decode([]byte(body), nil, &widget{})
	if err == nil {
		t.Fatalf("decoding %s: got no error, want one", body)
	}
	return fmt.Errorf("failed to list *v1.widget: %w", err)
}

func TestDecodeErrorsAreToldApartFromRequestErrors(t *testing.T) {
	const head = `{"apiVersion":"example.com/v1","kind":"Widget",`
	watchDecoding := apierrors.FromObject(apierrors.NewClientErrorReporter(500, "GET", "ClientWatchDecoding").
		AsObject(errors.New("unable to decode watch event: quantities must match the regular expression")))
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a quantity that does not parse", decodeWidget(t, head+`"cpu":"1e1.5"}`), true},
		{"a string for an int", decodeWidget(t, head+`"replicas":"three"}`), true},
		{"a time that does not parse", decodeWidget(t, head+`"since":"yesterday"}`), true},
		{"truncated JSON", decodeWidget(t, head), true},
		{"a kind the scheme does not know", decodeWidget(t, `{"apiVersion":"example.com/v1","kind":"Gadget"}`), true},
		{"a watch event client-go could not decode", watchDecoding, true},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "widgets"}, "", errors.New("no")), false},
		{"an internal error from the API server", apierrors.NewInternalError(errors.New("etcd")), false},
		{"a refused connection", fmt.Errorf("failed to list *v1.widget: %w", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}), false},
		{"a deadline", fmt.Errorf("failed to list *v1.widget: %w", context.DeadlineExceeded), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isDecodeError(tt.err); got != tt.want {
				t.Errorf("isDecodeError(%q): got %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// entries is a log.Logger that keeps what it is given.
type entries struct {
	mu   sync.Mutex
	logs []string // "level msg k=v ..."
}

func (e *entries) add(level, msg string, kv []any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	line := level + " " + msg
	for i := 0; i+1 < len(kv); i += 2 {
		line += fmt.Sprintf(" %v=%v", kv[i], kv[i+1])
	}
	e.logs = append(e.logs, line)
}
func (e *entries) Debug(msg string, kv ...any) { e.add("debug", msg, kv) }
func (e *entries) Info(msg string, kv ...any)  { e.add("info", msg, kv) }
func (e *entries) Warn(msg string, kv ...any)  { e.add("warn", msg, kv) }
func (e *entries) Error(msg string, kv ...any) { e.add("error", msg, kv) }
func (e *entries) With(...any) log.Logger      { return e }

func (e *entries) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.logs...)
}

// kinds is a MetricsRecorder counting IncRetrieveError by kind.
type kinds struct {
	noopRecorder
	mu     sync.Mutex
	counts map[string]int
}

func (k *kinds) IncRetrieveError(_ string, kind string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.counts[kind]++
}

func TestARepeatedFailureIsLoggedOncePerIntervalAndAlwaysCounted(t *testing.T) {
	logs := &entries{}
	rec := &kinds{counts: map[string]int{}}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := &retrieveErrors{controller: "widgets", resource: "*v1.widget", log: logs, rec: rec, clock: clk}
	ctx := context.Background()
	decode := decodeWidget(t, `{"apiVersion":"example.com/v1","kind":"Widget","cpu":"1e1.5"}`)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "widgets"}, "", errors.New("no"))

	for range 10 { // the reflector retries every 30s at most
		r.record(ctx, decode)
		clk.SetTime(clk.Now().Add(30 * time.Second))
	}
	r.record(ctx, forbidden)                                       // another failure is logged at once
	r.record(ctx, decode)                                          // and so is the decode error coming back
	r.record(ctx, fmt.Errorf("watch closed: %w", errors.New("x"))) // an api error
	got := logs.get()

	want := []string{
		"error could not decode retrieved objects, retrying resource=*v1.widget suppressed=0 err=" + decode.Error(),
		// 10 failures 30s apart span 4m30s: below 5 minutes, so one entry.
		"warn list or watch failed, retrying resource=*v1.widget suppressed=9 err=" + forbidden.Error(),
		"error could not decode retrieved objects, retrying resource=*v1.widget suppressed=0 err=" + decode.Error(),
		"warn list or watch failed, retrying resource=*v1.widget suppressed=0 err=watch closed: x",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got logs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rec.counts[retrieveDecode] != 11 || rec.counts[retrieveAPI] != 2 {
		t.Errorf("got counts %v, want 11 decode and 2 api", rec.counts)
	}

	// Five minutes after the last entry, the same failure is logged again.
	clk.SetTime(clk.Now().Add(retrieveErrorLogInterval))
	r.record(ctx, fmt.Errorf("watch closed: %w", errors.New("x")))
	if n := len(logs.get()); n != len(want)+1 {
		t.Errorf("got %d entries, want %d: a lasting failure is logged again after the interval", n, len(want)+1)
	}
	if err := r.lastError(); err == nil || errors.Is(err, ErrDecode) || !strings.HasPrefix(err.Error(), "widgets: could not list or watch *v1.widget: ") {
		t.Errorf("got last error %v, want the api error naming the controller and the resource", err)
	}
}

func TestAClosedWatchIsNeitherCountedNorKept(t *testing.T) {
	logs := &entries{}
	rec := &kinds{counts: map[string]int{}}
	r := &retrieveErrors{controller: "widgets", log: logs, rec: rec, clock: clocktesting.NewFakePassiveClock(time.Now())}
	for _, err := range []error{
		fmt.Errorf("watch: %w", io.ErrUnexpectedEOF),
		io.EOF,
		apierrors.NewResourceExpired("too old resource version"),
	} {
		r.record(context.Background(), err)
	}
	if len(rec.counts) != 0 || r.lastError() != nil {
		t.Errorf("got counts %v and last error %v, want none", rec.counts, r.lastError())
	}
	for _, l := range logs.get() {
		if !strings.HasPrefix(l, "debug ") {
			t.Errorf("got %q, want only debug entries", l)
		}
	}
}
