package bounded_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/bounded"
)

// The webhooks' own tests (operators/pod-terminator/internal/webhook's
// limits_test.go, operators/internal/conversion's) send their reviews
// through these limits too; these cases are the limits alone.

func TestARequestWithinTheLimitsReachesTheHandlerWithItsBodyAndADeadline(t *testing.T) {
	tests := []struct {
		name  string
		query string
		want  time.Duration // the handler's context's time left, about
	}{
		{name: "no timeout parameter", want: 4 * time.Second},
		{name: "a longer one", query: "?timeout=30s", want: 4 * time.Second},
		{name: "a shorter one: four fifths of it", query: "?timeout=2s", want: 1600 * time.Millisecond},
		{name: "one that does not parse", query: "?timeout=soon", want: 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			var left time.Duration
			h := bounded.Limits{What: "admission review", AtOnce: 1, MaxBytes: 10, MaxTime: 4 * time.Second, Logger: log.Noop}.Handler(
				http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					got = string(b)
					deadline, ok := r.Context().Deadline()
					if !ok {
						t.Error("the handler's context has no deadline")
					}
					left = time.Until(deadline)
				}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/"+tt.query, strings.NewReader("0123456789")))
			if rec.Code != http.StatusOK || got != "0123456789" {
				t.Fatalf("got %d and body %q, want 200 and the body whole", rec.Code, got)
			}
			if left > tt.want || left < tt.want-time.Second {
				t.Errorf("the handler had %s left, want about %s", left, tt.want)
			}
		})
	}
}

func TestBeyondTheLimitsARequestIsRefusedSayingWhy(t *testing.T) {
	for _, what := range []string{"admission review", "conversion review"} {
		t.Run(what, func(t *testing.T) {
			logs := &lines{}
			release, entered := make(chan struct{}), make(chan struct{})
			h := bounded.Limits{What: what, AtOnce: 2, MaxBytes: 4, MaxTime: time.Second, Logger: logs, Clock: clocktesting.NewFakePassiveClock(time.Now())}.Handler(
				http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
					entered <- struct{}{}
					<-release
				}))
			if rec := serve(h, "big body"); rec.Code != http.StatusRequestEntityTooLarge ||
				!strings.Contains(rec.Body.String(), fmt.Sprintf("Request Entity Too Large: %s may have at most 4 bytes", map[string]string{"admission review": "an admission review", "conversion review": "a conversion review"}[what])) {
				t.Errorf("a body too large: got %d %q", rec.Code, rec.Body)
			}
			var held sync.WaitGroup
			for range 2 {
				held.Go(func() { serve(h, "ok") })
				<-entered
			}
			for range 3 {
				if rec := serve(h, "ok"); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "more than 2 "+what+"s at once") {
					t.Errorf("one beyond the two held: got %d %q", rec.Code, rec.Body)
				}
			}
			close(release)
			held.Wait()
			// One line per refusal kind within LogInterval: the clock
			// stands still.
			if got := logs.count("too many " + what + "s at once, refusing"); got != 1 {
				t.Errorf("%d lines about 3 refusals, want 1:\n%s", got, logs)
			}
			if got := logs.count(what + " too large, refusing"); got != 1 {
				t.Errorf("%d lines about the body too large, want 1:\n%s", got, logs)
			}
		})
	}
}

func TestTheThrottleCountsWhatItHeldBack(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	th := bounded.NewThrottle(clk)
	logs := &lines{}
	for range 4 {
		th.Log(logs.Warn, "busy")
	}
	clk.SetTime(clk.Now().Add(bounded.LogInterval))
	th.Log(logs.Warn, "busy")
	if got, want := logs.String(), "busy suppressed=0\nbusy suppressed=3\n"; got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}

func serve(h http.Handler, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/", strings.NewReader(body)))
	return rec
}

// lines is a log.Logger that keeps each line as its message and values.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) write(msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(msg)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&l.b, " %v=%v", kv[i], kv[i+1])
	}
	l.b.WriteString("\n")
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lines) count(msg string) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.HasPrefix(line, msg) {
			n++
		}
	}
	return n
}

func (l *lines) Debug(msg string, kv ...any) { l.write(msg, kv...) }
func (l *lines) Info(msg string, kv ...any)  { l.write(msg, kv...) }
func (l *lines) Warn(msg string, kv ...any)  { l.write(msg, kv...) }
func (l *lines) Error(msg string, kv ...any) { l.write(msg, kv...) }
func (l *lines) With(...any) log.Logger      { return l }
