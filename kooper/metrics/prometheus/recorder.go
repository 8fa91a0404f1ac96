package prometheus

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/kooperkit/kooper/kooper/controller"
)

// Label names. Their values are bounded: see the package documentation.
const (
	labelController = "controller"
	labelSource     = "source"
	labelSuccess    = "success"
	labelReason     = "reason"
	labelKind       = "kind"
	labelGroup      = "group"
	labelMode       = "mode"
	labelCaughtUp   = "caught_up"
)

// sources are the values of the source label that get a cached series per
// controller, created at zero: every value a controller passes
// (controller.MetricsRecorder.IncQueuedEvent).
var sources = []string{
	"initial",
	"change",
	"resync",
	"retry",
	"requeue",
	"enqueue",
}

// defaultBuckets returns the upper bounds, in seconds, of every histogram
// of this package: 16 from 1ms doubling to 32.768s.
func defaultBuckets() []float64 {
	return prom.ExponentialBuckets(0.001, 2, 16)
}

// Recorder records controller metrics in Prometheus. It implements
// [controller.MetricsRecorder], the leader election Recorder (SetLeader)
// and the Recorder of package x/sharding (SetShards); one Recorder serves
// every controller of a process. Create it with [New]. It is safe for
// concurrent use, and a nil *Recorder records nothing.
type Recorder struct {
	queued    *prom.CounterVec
	queueWait *prom.HistogramVec
	handle    *prom.HistogramVec
	retries   *prom.CounterVec
	dropped   *prom.CounterVec
	panics    *prom.CounterVec
	queueLen  *prom.GaugeVec
	leader    *prom.GaugeVec
	retrieve  *prom.CounterVec
	cacheWait *prom.HistogramVec

	// The sharding gauges, and the mode last given to SetShards by group,
	// so that a new mode's series replaces the old one's.
	slots      *prom.GaugeVec
	groupSlots *prom.GaugeVec
	modesMu    sync.Mutex
	modes      map[string]string

	// children caches each controller's series: controller name to
	// *children. Controller names are few and long-lived, so entries are
	// never removed.
	children sync.Map
}

var _ controller.MetricsRecorder = (*Recorder)(nil)

// children holds one controller's series, looked up once so that recording
// is a map load and an atomic add.
type children struct {
	queued                      map[string]prom.Counter // by source; read-only once built
	queueWait                   prom.Observer
	handleSuccess, handleFailed prom.Observer
	retries                     prom.Counter
	droppedMaxRetries           prom.Counter
	droppedTerminal             prom.Counter
	panics                      prom.Counter
	queueLen                    prom.Gauge
	retrieveDecode, retrieveAPI prom.Counter
	cacheWaitCaughtUp           prom.Observer
	cacheWaitTimedOut           prom.Observer
}

// New creates a Recorder and registers its metrics on reg. Registration is
// all or nothing. It fails if reg is nil, or if reg already has these
// metrics, typically from another Recorder: that error wraps
// prometheus.AlreadyRegisteredError, and the fix is to share one Recorder.
func New(reg prom.Registerer) (*Recorder, error) {
	return newRecorder(reg, defaultBuckets())
}

