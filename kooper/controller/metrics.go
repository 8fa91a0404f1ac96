package controller

import (
	"time"

	"k8s.io/client-go/util/workqueue"
)

// MetricsRecorder receives a controller's measurements. Implementations
// must be safe for concurrent use; kooper/metrics/prometheus provides one.
// controller is always the Config.Name of the controller recording.
type MetricsRecorder interface {
	// IncQueuedEvent counts an object key added to the queue; source says
	// where it came from, one of a few fixed values (so a metric labelled
	// with it stays small): "initial" (the cache's initial list, or, for a
	// controller joining a running shared cache, an object already in
	// it), "change" (an object the watch saw added or updated), "resync"
	// (an unchanged object handled again, Config.ResyncInterval, or one the
	// cache listed again unchanged), "retry" (a failed handling retried
	// with backoff), "requeue" (a handler's RequeueAfter request) or
	// "enqueue" (Controller.Enqueue, or a change of one of the
	// controller's sources: a child's change queueing its owner).
	IncQueuedEvent(controller string, source string)
	// ObserveQueueWait records how long a key waited in the queue before a
	// worker took it.
	ObserveQueueWait(controller string, d time.Duration)
	// ObserveHandling records one handler call, its duration and whether it
	// returned nil (a RequeueAfter request counts as success).
	ObserveHandling(controller string, success bool, d time.Duration)
	// IncRetry counts a failed handling that will be retried.
	IncRetry(controller string)
	// IncDropped counts a failed object given up on: reason is
	// "max_retries" (Config.MaxRetries) or "terminal" (a Terminal error).
	IncDropped(controller string, reason string)
	// IncPanic counts a handler panic (recovered, then retried).
	IncPanic(controller string)
	// AddQueueLength moves the number of keys waiting in the queue by delta.
	AddQueueLength(controller string, delta int)
	// IncRetrieveError counts a list or watch of the controller's cache
	// that failed (client-go retries it with backoff): kind is "decode"
	// (an answer the Go type cannot hold, ErrDecode) or "api" (any other
	// failure). A watch that merely closed is not counted.
	IncRetrieveError(controller string, kind string)
	// ObserveCacheWait records how long a key whose handler wrote (through
	// a client of TrackWrites) waited before it was handled again:
	// caughtUp is true when the caches had seen the writes by then,
	// false when the wait reached its bound and the key was handled
	// anyway. Keys that did not wait are not recorded.
	ObserveCacheWait(controller string, caughtUp bool, d time.Duration)
}

// Sources passed to MetricsRecorder.IncQueuedEvent: where a queued key
// came from.
const (
	// sourceInitial is an object of the cache's initial list (or, for a
	// controller joining a running shared cache, an object already in it).
	sourceInitial = "initial"
	// sourceChange is a change the watch saw: an object added or updated.
	sourceChange = "change"
	// sourceResync is a resync: an unchanged object handled again
	// (Config.ResyncInterval), or one the cache listed again unchanged.
	sourceResync = "resync"
	// sourceRetry is a failed handling retried with backoff.
	sourceRetry = "retry"
	// sourceRequeue is a handler's RequeueAfter request.
	sourceRequeue = "requeue"
	// sourceEnqueue is a key queued with Controller.Enqueue, or by a
	// change of one of its sources (New: an owned child, say): typically
	// a child's change routed to its owner.
	sourceEnqueue = "enqueue"
)

// Reasons passed to MetricsRecorder.IncDropped.
const (
	dropMaxRetries = "max_retries"
	dropTerminal   = "terminal"
)

type noopRecorder struct{}

func (noopRecorder) IncQueuedEvent(string, string)                {}
func (noopRecorder) ObserveQueueWait(string, time.Duration)       {}
func (noopRecorder) ObserveHandling(string, bool, time.Duration)  {}
func (noopRecorder) IncRetry(string)                              {}
func (noopRecorder) IncDropped(string, string)                    {}
func (noopRecorder) IncPanic(string)                              {}
func (noopRecorder) AddQueueLength(string, int)                   {}
func (noopRecorder) IncRetrieveError(string, string)              {}
func (noopRecorder) ObserveCacheWait(string, bool, time.Duration) {}

// queueMetrics lets client-go's workqueue report the two things only it can
// see, queue length and time in queue, to a MetricsRecorder. Everything else
// the workqueue measures is covered by the recorder's own calls.
type queueMetrics struct{ rec MetricsRecorder }

var _ workqueue.MetricsProvider = queueMetrics{}

func (m queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return depthMetric{rec: m.rec, name: name}
}
func (m queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return latencyMetric{rec: m.rec, name: name}
}
func (queueMetrics) NewAddsMetric(string) workqueue.CounterMetric { return noopMetric{} }
func (queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noopMetric{}
}
func (queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noopMetric{}
}
func (queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return noopMetric{} }

type depthMetric struct {
	rec  MetricsRecorder
	name string
}

func (d depthMetric) Inc() { d.rec.AddQueueLength(d.name, 1) }
func (d depthMetric) Dec() { d.rec.AddQueueLength(d.name, -1) }

type latencyMetric struct {
	rec  MetricsRecorder
	name string
}

func (l latencyMetric) Observe(seconds float64) {
	l.rec.ObserveQueueWait(l.name, time.Duration(seconds*float64(time.Second)))
}

type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}
