package log

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/kooperkit/kooper/kooper/internal/logkey"
)

// RouteKlog sends everything the Kubernetes libraries log through klog to
// l: client-go's reflector (a list or watch that fails), leader election and
// event recorder. Without it they write klog's own text format to standard
// error, in the middle of an operator's JSON lines. klog's V(0) messages
// become Info, higher verbosities (those klog's -v flag lets through) Debug,
// and its errors Error with the error under the key "err". The name of the
// klog logger an entry came from (client-go's name for its component, when
// it gives one) is under "logger".
//
// klog is process-wide, so this is too: call it once in main, before
// anything logs. The returned function gives klog its own output back
// (tests use it).
func RouteKlog(l Logger) (restore func()) {
	klog.SetLoggerWithOptions(logr.New(klogSink{l: l}), klog.ContextualLogger(true))
	return klog.ClearLogger
}

// klogSink is a logr.LogSink writing to a Logger.
type klogSink struct{ l Logger }

var _ logr.LogSink = klogSink{}

func (klogSink) Init(logr.RuntimeInfo) {}

// Enabled lets klog decide: it checks its verbosity before calling.
func (klogSink) Enabled(int) bool { return true }

func (s klogSink) Info(level int, msg string, kv ...any) {
	if level > 0 {
		s.l.Debug(msg, kv...)
		return
	}
	s.l.Info(msg, kv...)
}

func (s klogSink) Error(err error, msg string, kv ...any) {
	s.l.Error(msg, append(kv, logkey.Err, err)...)
}

func (s klogSink) WithValues(kv ...any) logr.LogSink { return klogSink{l: s.l.With(kv...)} }

func (s klogSink) WithName(name string) logr.LogSink {
	return klogSink{l: s.l.With(logkey.Logger, name)}
}
