package webhook

import (
	"net/http"
	"time"

	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/bounded"
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
	LogInterval = bounded.LogInterval
)

// newLimits applies MaxReviews, MaxBodyBytes and MaxReviewTime to the
// requests before next decodes them.
func newLimits(next http.Handler, logger log.Logger, clk clock.PassiveClock) http.Handler {
	return bounded.Limits{
		What:     "admission review",
		AtOnce:   MaxReviews,
		MaxBytes: MaxBodyBytes,
		MaxTime:  MaxReviewTime,
		Logger:   logger,
		Clock:    clk,
	}.Handler(next)
}
