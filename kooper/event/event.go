package event

import (
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("invalid event recorder config")

// errShutdown refuses writes once the Recorder is shut down.
var errShutdown = errors.New("event recorder is shut down")

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
}

func (c *Config) defaults() {
	if c.Scheme == nil {
		c.Scheme = scheme.Scheme
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
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	sink        *sink
	shutdown    sync.Once
}

// New returns a Recorder writing events through cfg.Client, and starts the
// goroutine that writes them. Call [Recorder.Shutdown] to stop it.
func New(cfg Config) (*Recorder, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &sink{next: &typedcorev1.EventSinkImpl{Interface: cfg.Client.CoreV1().Events("")}}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(cfg.Correlator))
	b.StartRecordingToSink(s)
	return &Recorder{
		broadcaster: b,
		recorder:    b.NewRecorder(cfg.Scheme, corev1.EventSource{Component: cfg.Component}),
		sink:        s,
	}, nil
}

// Normal queues an event of type Normal about obj: something worth telling
// a person that went as expected. reason is a short CamelCase word
// ("Created"); the message is fmt.Sprintf(msgFmt, args...).
func (r *Recorder) Normal(obj runtime.Object, reason, msgFmt string, args ...any) {
	r.recorder.Eventf(obj, corev1.EventTypeNormal, reason, msgFmt, args...)
}

// Warning queues an event of type Warning about obj: something a person may
// need to act on (an invalid spec, a dependency missing). Arguments are as
// for [Recorder.Normal].
func (r *Recorder) Warning(obj runtime.Object, reason, msgFmt string, args ...any) {
	r.recorder.Eventf(obj, corev1.EventTypeWarning, reason, msgFmt, args...)
}

// Shutdown stops the Recorder: it waits for a write in progress, gives up
// on queued events not yet written, and stops the background goroutine,
// which returns right after (client-go offers no way to wait for its very
// last instruction). Events recorded afterwards are dropped. Calling
// Shutdown again does nothing.
func (r *Recorder) Shutdown() {
	r.shutdown.Do(func() {
		// Stops accepting events and cancels the writer's retries.
		r.broadcaster.Shutdown()
		// Refuses the writes still queued and waits for the one in flight.
		r.sink.close()
	})
}

// sink passes writes to next until closed, and lets close wait for the
// write in progress.
type sink struct {
	next record.EventSink

	mu     sync.Mutex
	closed bool
	writes sync.WaitGroup
}

var _ record.EventSink = (*sink)(nil)

// begin reports whether a write may start and, if so, counts it.
func (s *sink) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.writes.Add(1)
	return true
}

func (s *sink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.writes.Wait()
}

func (s *sink) Create(e *corev1.Event) (*corev1.Event, error) {
	if !s.begin() {
		return nil, errShutdown
	}
	defer s.writes.Done()
	return s.next.Create(e)
}

func (s *sink) Update(e *corev1.Event) (*corev1.Event, error) {
	if !s.begin() {
		return nil, errShutdown
	}
	defer s.writes.Done()
	return s.next.Update(e)
}

func (s *sink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	if !s.begin() {
		return nil, errShutdown
	}
	defer s.writes.Done()
	return s.next.Patch(e, data)
}
