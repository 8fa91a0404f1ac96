package slog

import (
	"context"
	"fmt"
	stdslog "log/slog"
	"runtime"
	"time"

	"github.com/kooperkit/kooper/kooper/log"
)

// missingValue is the value given to a trailing key that has none.
const missingValue = "(MISSING)"

// New returns a [log.Logger] that writes to l. A nil l gives [log.Noop].
func New(l *stdslog.Logger) log.Logger {
	if l == nil {
		return log.Noop
	}
	return &logger{l: l}
}

var _ log.Logger = (*logger)(nil)

type logger struct {
	l *stdslog.Logger
}

func (a *logger) Debug(msg string, kv ...any) { a.log(stdslog.LevelDebug, msg, kv) }
func (a *logger) Info(msg string, kv ...any)  { a.log(stdslog.LevelInfo, msg, kv) }
func (a *logger) Warn(msg string, kv ...any)  { a.log(stdslog.LevelWarn, msg, kv) }
func (a *logger) Error(msg string, kv ...any) { a.log(stdslog.LevelError, msg, kv) }

// With returns a Logger whose entries all carry kv as attributes.
func (a *logger) With(kv ...any) log.Logger {
	if len(kv) == 0 {
		return a
	}
	return &logger{l: a.l.With(args(kv)...)}
}

// log follows log/slog's "wrapping output methods" recipe so that the
// recorded source is the caller of Debug, Info, Warn or Error.
func (a *logger) log(level stdslog.Level, msg string, kv []any) {
	// No context reaches a log.Logger; slog.Logger.Info does the same.
	ctx := context.Background()
	if !a.l.Enabled(ctx, level) {
		return
	}
	var pcs [1]uintptr
	runtime.Callers(3, pcs[:]) // skip runtime.Callers, log and the level method
	r := stdslog.NewRecord(time.Now(), level, msg, pcs[0])
	r.Add(args(kv)...)
	_ = a.l.Handler().Handle(ctx, r)
}

// args returns kv as slog reads it: alternating string keys and values.
// Well-formed kv is returned as is; otherwise a copy is made with non-string
// keys formatted by fmt.Sprint and a trailing key given "(MISSING)".
func args(kv []any) []any {
	if wellFormed(kv) {
		return kv
	}
	out := make([]any, 0, len(kv)+1)
	for i := 0; i < len(kv); i += 2 {
		key, ok := kv[i].(string)
		if !ok {
			key = fmt.Sprint(kv[i])
		}
		if i+1 < len(kv) {
			out = append(out, key, kv[i+1])
		} else {
			out = append(out, key, missingValue)
		}
	}
	return out
}

func wellFormed(kv []any) bool {
	if len(kv)%2 != 0 {
		return false
	}
	for i := 0; i < len(kv); i += 2 {
		if _, ok := kv[i].(string); !ok {
			return false
		}
	}
	return true
}
