package log

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

// Noop is a Logger that discards everything. It is the default wherever a
// Logger is optional.
var Noop Logger = noop{}

type noop struct{}

func (noop) Debug(string, ...any) {}
func (noop) Info(string, ...any)  {}
func (noop) Warn(string, ...any)  {}
func (noop) Error(string, ...any) {}
func (n noop) With(...any) Logger { return n }