// newRecorder is New with histograms of the given buckets: only this
// package's tests give others (export_test.go), to compare short outputs.
func newRecorder(reg prom.Registerer, buckets []float64) (*Recorder, error) {
	if reg == nil {
		return nil, errors.New("could not create metrics recorder: a prometheus.Registerer is required")
	}

	r := &Recorder{
		queued: prom.NewCounterVec(prom.CounterOpts{
			Name: "kooper_controller_queued_events_total",
			Help: "Object keys added to a controller's queue, by source: initial (the cache's first list), change (a watched add, update or delete), resync, retry (a failed handling), requeue (a RequeueAfter request) or enqueue (Controller.Enqueue, as a source given to controller.New queues its owner's key).",
		}, []string{labelController, labelSource}),
		queueWait: prom.NewHistogramVec(prom.HistogramOpts{
			Name:    "kooper_controller_queue_wait_seconds",
			Help:    "Time an object key waited in a controller's queue before a worker took it.",
			Buckets: buckets,
		}, []string{labelController}),
		handle: prom.NewHistogramVec(prom.HistogramOpts{
			Name:    "kooper_controller_handle_duration_seconds",
			Help:    "Time a controller's handler took per call; success is true when it returned no error.",
			Buckets: buckets,
		}, []string{labelController, labelSuccess}),
		retries: prom.NewCounterVec(prom.CounterOpts{
			Name: "kooper_controller_retries_total",
			Help: "Failed handlings that a controller will retry.",
		}, []string{labelController}),
		dropped: prom.NewCounterVec(prom.CounterOpts{
			Name: "kooper_controller_dropped_total",
			Help: "Failed object keys a controller gave up on, by reason: max_retries or terminal.",
		}, []string{labelController, labelReason}),
		panics: prom.NewCounterVec(prom.CounterOpts{
			Name: "kooper_controller_handler_panics_total",
			Help: "Handler panics a controller recovered from.",
		}, []string{labelController}),
		queueLen: prom.NewGaugeVec(prom.GaugeOpts{
			Name: "kooper_controller_queue_length",
			Help: "Object keys waiting in a controller's queue.",
		}, []string{labelController}),
		leader: prom.NewGaugeVec(prom.GaugeOpts{
			Name: "kooper_controller_leader",
			Help: "1 while this process holds the controller's leader election lease, 0 otherwise.",
		}, []string{labelController}),
		retrieve: prom.NewCounterVec(prom.CounterOpts{
			Name: "kooper_controller_retrieve_errors_total",
			Help: "Failed lists and watches of a controller's cache, by kind: decode (an answer the Go type cannot hold) or api.",
		}, []string{labelController, labelKind}),
		cacheWait: prom.NewHistogramVec(prom.HistogramOpts{
			Name:    "kooper_controller_cache_wait_seconds",
			Help:    "Time an object key whose handler wrote through a TrackWrites client was held before it was handled again, until the controller's caches had seen those writes; caught_up is false when the wait reached its bound (10s) and the key was handled anyway. Keys that did not wait are not counted.",
			Buckets: buckets,
		}, []string{labelController, labelCaughtUp}),
		slots: prom.NewGaugeVec(prom.GaugeOpts{
			Name: "kooper_sharding_slots",
			Help: "Slots of a sharded controller's group that this replica owns, by mode: server-side or client-side.",
		}, []string{labelGroup, labelMode}),
		groupSlots: prom.NewGaugeVec(prom.GaugeOpts{
			Name: "kooper_sharding_group_slots",
			Help: "Slots of a sharded controller's group, shared among its replicas.",
		}, []string{labelGroup}),
		modes: map[string]string{},
	}

	// One collector for all twelve metrics, so that registration either
	// succeeds for all of them or changes nothing.
	all := collectors{r.queued, r.queueWait, r.handle, r.retries, r.dropped, r.panics, r.queueLen, r.leader, r.retrieve, r.cacheWait, r.slots, r.groupSlots}
	if err := reg.Register(all); err != nil {
		if errors.As(err, new(prom.AlreadyRegisteredError)) {
			return nil, fmt.Errorf("could not register controller metrics, share one Recorder per registry instead of creating another: %w", err)
		}
		return nil, fmt.Errorf("could not register controller metrics: %w", err)
	}
	return r, nil
}

// IncQueuedEvent implements controller.MetricsRecorder. A source other
// than those a controller passes is recorded as given, with a slower
// lookup.
func (r *Recorder) IncQueuedEvent(controller string, source string) {
	if r == nil {
		return
	}
	if q, ok := r.forController(controller).queued[source]; ok {
		q.Inc()
		return
	}
	r.queued.WithLabelValues(controller, source).Inc()
}

// ObserveQueueWait implements controller.MetricsRecorder.
func (r *Recorder) ObserveQueueWait(controller string, d time.Duration) {
	if r == nil {
		return
	}
	r.forController(controller).queueWait.Observe(d.Seconds())
}

// ObserveHandling implements controller.MetricsRecorder.
func (r *Recorder) ObserveHandling(controller string, success bool, d time.Duration) {
	if r == nil {
		return
	}
	c := r.forController(controller)
	if success {
		c.handleSuccess.Observe(d.Seconds())
	} else {
		c.handleFailed.Observe(d.Seconds())
	}
}

// IncRetry implements controller.MetricsRecorder.
func (r *Recorder) IncRetry(controller string) {
	if r == nil {
		return
	}
	r.forController(controller).retries.Inc()
}

// IncDropped implements controller.MetricsRecorder. A reason other than
// "max_retries" or "terminal" is recorded as given, with a slower lookup.
func (r *Recorder) IncDropped(controllerName string, reason string) {
	if r == nil {
		return
	}
	c := r.forController(controllerName)
	switch reason {
	case "max_retries":
		c.droppedMaxRetries.Inc()
	case "terminal":
		c.droppedTerminal.Inc()
	default:
		r.dropped.WithLabelValues(controllerName, reason).Inc()
	}
}

