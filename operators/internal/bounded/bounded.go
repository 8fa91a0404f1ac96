// Package bounded bounds what the callers of a webhook can make it spend.
// Anyone who reaches a webhook's port can call it, without credentials
// (the API server does not authenticate to webhooks unless the cluster is
// set up to), so no bound may depend on who is asking. The admission
// webhook (operators/pod-terminator/internal/webhook) and the conversion
// webhook (operators/internal/conversion) both serve through Limits.
package bounded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/log"
)

// Limits are the bounds on one webhook's requests, applied by Handler
// before the request reaches the handler that decodes it.
type Limits struct {
	// What a request carries, for messages: "admission review".
	What string
	// AtOnce is how many requests are handled at once. Beyond it a
	// request is answered at once with 429 Too Many Requests, before its
	// body is read.
	AtOnce int
	// MaxBytes bounds a request's body, read whole before next sees it:
	// larger is answered 413 Request Entity Too Large, having read no
	// more.
	MaxBytes int64
	// MaxTime is the most a request may take, reading its body included
	// (a sender trickling it would otherwise hold a slot for the server's
	// read timeout): next's context ends then. A shorter timeout parameter
	// from the API server (?timeout=5s) shortens it to four fifths of that,
	// so that the answer reaches the API server before it gives up.
	MaxTime time.Duration
	// Logger gets the refusals, at most one line per LogInterval each.
	Logger log.Logger
	// Clock times LogInterval. Default: the real clock.
	Clock clock.PassiveClock
}

// LogInterval is the least time between two log lines about the same
// failure (too many requests at once, a body too large or unreadable): a
// flood writes one line per interval, counting the lines it held back as
// "suppressed", not one line per request.
const LogInterval = 10 * time.Second

// Handler serves next within l.
func (l Limits) Handler(next http.Handler) http.Handler {
	if l.Clock == nil {
		l.Clock = clock.RealClock{}
	}
	return &handler{
		Limits: l,
		next:   next,
		slots:  make(chan struct{}, l.AtOnce),
		busy:   NewThrottle(l.Clock),
		body:   NewThrottle(l.Clock),
	}
}

type handler struct {
	Limits
	next       http.Handler
	slots      chan struct{}
	busy, body *Throttle
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		h.busy.Log(h.Logger.Warn, "too many "+h.What+"s at once, refusing", "limit", h.AtOnce)
		http.Error(w, fmt.Sprintf("Too Many Requests: more than %d %ss at once; try again later", h.AtOnce, h.What), http.StatusTooManyRequests)
		return
	}
	d := h.time(r)
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	// Not supported by every ResponseWriter (a test's recorder): then
	// only the size is bounded.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.MaxBytes))
	if err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			h.body.Log(h.Logger.Warn, h.What+" too large, refusing", "limit", h.MaxBytes)
			http.Error(w, fmt.Sprintf("Request Entity Too Large: %s %s may have at most %d bytes", article(h.What), h.What, h.MaxBytes), http.StatusRequestEntityTooLarge)
			return
		}
		h.body.Log(h.Logger.Warn, "could not read "+article(h.What)+" "+h.What, "err", err)
		http.Error(w, "Bad Request: could not read the body", http.StatusBadRequest)
		return
	}
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.next.ServeHTTP(w, r)
}

// time is how long r may take: MaxTime, or four fifths of the API
// server's timeout parameter if that is shorter.
func (h *handler) time(r *http.Request) time.Duration {
	d := h.MaxTime
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 {
		d = min(d, t*4/5)
	}
	return d
}

// article is the indefinite article of what.
func article(what string) string {
	if what != "" && strings.ContainsRune("aeiou", rune(what[0])) {
		return "an"
	}
	return "a"
}

// Throttle lets one log line through per LogInterval, and counts the lines
// it holds back in between, which the next line reports.
type Throttle struct {
	clock clock.PassiveClock

	mu         sync.Mutex
	next       time.Time
	suppressed int
}

// NewThrottle returns a Throttle timed by clk.
func NewThrottle(clk clock.PassiveClock) *Throttle { return &Throttle{clock: clk} }

// Log writes msg with kv through write (a Logger's Warn or Error), adding
// "suppressed", the lines held back since the last one, unless a line went
// through less than LogInterval ago: then it only counts it.
func (t *Throttle) Log(write func(msg string, kv ...any), msg string, kv ...any) {
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
