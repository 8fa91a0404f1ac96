package controller

import (
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/kooperkit/kooper/kooper/log"
)

// Config configures a Controller. Zero values take the defaults stated on
// each field; Name, Handler and Retriever are required.
type Config struct {
	// Name identifies the controller in logs and metrics. Required.
	Name string
	// Handler is called with the latest state of each object. Required.
	Handler Handler
	// Retriever lists and watches the one resource type this controller
	// handles; each controller fills its own cache from it. Required.
	Retriever Retriever

	// ConcurrentWorkers is how many objects are handled at once. One object
	// is never handled by two workers at once. Default 3.
	ConcurrentWorkers int
	// ResyncInterval is how often every cached object is handled again even
	// if nothing changed, to repair drift in the world the handler manages.
	// Default 3 minutes; negative: never.
	ResyncInterval time.Duration

	// MaxRetries is how many times a failed handling is retried before the
	// object is dropped until its next change or resync, so an always-failing
	// object is handled 1 + MaxRetries times. Default 5; negative: each
	// change is handled once, an error never retried.
	MaxRetries int
	// RetryBaseDelay is the delay before the first retry; each further retry
	// of the same object doubles it (with up to 20% random jitter so retries
	// of many objects spread out), up to RetryMaxDelay. A success resets it.
	// Default 200ms.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the retry delay. Default 1 minute.
	RetryMaxDelay time.Duration

	// ProcessingTimeout bounds one handling: the handler's context is
	// cancelled when it elapses. Default 1 minute.
	ProcessingTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits, once its context is done,
	// for running handlers (whose contexts are cancelled at once) to return.
	// Under leader election it must stay below LeaseDuration - RenewDeadline
	// - RetryPeriod so that a new leader never overlaps an old one still
	// handling. Default 2 seconds.
	ShutdownTimeout time.Duration

	// Logger receives the controller's logs. Default log.Noop.
	Logger log.Logger
	// MetricsRecorder receives the controller's metrics. Default: none.
	MetricsRecorder MetricsRecorder
	// clock drives every wait and timestamp of the controller (retries,
	// RequeueAfter, ProcessingTimeout, ShutdownTimeout, SetValidUntil, watch
	// idle timeouts, handling durations). The real clock; the package's
	// tests set a fake one (export_test.go).
	clock clock.WithTickerAndDelayedExecution
}

// Defaults of Config's fields (each field's doc says it too).
const (
	defaultConcurrentWorkers = 3
	defaultResyncInterval    = 3 * time.Minute
	defaultMaxRetries        = 5
	defaultRetryBaseDelay    = 200 * time.Millisecond
	defaultRetryMaxDelay     = time.Minute
	defaultProcessingTimeout = time.Minute
	defaultShutdownTimeout   = 2 * time.Second
	defaultWatchIdleTimeout  = 3 * time.Minute // WithWatchIdleTimeout
)

func (c *Config) defaults() {
	if c.ConcurrentWorkers <= 0 {
		c.ConcurrentWorkers = defaultConcurrentWorkers
	}
	// From here on, 0 is "never" for these two.
	c.ResyncInterval = orDefault(c.ResyncInterval, defaultResyncInterval)
	c.MaxRetries = orDefault(c.MaxRetries, defaultMaxRetries)
	if c.RetryBaseDelay <= 0 {
		c.RetryBaseDelay = defaultRetryBaseDelay
	}
	if c.RetryMaxDelay <= 0 {
		c.RetryMaxDelay = defaultRetryMaxDelay
	}
	if c.ProcessingTimeout <= 0 {
		c.ProcessingTimeout = defaultProcessingTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = defaultShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = log.Noop
	}
	if c.MetricsRecorder == nil {
		c.MetricsRecorder = noopRecorder{}
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
}

func (c Config) validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: name is required", ErrInvalidConfig)
	case c.Handler == nil:
		return fmt.Errorf("%w: handler is required", ErrInvalidConfig)
	case c.Retriever == nil:
		return fmt.Errorf("%w: retriever is required", ErrInvalidConfig)
	case c.RetryMaxDelay < c.RetryBaseDelay:
		return fmt.Errorf("%w: retry max delay %s is below the base delay %s", ErrInvalidConfig, c.RetryMaxDelay, c.RetryBaseDelay)
	}
	return nil
}

// orDefault returns def for 0, 0 for a negative v ("never"), and v
// otherwise.
func orDefault[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
