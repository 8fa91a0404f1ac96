package controller

import (
	"context"

	"github.com/kooperkit/kooper/kooper/internal/handling"
)

// Why a handling runs.
//
// Every add to the queue says why (controller.go, owned.go, handle.go).
// The queue's order (queue.go) keeps the reasons of a waiting key's adds
// beside its line, the worker that takes the key reads them (fetch), and
// the handler finds them in its context (Reasons), its span and, when it
// fails, its log line. A key queued for one reason, the common case, costs
// no allocation (handling.Reasons).

// A Reason is one of the things that queued an object's key since its
// last handling (Reasons).
type Reason struct {
	// Why is what happened:
	//   - "initial": the object was in the list the controller's cache
	//     started from;
	//   - "takeover": this replica began to lead (RunWarm), which queues
	//     every cached object once;
	//   - "created": the watch saw the object created;
	//   - "generation": it changed, with a new metadata.generation (its
	//     spec, for most kinds);
	//   - "changed": it changed, with the same generation (its metadata or
	//     status; any change of a kind without generations);
	//   - "resync": the periodic resync (Config.ResyncInterval), or a relist
	//     that found it unchanged;
	//   - "owned", "watched": an object of an Owns or a Watches source
	//     changed or was deleted (Detail names it);
	//   - "retry": the last handling failed (Detail is its error);
	//   - "requeue": the last handling asked for it (RequeueAfter; Detail is
	//     the delay);
	//   - "waited": the key waited for the right to handle (SetValidUntil);
	//   - "enqueued": Controller.Enqueue (Detail names the function that
	//     called it, "sharding.(*Runner).acquire").
	Why string
	// Detail says more for some reasons: for "owned" and "watched" the
	// object, as its kind and key ("Deployment default/web"; the resource,
	// "deployments.apps", for a metadata Retriever), for "retry" the
	// error, for "requeue" the delay, for "enqueued" the caller. Empty
	// otherwise.
	Detail string
}

// The reasons the controller records; those with a detail get it where
// they are recorded.
var (
	reasonInitial    = handling.Reason{Why: "initial"}
	reasonTakeover   = handling.Reason{Why: "takeover"}
	reasonCreated    = handling.Reason{Why: "created"}
	reasonGeneration = handling.Reason{Why: "generation"}
	reasonChanged    = handling.Reason{Why: "changed"}
	reasonResync     = handling.Reason{Why: "resync"}
	reasonOwned      = handling.Reason{Why: "owned"}
	reasonWatched    = handling.Reason{Why: "watched"}
	reasonRetry      = handling.Reason{Why: "retry"}
	reasonRequeue    = handling.Reason{Why: "requeue"}
	reasonWaited     = handling.Reason{Why: "waited"}
	reasonEnqueued   = handling.Reason{Why: "enqueued"}
)

// reasons returns a key's reasons holding r alone.
func reasons(r handling.Reason) handling.Reasons {
	var rs handling.Reasons
	rs.Add(r)
	return rs
}

// String returns Why, then Detail in parentheses if there is one:
// "owned (Deployment default/web)".
func (r Reason) String() string { return handling.Reason(r).String() }

// Reasons returns why the handling whose context is ctx runs: what queued
// its object's key since the key's last handling, oldest first, each
// once, at most the latest 8. Changes seen while a key is being handled
// are the next handling's reasons. A handling may have several (created,
// then changed before a worker was free; a retry came due while a change
// waited) and, rarely, none (a key changed while being handled, with its
// retry still pending: the retry's reason comes with the change, and the
// retry's own handling has none). Reasons returns nil for a context that
// is not a handling's.
//
// The handling's span (kooper/tracing) and its log line when it fails
// carry the same reasons.
func Reasons(ctx context.Context) []Reason {
	info, ok := handling.From(ctx)
	if !ok {
		return nil
	}
	all := info.Reasons.All()
	if all == nil {
		return nil
	}
	out := make([]Reason, len(all))
	for i, r := range all {
		out[i] = Reason(r)
	}
	return out
}
