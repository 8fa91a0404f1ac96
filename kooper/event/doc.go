// Package event records Kubernetes Events: the short, human-facing notes
// that kubectl describe shows under an object ("Normal Created created
// deployment web", "Warning InvalidSpec replicas must be positive").
//
// [New] builds a [Recorder] from a [Config]; [Recorder.Normal] and
// [Recorder.Warning] queue an event about an object and return at once; a
// background goroutine, started by the first event, writes it through the
// clientset. [Recorder.Shutdown] writes what is still queued, within its
// context's deadline, and stops that goroutine. A Recorder that never
// recorded an event holds no goroutine.
//
//	rec, err := event.New(event.Config{Client: client, Component: "foo-operator"})
//	if err != nil {
//		return err
//	}
//	defer rec.Shutdown(shutdownCtx) // e.g. a 2s timeout, after the controllers stopped
//	rec.Normal(foo, "Created", "created deployment %s", name)
//
// A handler should not depend on *Recorder: declare the one or two methods
// it calls as an interface next to it, and fake that in its tests.
//
// # Which client-go API
//
// This package wraps k8s.io/client-go/tools/record (core/v1 Events), not
// the newer k8s.io/client-go/tools/events (events.k8s.io/v1). Both write the
// same Event objects, and kubectl describe shows either. record is the
// simpler to run: one broadcaster, where events needs a context for its
// recording goroutines and a Shutdown besides, and an action and a related
// object for every event. record also folds repeated events into one with a
// count, the behaviour users expect from kubectl. This package uses
// record's broadcaster (the queue) and correlator (the folding and rate
// limits) and writes the events itself, so that Shutdown knows when the
// queue is empty: client-go's own writer drops what is queued when it stops.
//
// # Consequences
//
//   - Events are best effort, not a log or an audit trail. Similar events
//     about one object are aggregated and rate limited; a full queue (1,000)
//     drops events (and Shutdown then waits for its deadline); events still
//     queued when Shutdown's deadline passes are lost; events recorded after
//     Shutdown began are dropped. Errors go to klog, never to the caller.
//   - The Recorder writes with create and patch on "events" in the core
//     group, in the object's namespace, and in "default" for cluster-scoped
//     objects: grant those verbs in the operator's RBAC.
//   - The involved object's kind comes from its TypeMeta or, for typed
//     objects without one (anything from a lister), from Config.Scheme. An
//     object whose kind the scheme does not know gets no event, with an
//     error in klog: register custom resources in the scheme you pass.
package event
