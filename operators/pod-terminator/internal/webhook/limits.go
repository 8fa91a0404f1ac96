package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/log"
)

// The bounds on what the webhook's callers can make it spend. Anyone who
// reaches its port can call it, without credentials (the API server does
// not authenticate to webhooks unless the cluster is set up to), so none
// of these may depend on who is asking.
const (
	// MaxReviews is how many AdmissionReviews are handled at once. Beyond
	// it a request is answered at once with HTTP 429 Too Many Requests,
	// before its body is read: the API server counts that as a failed call
	// and, with failurePolicy Fail, refuses the write (fail closed).
	MaxReviews = 8
	// MaxBodyBytes bounds a request's body, read before anything is
	// decoded: larger is answered 413 Request Entity Too Large, having
	// read no more. A PodTerminator is a few KiB; an AdmissionReview holds
	// it twice on an update. With MaxReviews, at most 8 MiB of bodies are
	// held at once (a few times that once decoded), far below the
	// Deployment's memory limit.
	MaxBodyBytes = 1 << 20
	// MaxReviewTime is the most a review may take, reading its body and
	// asking the access questions included, so that the API server (which
	// waits timeoutSeconds, 5 in webhook.yaml) gets an answer: a review
	// whose questions cannot all be answered in time is refused (fail
	// closed). A shorter timeout the API server sends (its timeout
	// parameter) shortens it to four fifths of that.
	MaxReviewTime = 4 * time.Second
	// LogInterval is the least time between two log lines about the same
	// failure (the webhook busy, an access check failed, a malformed
	// review): a flood writes one line per interval, counting the lines it
	// held back as "suppressed", not one line per request.
	LogInterval = 10 * time.Second
)

// limits applies MaxReviews, MaxBodyBytes and MaxReviewTime to the
// requests before next decodes them.
type limits struct {
	next  http.Handler
	slots chan struct{}
	log   log.Logger
	busy  *throttle
	body  *throttle
}

func newLimits(next http.Handler, logger log.Logger, clk clock.PassiveClock) *limits {
	return &limits{
		next:  next,
		slots: make(chan struct{}, MaxReviews),
		log:   logger,
		busy:  newThrottle(clk),
		body:  newThrottle(clk),
	}
}

func (l *limits) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case l.slots <- struct{}{}:
		defer func() { <-l.slots }()
	default:
		l.busy.log(l.log.Warn, "too many admission reviews at once, refusing", "limit", MaxReviews)
		http.Error(w, fmt.Sprintf("Too Many Requests: more than %d admission reviews at once; try again later", MaxReviews), http.StatusTooManyRequests)
		return
	}
	d := reviewTime(r)
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	// The body must arrive in time too: a sender trickling it would hold a
	// slot for the server's read timeout (30s) otherwise. Not supported
	// by every ResponseWriter (a test's recorder): then only the size is
	// bounded.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			l.body.log(l.log.Warn, "admission review too large, refusing", "limit", MaxBodyBytes)
			http.Error(w, fmt.Sprintf("Request Entity Too Large: an admission review may have at most %d bytes", MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		l.body.log(l.log.Warn, "could not read an admission review", "err", err)
		http.Error(w, "Bad Request: could not read the body", http.StatusBadRequest)
		return
	}
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	l.next.ServeHTTP(w, r)
}

// reviewTime is how long the review r may take: MaxReviewTime, or four
// fifths of the API server's timeout parameter if that is shorter.
func reviewTime(r *http.Request) time.Duration {
	d := MaxReviewTime
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 {
		d = min(d, t*4/5)
	}
	return d
}

// throttle lets one log line through per LogInterval, and counts the lines
// it holds back in between, which the next line reports.
type throttle struct {
	clock clock.PassiveClock

	mu         sync.Mutex
	next       time.Time
	suppressed int
}

func newThrottle(clk clock.PassiveClock) *throttle { return &throttle{clock: clk} }

// log writes msg with kv through write (a Logger's Warn or Error), adding
// "suppressed", the lines held back since the last one, unless a line went
// through less than LogInterval ago: then it only counts it.
func (t *throttle) log(write func(msg string, kv ...any), msg string, kv ...any) {
	t.mu.Lock()
	now := t.clock.Now()
	if now.Before(t.next) {
		t.suppressed++
		t.mu.Unlock()
		return
	}
	suppressed := t.suppressed
	t.next, t.suppressed = now.Add(LogInterval), 0
	t.mu.Unlock()
	write(msg, append(kv[:len(kv):len(kv)], "suppressed", suppressed)...)
}
