// Package prometheus records Kooper controller metrics in Prometheus.
//
// [New] registers the metrics below on the prometheus.Registerer it is
// given (never the global default) and returns a [Recorder], which
// implements [controller.MetricsRecorder] for any number of controllers,
// the leader election Recorder and the Recorder of package x/sharding:
//
//	reg := prometheus.NewRegistry()
//	rec, err := kooperprom.New(reg)
//	if err != nil { ... }
//	podsCfg.MetricsRecorder = rec // one Recorder, shared:
//	nodesCfg.MetricsRecorder = rec // controllers differ by their label
//
// # Metrics
//
//	| metric                                    | type      | labels                | meaning                                |
//	|-------------------------------------------|-----------|-----------------------|----------------------------------------|
//	| kooper_controller_queued_events_total     | counter   | controller, source    | keys added to the queue                |
//	| kooper_controller_queue_wait_seconds      | histogram | controller            | time a key waited in the queue         |
//	| kooper_controller_handle_duration_seconds | histogram | controller, success   | time a handler call took               |
//	| kooper_controller_retries_total           | counter   | controller            | failed handlings that will be retried  |
//	| kooper_controller_dropped_total           | counter   | controller, reason    | failed keys given up on                |
//	| kooper_controller_handler_panics_total    | counter   | controller            | handler panics (recovered, retried)    |
//	| kooper_controller_queue_length            | gauge     | controller            | keys waiting in the queue now          |
//	| kooper_controller_leader                  | gauge     | controller            | 1 while leading, 0 otherwise           |
//	| kooper_controller_retrieve_errors_total   | counter   | controller, kind      | failed lists and watches of the cache  |
//	| kooper_controller_cache_wait_seconds      | histogram | controller, caught_up | time held until caches saw its writes  |
//	| kooper_sharding_slots                     | gauge     | group, mode           | slots of the group this replica owns   |
//	| kooper_sharding_group_slots               | gauge     | group                 | slots of the group, over all replicas  |
//
// RegisterRESTClientMetrics adds client-go's REST client metrics, for every
// client of the process (see its documentation for why they are process-wide):
//
//	| metric                                           | type      | labels             | meaning                                  |
//	|--------------------------------------------------|-----------|--------------------|------------------------------------------|
//	| kooper_rest_client_requests_total                | counter   | code, method, host | requests to the API server               |
//	| kooper_rest_client_request_duration_seconds      | histogram | verb, host         | request latency                          |
//	| kooper_rest_client_rate_limiter_duration_seconds | histogram | verb, host         | wait for the client's own QPS limiter    |
//
// Label values:
//   - controller is the controller's Config.Name; for kooper_controller_leader
//     it is the name given to [Recorder.SetLeader].
//   - source is where a queued key came from: "initial" (the cache's first
//     list), "change" (an add or update the watch saw), "resync", "retry"
//     (a failed handling, after its backoff), "requeue" (a RequeueAfter
//     request) or "enqueue" (Controller.Enqueue, or a change of one of a
//     controller's sources, controller.New: typically a child's change
//     queueing its owner, counted under the owner's controller). Any other
//     value is counted as given.
//   - success is "true" when the handler returned nil, including a
//     RequeueAfter request, and "false" otherwise.
//   - reason is "max_retries" or "terminal".
//   - caught_up is "true" when a key held after its handler's writes
//     (through a client of controller.TrackWrites) was released because the
//     controller's caches had seen them, and "false" when the wait reached
//     its bound (10s) and the key was handled anyway. Keys that did not wait
//     are not counted.
//   - kind is "decode" when the API server's answer could not be decoded into
//     the Retriever's Go type (one bad object blocks the whole cache until it
//     is fixed or deleted) and "api" for any other failure.
//   - group is a sharded controller's sharding.Config.Name, given to
//     [Recorder.SetShards].
//   - mode is how the replica retrieves its share: "server-side" or
//     "client-side" (sharding.ModeServerSide, sharding.ModeClientSide).
//
// No label ever holds an object's name, so the number of series grows with
// the number of controllers, not with the number of objects.
//
// # Consequences
//
// The first call naming a controller creates all of its series at zero, so a
// rate() sees the first retry or drop instead of a series appearing at 1.
// kooper_controller_leader is the exception: it exists only for names passed
// to SetLeader, because a controller without leader election is neither
// leading nor waiting. Across replicas, sum by (controller) of it should be 1.
// Likewise the kooper_sharding_ gauges exist only for groups passed to
// SetShards. Across replicas, sum by (group) of kooper_sharding_slots equals
// kooper_sharding_group_slots once the slots have settled; while slots move
// it is less (a slot given up is not yet claimed), and scrapes of replicas
// at different moments may briefly count a moved slot twice. A replica whose
// mode changes keeps no series for the old one.
//
// The three histograms, like those of [RegisterRESTClientMetrics], have 16
// buckets from 1ms doubling to about 33s (32.768s), which covers a handler making a few API calls as
// well as a key waiting out a retry backoff or its caches.
//
// A registry holds one Recorder: calling New twice with the same registerer
// returns an error wrapping prometheus.AlreadyRegisteredError. Create one
// Recorder per process and share it; it is safe for concurrent use and each
// method is a map lookup or two and an atomic update, without allocating.
// A nil *Recorder records nothing.
package prometheus
