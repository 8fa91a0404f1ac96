package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

// Beyond MaxReviews reviews at once, a request is answered 429 at once,
// before its body is read or any access question asked; the API server
// then refuses the write (failurePolicy Fail). A slot freed is used again.
func TestReviewsBeyondTheLimitAreRefusedAtOnce(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var asked atomic.Int32
	blocking := webhook.AccessFunc(func(ctx context.Context, _ authenticationv1.UserInfo, _ string) (bool, error) {
		asked.Add(1)
		entered <- struct{}{}
		<-release
		return true, nil
	})
	logs := &recordingLogger{}
	h, err := webhook.New(webhook.Config{Access: blocking, Logger: logs, Clock: clocktesting.NewFakePassiveClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	body := reviewBody(t, request(t, admissionv1.Create, "alice", nil, terminator(in("shop"))))
	post := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body)))
		return rec
	}
	var inFlight sync.WaitGroup
	for range webhook.MaxReviews {
		inFlight.Go(func() {
			if rec := post(); rec.Code != http.StatusOK {
				t.Errorf("a review within the limit: got HTTP %d, want 200", rec.Code)
			}
		})
		<-entered // it holds its slot, waiting for its answer
	}
	const beyond = 5
	for range beyond {
		answered := make(chan *httptest.ResponseRecorder, 1)
		inFlight.Go(func() { answered <- post() })
		select {
		case rec := <-answered:
			if rec.Code != http.StatusTooManyRequests {
				t.Errorf("a review beyond the limit: got HTTP %d (%s), want 429", rec.Code, rec.Body)
			}
		case <-entered:
			t.Error("a review beyond the limit was handled: it asked an access question")
		}
	}
	if got := asked.Load(); got != webhook.MaxReviews {
		t.Errorf("got %d access questions, want %d: none for the reviews beyond the limit", got, webhook.MaxReviews)
	}
	if got := logs.count("too many admission reviews at once, refusing"); got != 1 {
		t.Errorf("got %d log lines about %d refusals, want 1 per LogInterval", got, beyond)
	}
	close(release)
	inFlight.Wait()
	go func() {
		for range entered {
		}
	}()
	if rec := post(); rec.Code != http.StatusOK {
		t.Errorf("once the slots are free: got HTTP %d, want 200", rec.Code)
	}
	close(entered)
}

// A review gets MaxReviewTime, or four fifths of the timeout the API
// server sends if that is shorter: its access questions are asked within
// that deadline, and when they cannot be answered in time the review is
// refused (fail closed) before the API server gives up.
func TestAReviewHasADeadlineWithinTheAPIServersTimeout(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		wantMax time.Duration
	}{
		{name: "without a timeout parameter", wantMax: webhook.MaxReviewTime},
		{name: "the API server's timeout of webhook.yaml", query: "?timeout=5s", wantMax: webhook.MaxReviewTime},
		{name: "a longer timeout", query: "?timeout=30s", wantMax: webhook.MaxReviewTime},
		{name: "a shorter timeout", query: "?timeout=2s", wantMax: 1600 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var deadlines []time.Duration
			var mu sync.Mutex
			a := webhook.AccessFunc(func(ctx context.Context, _ authenticationv1.UserInfo, _ string) (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				d, ok := ctx.Deadline()
				if !ok {
					t.Error("got an access question without a deadline")
				}
				deadlines = append(deadlines, time.Until(d))
				return true, nil
			})
			h := newWebhook(t, a)
			rec := httptest.NewRecorder()
			body := reviewBody(t, request(t, admissionv1.Create, "alice", nil, terminator(in("shop"))))
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path+tt.query, bytes.NewReader(body)))
			if rec.Code != http.StatusOK {
				t.Fatalf("got HTTP %d, want 200", rec.Code)
			}
			if len(deadlines) == 0 {
				t.Fatal("access was never asked")
			}
			for _, d := range deadlines {
				if d > tt.wantMax {
					t.Errorf("got an access question with %s left, want at most %s", d, tt.wantMax)
				}
			}
		})
	}
	t.Run("questions that cannot be answered in time", func(t *testing.T) {
		waiting := webhook.AccessFunc(func(ctx context.Context, _ authenticationv1.UserInfo, _ string) (bool, error) {
			select {
			case <-ctx.Done(): // as client-go's rate limiter does, or sooner
				return false, ctx.Err()
			case <-time.After(10 * time.Second):
				t.Error("got an access question without a deadline (waited 10s)")
				return false, errors.New("no deadline")
			}
		})
		h := newWebhook(t, waiting)
		rec := httptest.NewRecorder()
		body := reviewBody(t, request(t, admissionv1.Create, "alice", nil, terminator(in("shop"))))
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path+"?timeout=100ms", bytes.NewReader(body)))
		resp := decodeResponse(t, rec)
		const want = `could not check whether user "alice" may delete pods in every namespace this PodTerminator targets, which it needs, so it is refused; try again later`
		if resp.Allowed || resp.Result == nil || resp.Result.Message != want {
			t.Errorf("got allowed %v, result %+v; want refused with %q", resp.Allowed, resp.Result, want)
		}
	})
}

