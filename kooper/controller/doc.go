// Package controller is Kooper's core: a [Retriever] (list and watch of one
// resource type) plus a [Handler] (your domain logic) make a [Controller].
// An operator is the same thing with a Retriever on a custom resource.
//
//	Retriever ──► cache (client-go informer) ──► queue of keys ──► workers ──► Handler
//
// # Level-based, not edge-based
//
// The Handler receives the latest state of an object, never a diff or an
// event type: "here is how the object is now, make the world match". The
// queue holds object keys, so many changes to one object before a worker
// gets to it collapse into one handling of its newest state, and a key that
// changes while it is being handled is handled once more afterwards, never by
// two workers at once. Each handling gets its own deep copy of the cached
// object.
//
// Fresh changes go first: keys from the initial list and from resyncs wait
// behind every other key (a change the watch saw, a retry, a RequeueAfter,
// an Enqueue), so an object that changes while a long list is being handled
// is handled next. Each of the two lines is first in, first out.
//
// # No delete event, on purpose
//
// There is no OnDelete. An object that is gone has no state to handle, and a
// delete notification can be missed (the controller was down, the watch was
// re-listed), so logic built on it leaks. Instead:
//   - child objects carry an owner reference to their parent and the
//     garbage collector deletes them with it (package owner);
//   - external state (a cloud resource, a DNS record) is protected by a
//     finalizer: the object is only marked for deletion, the handler sees
//     the deletionTimestamp, cleans up and removes the finalizer (package
//     finalizer).
//
// # Failures
//
// A Handler error retries the object with per-object exponential backoff
// and jitter, Config.MaxRetries times; a success resets the backoff. Wrap an
// error with [Terminal] when retrying cannot help. Return [RequeueAfter] to
// be called again after a delay even if nothing changes (periodic work). A
// panic is recovered, logged with the object key, counted and retried like
// an error: one bad object never crashes the process.
//
// A list or watch that fails is retried by client-go with backoff. When the
// answer cannot be decoded into the Retriever's Go type (one custom
// resource holding a value its field cannot, say), every list fails until
// that object is fixed or deleted: the cache does not sync and nothing of
// that type is handled. The controller says so: [Controller.SyncError]
// wraps [ErrDecode] and names the resource (leaderelection.Runner.Ready puts it in
// /readyz), the log has it at Error (a lasting failure once per five
// minutes), and MetricsRecorder.IncRetrieveError counts it by kind.
//
// # Owned kinds
//
// A controller can watch kinds besides its own as sources of its own keys
// (given to New): [Owns] for its children, the objects its objects
// control (a controller owner reference, see package owner), and [Watches]
// for any other kind, mapped to keys by a function (a ConfigMap a Tenant
// names). A source is a cache and an event handler, nothing more: no
// queue, workers, retries or metrics series of its own. Each change of a
// child, its creation, update or deletion, queues its owner's key in the
// controller's one queue (counted as source "enqueue"), so the owner is
// handled by the controller's handler in its workers: never by two at
// once, whichever kind changed, and once for a burst of changes made while
// it waits. A child maps to its owner with no API call: the controller
// reference's name is looked up in the controller's cache, and the owner
// queued only if its UID is the reference's. The handler reads an owner's
// children from the source's cache with [Watched.Of], through an index.
// Run opens the sources with the controller's cache, starts the workers
// once all have synced (HasSynced and SyncError cover them), and closes
// them before it returns; a source is never resynced, the controller's own
// resync handles every owner again. [RunAll] runs several controllers in
// one process without leader election.
//
// There is still no delete event: a deleted child only queues its owner,
// which the handler gets live, as always. The handler sees the world as it
// is now, the child missing from Of, and makes it again: the same code
// repairs a child deleted, edited, or never made, and a deletion missed
// while the controller was down is repaired by the initial list.
//
// # Memory: what the cache holds
//
// Each controller caches every object its Retriever lists, in its own
// informer. The controller drops managedFields before objects enter the
// cache. [NewMetadataRetriever] caches only metadata, for controllers that
// need names, labels and owners; a Retriever of your own can drop more
// from what it returns.
//
// # Lifecycle
//
// [Controller.Run] fills the cache, waits for it on a channel (no polling),
// handles objects until its context is done, then cancels running handlers,
// waits for them (Config.ShutdownTimeout) and returns with no goroutine left.
// Leader election (package leaderelection) runs a Controller only while its
// replica holds a Lease. The experimental package x/sharding runs several
// active replicas instead, each handling a share of the objects, through a
// Handler middleware and a Retriever decorator of its own.
//
// # Reading the code: one event, five files
//
// An object's change reaches the handler through source.go (the informer
// over the Retriever, and the event handler that queues the object's key),
// controller.go (Run's one loop: open, start, serve, drain; the workers),
// queue.go (fresh changes first, retry backoff), handle.go (one key's
// handling: fetch, admit, call, settle) and handler.go (Handler, Chain, and
// the errors a handler returns). owned.go adds the sources' caches, whose
// events queue their owners' keys the same way.
//
// # Typed handlers
//
// [Typed] turns a function of a concrete type such as *corev1.Pod into a
// Handler, so domain code has no type assertion.
//
// # Middlewares
//
// Handlers compose: [Chain] wraps a Handler in [Middleware]s (logging,
// metrics, tracing, owner lookup), outermost first. The controller adds two
// of its own around yours: handling metrics, then panic recovery.
//
// Package controllertest has an in-memory Retriever for unit tests.
package controller
