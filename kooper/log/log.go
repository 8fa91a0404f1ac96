package log

import "github.com/kooperkit/kooper/kooper/internal/logkey"

// Logger is a leveled, structured logger. kv holds alternating keys and
// values; keys are strings, preferably from the vocabulary of the package
// documentation.
type Logger interface {
	// Debug logs per-object detail, off in production.
	Debug(msg string, kv ...any)
	// Info logs lifecycle events: started, synced, stopped, leading.
	Info(msg string, kv ...any)
	// Warn logs something unexpected that Kooper recovered from.
	Warn(msg string, kv ...any)
	// Error logs a failure a person may need to act on.
	Error(msg string, kv ...any)
	// With returns a Logger that adds kv to every entry.
	With(kv ...any) Logger
}

// Keys of the vocabulary that package controller and package sharding
// still name through this package; they go once those use
// kooper/internal/logkey, as the other packages of Kooper do.
const (
	KeyController = logkey.Controller // KeyController is the controller's configured name.
	KeyObject     = logkey.Object     // KeyObject is an object key: "namespace/name" or "name".
	KeyWorker     = logkey.Worker     // KeyWorker is a worker's index.
	KeyAttempt    = logkey.Attempt    // KeyAttempt counts handlings of one key since its last success, from 1.
	KeyErr        = logkey.Err        // KeyErr is an error.
	KeyIdentity   = logkey.Identity   // KeyIdentity is a leader election or sharding candidate's identity.
)

// Noop is a Logger that discards everything. It is the default wherever a
// Logger is optional.
var Noop Logger = noop{}

type noop struct{}

func (noop) Debug(string, ...any) {}
func (noop) Info(string, ...any)  {}
func (noop) Warn(string, ...any)  {}
func (noop) Error(string, ...any) {}
func (n noop) With(...any) Logger { return n }
