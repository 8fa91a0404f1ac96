package event

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("invalid event recorder config")

// Config configures a [Recorder].
type Config struct {
	// Client writes the events. Required.
	Client kubernetes.Interface
	// Component is the events' source, usually the operator's name; kubectl
	// shows it in the From column. Required.
	Component string
	// Scheme maps typed objects to their kind for the event's
	// involvedObject. Default client-go's kubernetes/scheme.Scheme, which
	// knows built-in kinds only.
	Scheme *runtime.Scheme
	// Correlator tunes client-go's event correlation. Zero fields keep
	// client-go's defaults: a per-object spam filter allowing a burst of 25
	// events, then one per 5 minutes (BurstSize, QPS), and events differing
	// only in their message folded into one "(combined from similar
	// events)" after 10 within 10 minutes (MaxEvents,
	// MaxIntervalInSeconds). An operator that records one event per action
	// on a busy object raises these.
	Correlator record.CorrelatorOptions

	// clock times the retries of unanswered writes, and the correlation
	// unless Correlator.Clock is set; nil is the real clock. Only this
	// package's tests set another (export_test.go).
	clock clock.Clock
}

func (c *Config) defaults() {
	if c.Scheme == nil {
		c.Scheme = scheme.Scheme
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.Correlator.Clock == nil {
		c.Correlator.Clock = c.clock
	}
}

func (c Config) validate() error {
	if c.Client == nil {
		return fmt.Errorf("%w: client is required", ErrInvalidConfig)
	}
	if c.Component == "" {
		return fmt.Errorf("%w: component is required", ErrInvalidConfig)
	}
	return nil
}

// Recorder records events about objects. It is safe for concurrent use.
// Build it with [New] and call [Recorder.Shutdown] when done.
type Recorder struct {
	client     kubernetes.Interface
	scheme     *runtime.Scheme
	source     corev1.EventSource
	correlator *record.EventCorrelator
	clock      clock.Clock
	// writes is the context of the writes: cancelled when Shutdown gives up.
	writes     context.Context
	stopWrites context.CancelFunc

	mu      sync.Mutex
	closed  bool          // Shutdown began: new events are dropped
	pending int           // events accepted and not yet written or dropped
	drained chan struct{} // closed when pending reaches 0 after closed
	// The queue and its goroutines, started by the first event (start):
	// broadcaster and recorder are nil until then.
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	shutdown    sync.Once

	// writing is held while an event is written: Shutdown takes it to wait
	// for the write in progress.
	writing sync.Mutex
}

// Retries of a write the API server did not answer (a network error): as
// client-go's recorder, up to maxTries, the first after a random share of
// retryDelay. Shutdown's deadline ends them sooner.
const (
	maxTries   = 12
	retryDelay = 10 * time.Second
)

// New returns a Recorder writing events through cfg.Client. It starts no
// goroutine: the first event recorded starts the two that queue and write
// events, and [Recorder.Shutdown] stops them. A Recorder that never records
// an event holds no goroutine, Shutdown or not.
func New(cfg Config) (*Recorder, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The events' source host, which kubectl describe shows after the
	// component: in a pod, the pod's name.
	host, _ := os.Hostname()
	writes, stop := context.WithCancel(context.Background())
	return &Recorder{
		client:     cfg.Client,
		scheme:     cfg.Scheme,
		source:     corev1.EventSource{Component: cfg.Component, Host: host},
		correlator: record.NewEventCorrelatorWithOptions(cfg.Correlator),
		clock:      cfg.clock,
		writes:     writes,
		stopWrites: stop,
		drained:    make(chan struct{}),
	}, nil
}

// start starts the queue and the writing of what it delivers: two
// goroutines, client-go's. r.mu is held.
func (r *Recorder) start() {
	// client-go's broadcaster queues the events and builds them; this
	// package correlates and writes them, so it knows when each is done.
	r.broadcaster = record.NewBroadcaster()
	r.broadcaster.StartEventWatcher(r.deliver)
	r.recorder = r.broadcaster.NewRecorder(r.scheme, r.source)
}

// deliver writes e, unless Shutdown gave up on the queue: it then drops e
// at once, without a request.
func (r *Recorder) deliver(e *corev1.Event) {
	r.writing.Lock()
	defer r.writing.Unlock()
	if r.writes.Err() != nil {
		r.done()
		return
	}
	r.write(e)
}

// Normal queues an event of type Normal about obj: something worth telling
// a person that went as expected. reason is a short CamelCase word
// ("Created"); the message is fmt.Sprintf(msgFmt, args...).
func (r *Recorder) Normal(obj runtime.Object, reason, msgFmt string, args ...any) {
	r.record(obj, corev1.EventTypeNormal, reason, msgFmt, args...)
}

// Warning queues an event of type Warning about obj: something a person may
// need to act on (an invalid spec, a dependency missing). Arguments are as
// for [Recorder.Normal].
func (r *Recorder) Warning(obj runtime.Object, reason, msgFmt string, args ...any) {
	r.record(obj, corev1.EventTypeWarning, reason, msgFmt, args...)
}

func (r *Recorder) record(obj runtime.Object, typ, reason, msgFmt string, args ...any) {
	// An object whose kind the scheme does not know makes no event (client-go
	// logs why): count only what will reach write.
	_, refErr := reference.GetReference(r.scheme, obj)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	if r.recorder == nil {
		r.start()
	}
	if refErr == nil {
		r.pending++
	}
	rec := r.recorder
	r.mu.Unlock()
	rec.Eventf(obj, typ, reason, msgFmt, args...)
}

// done counts one accepted event as written or dropped.
func (r *Recorder) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending--
	if r.closed && r.pending == 0 {
		close(r.drained)
	}
}

