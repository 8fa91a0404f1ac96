// Package catalog is the one source of truth for the metric names the
// dashboards chart and docs/metrics.md documents: every family, its type,
// labels, meaning and which processes expose it.
//
// It is checked from both sides: a unit test compares the library's
// families with what kooper/metrics/prometheus registers, and the Prometheus
// end-to-end test (grafana/integration) scrapes the operators and fails if
// a family listed here for them is missing or has another type.
package catalog

import "slices"

// Type is a Prometheus metric type, as written in the exposition format.
type Type string

// The metric types in use.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
	Summary   Type = "summary"
)

// Source says which code registers a family, and so which /metrics have it.
type Source string

// The sources. Every operator built on the library exposes Library,
// RESTClient and Runtime; each operator exposes its own. Sharding's
// families are registered by New too, but have series only in the replicas
// of a sharded controller (a Runner of kooper/x/sharding with the
// Recorder), which no sample operator runs.
const (
	Library       Source = "kooper/metrics/prometheus: New"
	Sharding      Source = "kooper/metrics/prometheus: New, in a sharded replica"
	RESTClient    Source = "kooper/metrics/prometheus: RegisterRESTClientMetrics"
	Runtime       Source = "client_golang: Go and process collectors"
	PodTerminator Source = "operators/pod-terminator" // +kooper:operator=pod-terminator
	Tenants       Source = "operators/multi-resource" // +kooper:operator=multi-resource
)

// Family describes one metric family.
type Family struct {
	Name   string
	Type   Type
	Labels []string
	// Meaning is one line for the docs table.
	Meaning string
	Source  Source
}

// Names of the families, for the dashboards to build expressions from.
const (
	QueuedEvents   = "kooper_controller_queued_events_total"
	QueueWait      = "kooper_controller_queue_wait_seconds"
	HandleDuration = "kooper_controller_handle_duration_seconds"
	Retries        = "kooper_controller_retries_total"
	Dropped        = "kooper_controller_dropped_total"
	Panics         = "kooper_controller_handler_panics_total"
	QueueLength    = "kooper_controller_queue_length"
	Leader         = "kooper_controller_leader"
	RetrieveErrors = "kooper_controller_retrieve_errors_total"
	CacheWait      = "kooper_controller_cache_wait_seconds"

	ShardingSlots      = "kooper_sharding_slots"
	ShardingGroupSlots = "kooper_sharding_group_slots"

	RESTRequests    = "kooper_rest_client_requests_total"
	RESTLatency     = "kooper_rest_client_request_duration_seconds"
	RESTRateLimiter = "kooper_rest_client_rate_limiter_duration_seconds"

	ProcessCPU   = "process_cpu_seconds_total"
	ProcessRSS   = "process_resident_memory_bytes"
	GoHeap       = "go_memstats_heap_alloc_bytes"
	GoGoroutines = "go_goroutines"

	TerminatedPods = "kooper_pod_terminator_terminated_pods_total" // +kooper:operator=pod-terminator

	// +kooper:operator-begin=multi-resource
	// region: tenants-names
	TenantsByReadiness = "kooper_tenants"
	DriftRepairs       = "kooper_tenant_drift_repairs_total"
	// endregion: tenants-names
	// +kooper:operator-end=multi-resource
)

