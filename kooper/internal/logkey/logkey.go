// Package logkey is the key vocabulary of the entries Kooper's packages
// log, so that the logs of every controller can be searched the same way.
// Package log's documentation lists the keys for users; an operator writes
// the same strings, or constants of its own.
package logkey

// The keys of Kooper's log entries.
const (
	Controller = "controller" // Controller is the controller's configured name.
	Object     = "object"     // Object is an object key: "namespace/name" or "name".
	Worker     = "worker"     // Worker is a worker's index.
	Attempt    = "attempt"    // Attempt counts handlings of one key since its last success, from 1.
	Reasons    = "reasons"    // Reasons are why a key was queued since its last handling.
	Err        = "err"        // Err is an error.
	Identity   = "identity"   // Identity is a leader election or sharding candidate's identity.
	Lease      = "lease"      // Lease is a Lease as "namespace/name".
	// Logger names the klog logger an entry that log.RouteKlog routed came
	// from (client-go's name for its component, when it gives one).
	Logger = "logger"
)
