package controller

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"
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
	// Controllers given the same *Shared (see NewShared) share one cache
	// instead.
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

	// WatchIdleTimeout restarts a watch that received nothing, not even a
	// bookmark, for this long: a stream that died silently (a proxy that
	// stopped forwarding, a stuck connection) is replaced by a new watch
	// from the last version the cache saw, instead of leaving the cache
	// stale until the watch's own timeout of 5 to 10 minutes. The API
	// server sends an idle watch a bookmark about every minute. Default 3
	// minutes; negative: silent watches are left alone, for a Retriever
	// whose watches send no bookmarks.
	WatchIdleTimeout time.Duration

	// Transform, if set, is applied to every object before it enters the
	// cache, after managedFields are dropped: drop what else the handler
	// never reads (big annotations, say) to save memory. It must not keep a
	// reference to the input it modifies beyond the returned object, and it
	// must be idempotent: client-go may apply it more than once to the same
	// object (0.37 does, to the objects of a streamed initial list: as they
	// arrive, and as they enter the cache).
	Transform cache.TransformFunc
	// KeepManagedFields keeps metadata.managedFields in the cache and in
	// the objects handed to the handler. By default they are dropped before
	// objects enter the cache: server-side apply's bookkeeping is a large
	// share of a typical object (about a fifth of a pod) that handlers
	// rarely read. Objects returned by the API server's write calls still
	// carry them.
	KeepManagedFields bool
	// DisableDeepCopy hands the handler the cached object itself instead of
	// its own deep copy. Only for handlers that never mutate the object: a
	// mutation corrupts the cache shared by every later handling.
	DisableDeepCopy bool
	// HandleDuringSync starts handling objects as the initial list streams
	// in, instead of once the cache holds all of it: the first handlings
	// start sooner and handling overlaps with decoding. While the cache is
	// filling, a handler that reads other objects from a cache (this
	// controller's List, another controller's, a lister) may not find
	// objects that exist. HasSynced and List still wait for the full sync.
	// Each object is still handled once for the initial list, Transform
	// never runs on an object a handler reads, and with client-go 0.37 it
	// runs once per object (see stream.go): client-go hands a streamed list
	// to the cache only at its end, so the controller taps the stream and
	// queues each object as it arrives. It pays when handlers wait on I/O,
	// whose waits then overlap with the list; a handler with nothing to
	// wait for has little to overlap (measurements in bench/README.md).
	// With a Shared retriever, or when the API server cannot stream lists,
	// handling starts as objects enter the cache. Default false: handling
	// starts once the cache is complete.
	HandleDuringSync bool

	// Logger receives the controller's logs. Default log.Noop.
	Logger log.Logger
	// MetricsRecorder receives the controller's metrics. Default: none.
	MetricsRecorder MetricsRecorder
	// Clock drives every wait and timestamp of the controller (retries,
	// RequeueAfter, ProcessingTimeout, ShutdownTimeout, SetValidUntil, watch
	// idle timeouts, handling durations); tests inject a fake. Default the
	// real clock.
	Clock clock.WithTickerAndDelayedExecution
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
	defaultWatchIdleTimeout  = 3 * time.Minute
)

func (c *Config) defaults() {
	if c.ConcurrentWorkers <= 0 {
		c.ConcurrentWorkers = defaultConcurrentWorkers
	}
	// From here on, 0 is "never" for these three.
	c.ResyncInterval = orDefault(c.ResyncInterval, defaultResyncInterval)
	c.MaxRetries = orDefault(c.MaxRetries, defaultMaxRetries)
	c.WatchIdleTimeout = orDefault(c.WatchIdleTimeout, defaultWatchIdleTimeout)
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
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
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
	case isShared(c.Retriever) && (c.Transform != nil || c.KeepManagedFields):
		return fmt.Errorf("%w: a shared retriever's cache is shared: set Transform and KeepManagedFields in its SharedConfig", ErrInvalidConfig)
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
