package logrus

import (
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/kooperkit/kooper/kooper/log"
)

// missingValue is the value given to a trailing key that has none.
const missingValue = "(MISSING)"

// New returns a [log.Logger] that writes to l, which may be a *logrus.Logger
// or a *logrus.Entry carrying fields of its own. A nil interface gives
// [log.Noop].
func New(l logrus.FieldLogger) log.Logger {
	if l == nil {
		return log.Noop
	}
	return &logger{l: l}
}

var _ log.Logger = (*logger)(nil)

type logger struct {
	l logrus.FieldLogger
}

func (a *logger) Debug(msg string, kv ...any) { a.log(logrus.DebugLevel, msg, kv) }
func (a *logger) Info(msg string, kv ...any)  { a.log(logrus.InfoLevel, msg, kv) }
func (a *logger) Warn(msg string, kv ...any)  { a.log(logrus.WarnLevel, msg, kv) }
func (a *logger) Error(msg string, kv ...any) { a.log(logrus.ErrorLevel, msg, kv) }

// With returns a Logger whose entries all carry kv as fields.
func (a *logger) With(kv ...any) log.Logger {
	if len(kv) == 0 {
		return a
	}
	return &logger{l: a.l.WithFields(fields(kv))}
}

func (a *logger) log(level logrus.Level, msg string, kv []any) {
	// Check the level before building fields: Debug entries are frequent
	// and usually off.
	if !a.enabled(level) {
		return
	}
	l := a.l
	if len(kv) > 0 {
		l = l.WithFields(fields(kv))
	}
	switch level {
	case logrus.DebugLevel:
		l.Debug(msg)
	case logrus.InfoLevel:
		l.Info(msg)
	case logrus.WarnLevel:
		l.Warn(msg)
	default:
		l.Error(msg)
	}
}

// enabled reports whether level would be written. A FieldLogger that is
// neither a *logrus.Logger nor a *logrus.Entry is asked nothing: it gets
// every entry and filters for itself.
func (a *logger) enabled(level logrus.Level) bool {
	switch l := a.l.(type) {
	case *logrus.Logger:
		return l.IsLevelEnabled(level)
	case *logrus.Entry:
		return l.Logger.IsLevelEnabled(level)
	}
	return true
}

// fields turns alternating keys and values into logrus fields.
func fields(kv []any) logrus.Fields {
	f := make(logrus.Fields, (len(kv)+1)/2)
	for i := 0; i < len(kv); i += 2 {
		key, ok := kv[i].(string)
		if !ok {
			key = fmt.Sprint(kv[i])
		}
		if i+1 < len(kv) {
			f[key] = kv[i+1]
		} else {
			f[key] = missingValue
		}
	}
	return f
}