// A body over MaxBodyBytes is refused with 413 having read no more than
// the limit: nothing of it is decoded, no question asked.
func TestABodyOverTheLimitIsRefusedUndecoded(t *testing.T) {
	a := &access{}
	h := newWebhook(t, a)
	tests := []struct {
		name     string
		size     int
		wantCode int
	}{
		{name: "6 MiB", size: 6 << 20, wantCode: http.StatusRequestEntityTooLarge},
		{name: "one byte over", size: webhook.MaxBodyBytes + 1, wantCode: http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &countingReader{r: io.LimitReader(zeros{}, int64(tt.size))}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, body))
			if rec.Code != tt.wantCode {
				t.Errorf("got HTTP %d (%s), want %d", rec.Code, rec.Body, tt.wantCode)
			}
			if body.n > webhook.MaxBodyBytes+1 {
				t.Errorf("got %d bytes read, want at most %d", body.n, webhook.MaxBodyBytes+1)
			}
		})
	}
	t.Run("ten 6 MiB bodies at once", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				body := &countingReader{r: io.LimitReader(zeros{}, 6<<20)}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, body))
				if rec.Code != http.StatusRequestEntityTooLarge && rec.Code != http.StatusTooManyRequests {
					t.Errorf("got HTTP %d, want 413 (or 429 beyond MaxReviews)", rec.Code)
				}
				if body.n > webhook.MaxBodyBytes+1 {
					t.Errorf("got %d bytes read, want at most %d", body.n, webhook.MaxBodyBytes+1)
				}
			})
		}
		wg.Wait()
	})
	if a.asked > 0 {
		t.Errorf("got %d access questions, want none for bodies over the limit", a.asked)
	}
	t.Run("a review just under the limit is answered", func(t *testing.T) {
		pt := terminator(in("shop"))
		pt.Annotations = map[string]string{"padding": ""}
		size := len(reviewBody(t, request(t, admissionv1.Create, "admin", nil, pt)))
		pt.Annotations["padding"] = strings.Repeat("x", webhook.MaxBodyBytes-size)
		body := reviewBody(t, request(t, admissionv1.Create, "admin", nil, pt))
		if len(body) != webhook.MaxBodyBytes {
			t.Fatalf("got a body of %d bytes, want %d", len(body), webhook.MaxBodyBytes)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body)))
		if resp := decodeResponse(t, rec); !resp.Allowed {
			t.Errorf("got refused (%+v), want allowed", resp.Result)
		}
	})
}

// A sender trickling its body holds its slot no longer than the review's
// time: the body must have arrived by then.
func TestASlowBodyHoldsASlotNoLongerThanTheReviewsTime(t *testing.T) {
	srv := httptest.NewServer(newWebhook(t, &access{}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Only if the server never answers: then the test fails.
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	// Headers announcing a body that never comes.
	fmt.Fprintf(conn, "POST %s?timeout=100ms HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", webhook.Path)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("got HTTP %d, want 400: the body did not arrive in time", resp.StatusCode)
	}
}

// Failures that anyone can cause, one per request (access checks failing
// under a flood, malformed reviews), are logged once per LogInterval with
// the number held back since, not once per request.
func TestFailuresAreLoggedOncePerInterval(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	tests := []struct {
		name string
		body func(t *testing.T) []byte
		msg  string
	}{
		{
			name: "failing access checks",
			body: func(t *testing.T) []byte {
				return reviewBody(t, request(t, admissionv1.Create, "alice", nil, terminator(in("shop"))))
			},
			msg: "could not check access",
		},
		{name: "malformed reviews", body: func(*testing.T) []byte { return []byte("not a review") }, msg: "could not parse body to model review"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &recordingLogger{}
			h, err := webhook.New(webhook.Config{
				Rules:  validation.Rules{Namespace: "kooper-pod-terminator"},
				Access: &access{err: errors.New("client rate limiter Wait returned an error")},
				Logger: logs, Clock: clk,
			})
			if err != nil {
				t.Fatal(err)
			}
			send := func(n int) {
				for range n {
					h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(tt.body(t))))
				}
			}
			send(100)
			clk.SetTime(clk.Now().Add(webhook.LogInterval))
			send(1)
			got := logs.lines()
			want := []string{
				fmt.Sprintf("%s suppressed=0", tt.msg),
				fmt.Sprintf("%s suppressed=99", tt.msg),
			}
			if len(got) != len(want) {
				t.Fatalf("got %d lines %q, want %d", len(got), got, len(want))
			}
			for i := range want {
				if !strings.HasPrefix(got[i], tt.msg) || !strings.HasSuffix(got[i], want[i][len(tt.msg):]) {
					t.Errorf("line %d: got %q, want %q", i, got[i], want[i])
				}
			}
		})
	}
}

// recordingLogger keeps the Warn and Error lines as "msg k=v..." with
// "suppressed=n" last.
type recordingLogger struct {
	mu   sync.Mutex
	kept []string
}

func (l *recordingLogger) Debug(string, ...any) {}
func (l *recordingLogger) Info(string, ...any)  {}
func (l *recordingLogger) Warn(msg string, kv ...any) {
	l.add(msg, kv)
}
func (l *recordingLogger) Error(msg string, kv ...any) { l.add(msg, kv) }
func (l *recordingLogger) With(...any) log.Logger      { return l }

func (l *recordingLogger) add(msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := msg
	var suppressed any
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "suppressed" {
			suppressed = kv[i+1]
		}
	}
	if suppressed != nil {
		line += fmt.Sprintf(" suppressed=%v", suppressed)
	}
	l.kept = append(l.kept, line)
}

func (l *recordingLogger) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.kept...)
}

func (l *recordingLogger) count(msg string) int {
	n := 0
	for _, line := range l.lines() {
		if strings.HasPrefix(line, msg) {
			n++
		}
	}
	return n
}

// reviewBody is the AdmissionReview of req, as JSON.
func reviewBody(t *testing.T, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func decodeResponse(t *testing.T, rec *httptest.ResponseRecorder) *admissionv1.AdmissionResponse {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("got HTTP %d: %s", rec.Code, rec.Body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("could not decode the answer %s: %v", rec.Body, err)
	}
	return out.Response
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