var families = []Family{
	{QueuedEvents, Counter, []string{"controller", "source"}, "object keys added to the queue, by source: initial (the cache's first list), change (seen by the watch), resync, retry, requeue (RequeueAfter) or enqueue (Controller.Enqueue, which the sources given to controller.New call: a child kind queueing its owner's key)", Library},
	{QueueWait, Histogram, []string{"controller"}, "time a key waited in the queue before a worker took it", Library},
	{HandleDuration, Histogram, []string{"controller", "success"}, "time a handler call took; success is false when it returned an error or panicked", Library},
	{Retries, Counter, []string{"controller"}, "failed handlings that will be retried", Library},
	{Dropped, Counter, []string{"controller", "reason"}, "failed keys given up on: reason max_retries or terminal", Library},
	{Panics, Counter, []string{"controller"}, "handler panics, recovered and retried", Library},
	{QueueLength, Gauge, []string{"controller"}, "keys waiting in the queue now", Library},
	{Leader, Gauge, []string{"controller"}, "1 while this process holds the Lease named controller, 0 otherwise (only with leader election)", Library},
	{RetrieveErrors, Counter, []string{"controller", "kind"}, "failed lists and watches of the cache: kind decode (an object the Go type cannot hold; nothing of that type is handled until it is fixed or deleted) or api", Library},
	{CacheWait, Histogram, []string{"controller", "caught_up"}, "time a key whose handler wrote through a client of controller.TrackWrites was held before it was handled again, until the controller's caches had seen those writes; caught_up is false when the wait reached its bound (10s) and the key was handled anyway. Keys that did not wait are not counted, and a controller without TrackWrites has the series at 0", Library},

	{ShardingSlots, Gauge, []string{"group", "mode"}, "slots of the sharded group (sharding.Config.Name) this replica owns, by mode: server-side or client-side; summed over the replicas it equals kooper_sharding_group_slots once the slots have settled", Sharding},
	{ShardingGroupSlots, Gauge, []string{"group"}, "slots of the sharded group, shared among its replicas (sharding.Config.Slots)", Sharding},

	{RESTRequests, Counter, []string{"code", "method", "host"}, "requests to the API server, by HTTP status code", RESTClient},
	{RESTLatency, Histogram, []string{"verb", "host"}, "API request latency, as the client saw it", RESTClient},
	{RESTRateLimiter, Histogram, []string{"verb", "host"}, "time requests waited for the client's own QPS/burst limiter", RESTClient},

	{ProcessCPU, Counter, nil, "CPU time the process used", Runtime},
	{ProcessRSS, Gauge, nil, "resident memory of the process", Runtime},
	{GoHeap, Gauge, nil, "bytes of live and not yet collected heap objects", Runtime},
	{GoGoroutines, Gauge, nil, "goroutines now", Runtime},

	{TerminatedPods, Counter, []string{"terminator", "dry_run"}, "pods deleted (dry_run=\"false\") or chosen in a dry run (\"true\"), by PodTerminator name; a PodTerminator's series appear with its first period", PodTerminator}, // +kooper:operator=pod-terminator

	// +kooper:operator-begin=multi-resource
	// region: tenants-families
	{TenantsByReadiness, Gauge, []string{"ready"}, "Tenants by Ready condition, counted in the leader's cache at scrape time: only the replica running the controllers has it", Tenants},
	{DriftRepairs, Counter, []string{"kind"}, "children of Tenants restored after someone else changed or deleted them", Tenants},
	// endregion: tenants-families
	// +kooper:operator-end=multi-resource
}

// All returns every family, in documentation order.
func All() []Family { return slices.Clone(families) }

// Lookup returns the family named name, which may also be a histogram's
// _bucket, _count or _sum series name, or a summary's _count or _sum.
func Lookup(name string) (Family, bool) {
	for _, f := range families {
		if f.Name == name {
			return f, true
		}
		for _, suffix := range suffixes(f.Type) {
			if f.Name+suffix == name {
				return f, true
			}
		}
	}
	return Family{}, false
}

func suffixes(t Type) []string {
	switch t {
	case Histogram:
		return []string{"_bucket", "_count", "_sum"}
	case Summary:
		return []string{"_count", "_sum"}
	}
	return nil
}

// Exposed returns the families a process exposes when it registers the
// given sources.
func Exposed(sources ...Source) []Family {
	var out []Family
	for _, f := range families {
		if slices.Contains(sources, f.Source) {
			out = append(out, f)
		}
	}
	return out
}

// Operators maps each operator's name to the sources its /metrics exposes.
var Operators = map[string][]Source{
	// region: operators
	"pod-terminator": {Library, RESTClient, Runtime, PodTerminator}, // +kooper:operator=pod-terminator
	"multi-resource": {Library, RESTClient, Runtime, Tenants},       // +kooper:operator=multi-resource
	// endregion: operators
}