// Shutdown stops the Recorder. Events recorded from now on are dropped;
// those already queued are written until ctx is done, and then given up,
// with the write in progress cancelled. It returns once no write is in
// progress (a client-go clientset's returns at once when its context is
// cancelled) and the Recorder's goroutines are stopped: they return at once,
// with nothing left to do (client-go offers no way to wait for a goroutine's
// very last instruction). Calling Shutdown again does nothing.
func (r *Recorder) Shutdown(ctx context.Context) {
	r.shutdown.Do(func() {
		r.mu.Lock()
		r.closed = true
		empty := r.pending == 0
		broadcaster := r.broadcaster
		r.mu.Unlock()
		if !empty {
			select {
			case <-r.drained:
			case <-ctx.Done():
			}
		}
		r.stopWrites()
		if broadcaster == nil {
			return // nothing was recorded: nothing started
		}
		// Stops the queue's goroutine (it returns once that has) and the
		// one delivering events, which drops what is left (deliver).
		broadcaster.Shutdown()
		// Wait for the write in progress, cancelled, to return.
		r.writing.Lock()
		defer r.writing.Unlock()
	})
}

// write correlates e (folding repeats, rate limiting per object) and writes
// the result, retrying what the API server did not answer. It runs on the
// goroutine client-go's broadcaster delivers events on, one at a time.
func (r *Recorder) write(e *corev1.Event) {
	defer r.done()
	ev := *e // other watchers of the broadcaster see the original
	result, err := r.correlator.EventCorrelate(&ev)
	if err != nil {
		utilruntime.HandleErrorWithContext(r.writes, err, "Event correlation failed")
	}
	if result.Skip {
		return
	}
	for tries := 1; ; tries++ {
		if r.writeOnce(result.Event, result.Patch) {
			return
		}
		if tries == maxTries {
			klog.FromContext(r.writes).Error(nil, "Unable to write event (retry limit exceeded)", "event", klog.KObj(result.Event))
			return
		}
		delay := retryDelay
		if tries == 1 {
			delay = time.Duration(rand.Float64() * float64(delay))
		}
		timer := r.clock.NewTimer(delay)
		select {
		case <-r.writes.Done():
			timer.Stop()
			klog.FromContext(r.writes).Error(nil, "Unable to write event (recorder shut down)", "event", klog.KObj(result.Event))
			return
		case <-timer.C():
		}
	}
}

// writeOnce creates e, or patches it when the correlator folded it into an
// earlier one. It reports whether e is done with: written, or refused for
// good.
func (r *Recorder) writeOnce(e *corev1.Event, patch []byte) bool {
	events := r.client.CoreV1().Events(e.Namespace)
	var (
		written *corev1.Event
		err     error
	)
	if e.Count > 1 {
		written, err = events.PatchWithEventNamespaceWithContext(r.writes, e, patch)
	}
	if e.Count <= 1 || apierrors.IsNotFound(err) {
		e.ResourceVersion = ""
		written, err = events.CreateWithEventNamespaceWithContext(r.writes, e)
	}
	if err == nil {
		r.correlator.UpdateState(written)
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) || r.writes.Err() != nil {
		// The server answered: the event is malformed, or its namespace is
		// going away. Or the recorder gave up. Either way, no retry.
		if !apierrors.IsAlreadyExists(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			klog.FromContext(r.writes).Error(err, "Server rejected event (will not retry)", "event", klog.KObj(e))
		}
		return true
	}
	klog.FromContext(r.writes).Error(err, "Unable to write event (may retry after sleeping)", "event", klog.KObj(e))
	return false
}