// IncPanic implements controller.MetricsRecorder.
func (r *Recorder) IncPanic(controller string) {
	if r == nil {
		return
	}
	r.forController(controller).panics.Inc()
}

// AddQueueLength implements controller.MetricsRecorder.
func (r *Recorder) AddQueueLength(controller string, delta int) {
	if r == nil {
		return
	}
	r.forController(controller).queueLen.Add(float64(delta))
}

// IncRetrieveError implements controller.MetricsRecorder. A kind other
// than "decode" or "api" is recorded as given, with a slower lookup.
func (r *Recorder) IncRetrieveError(controllerName string, kind string) {
	if r == nil {
		return
	}
	c := r.forController(controllerName)
	switch kind {
	case "decode":
		c.retrieveDecode.Inc()
	case "api":
		c.retrieveAPI.Inc()
	default:
		r.retrieve.WithLabelValues(controllerName, kind).Inc()
	}
}

// ObserveCacheWait implements controller.MetricsRecorder.
func (r *Recorder) ObserveCacheWait(controller string, caughtUp bool, d time.Duration) {
	if r == nil {
		return
	}
	c := r.forController(controller)
	if caughtUp {
		c.cacheWaitCaughtUp.Observe(d.Seconds())
	} else {
		c.cacheWaitTimedOut.Observe(d.Seconds())
	}
}

// SetLeader sets kooper_controller_leader for name, the controller or lease
// the election is for: 1 when leading is true, 0 otherwise. A leader election
// runner calls it on every transition, starting with false while it waits.
func (r *Recorder) SetLeader(name string, leading bool) {
	if r == nil {
		return
	}
	v := 0.0
	if leading {
		v = 1
	}
	// Leadership changes rarely: no cache needed.
	r.leader.WithLabelValues(name).Set(v)
}

// SetShards implements the Recorder of package x/sharding. It sets
// kooper_sharding_slots for group name (the sharding.Config.Name) and mode
// ("server-side", "client-side", or "" until the mode is detected) to
// owned, the slots this replica handles, and kooper_sharding_group_slots
// for name to total, the slots of the group. A sharding.Runner calls it at
// start and as the slots it owns change. Given a mode other than the last
// one for name, it deletes the last mode's series, so that a sum over
// replicas counts this replica once.
func (r *Recorder) SetShards(name, mode string, owned, total int) {
	if r == nil {
		return
	}
	// Slots move rarely: no cache needed. The lock keeps the delete and the
	// set of concurrent calls in order.
	r.modesMu.Lock()
	defer r.modesMu.Unlock()
	if last, ok := r.modes[name]; ok && last != mode {
		r.slots.DeleteLabelValues(name, last)
	}
	r.modes[name] = mode
	r.slots.WithLabelValues(name, mode).Set(float64(owned))
	r.groupSlots.WithLabelValues(name).Set(float64(total))
}

// forController returns name's series, creating them at zero on first use.
func (r *Recorder) forController(name string) *children {
	// region: series-at-zero
	if c, ok := r.children.Load(name); ok {
		return c.(*children)
	}
	c := &children{
		queued:            make(map[string]prom.Counter, len(sources)),
		queueWait:         r.queueWait.WithLabelValues(name),
		handleSuccess:     r.handle.WithLabelValues(name, strconv.FormatBool(true)),
		handleFailed:      r.handle.WithLabelValues(name, strconv.FormatBool(false)),
		retries:           r.retries.WithLabelValues(name),
		droppedMaxRetries: r.dropped.WithLabelValues(name, "max_retries"),
		droppedTerminal:   r.dropped.WithLabelValues(name, "terminal"),
		panics:            r.panics.WithLabelValues(name),
		queueLen:          r.queueLen.WithLabelValues(name),
	}
	for _, s := range sources {
		c.queued[s] = r.queued.WithLabelValues(name, s)
	}
	// endregion: series-at-zero
	c.retrieveDecode = r.retrieve.WithLabelValues(name, "decode")
	c.retrieveAPI = r.retrieve.WithLabelValues(name, "api")
	c.cacheWaitCaughtUp = r.cacheWait.WithLabelValues(name, strconv.FormatBool(true))
	c.cacheWaitTimedOut = r.cacheWait.WithLabelValues(name, strconv.FormatBool(false))
	// Two goroutines may build children for the same name at once; both get
	// the same underlying series from the vecs, and the first stored wins.
	actual, _ := r.children.LoadOrStore(name, c)
	return actual.(*children)
}

// collectors registers several collectors as one, which makes registration
// atomic: the registry checks every descriptor before adding any.
type collectors []prom.Collector

func (cs collectors) Describe(ch chan<- *prom.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prom.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}
