package log

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Level orders log entries by importance.
type Level int

// The levels, least important first. LevelInfo is the zero value, so an
// unset level means Info.
const (
	LevelDebug Level = iota - 1
	LevelInfo
	LevelWarn
	LevelError
)

// String returns the level's lowercase name.
func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return "level(" + strconv.Itoa(int(l)) + ")"
}

// ParseLevel returns the Level named s ("debug", "info", "warn" or "error").
func ParseLevel(s string) (Level, error) {
	for l := LevelDebug; l <= LevelError; l++ {
		if strings.EqualFold(s, l.String()) {
			return l, nil
		}
	}
	return LevelInfo, fmt.Errorf("unknown log level %q, want debug, info, warn or error", s)
}

// StdOptions configures [NewStd].
type StdOptions struct {
	// Level is the least important level written. Default LevelInfo.
	Level Level
	// DisableTime leaves the time out of each line, for reproducible output.
	DisableTime bool
}

// NewStd returns a Logger that writes one logfmt-style line per entry to w:
// time, level, msg, then the key/values. It is safe for concurrent use.
func NewStd(w io.Writer, opts StdOptions) Logger {
	return &std{out: &lockedWriter{w: w}, opts: opts}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

type std struct {
	out  *lockedWriter
	opts StdOptions
	kv   []any
}

func (s *std) Debug(msg string, kv ...any) { s.log(LevelDebug, msg, kv) }
func (s *std) Info(msg string, kv ...any)  { s.log(LevelInfo, msg, kv) }
func (s *std) Warn(msg string, kv ...any)  { s.log(LevelWarn, msg, kv) }
func (s *std) Error(msg string, kv ...any) { s.log(LevelError, msg, kv) }

func (s *std) With(kv ...any) Logger {
	all := make([]any, 0, len(s.kv)+len(kv))
	all = append(append(all, s.kv...), kv...)
	return &std{out: s.out, opts: s.opts, kv: all}
}

func (s *std) log(level Level, msg string, kv []any) {
	if level < s.opts.Level {
		return
	}
	var b strings.Builder
	if !s.opts.DisableTime {
		b.WriteString("time=")
		b.WriteString(time.Now().UTC().Format(time.RFC3339Nano))
		b.WriteByte(' ')
	}
	b.WriteString("level=")
	b.WriteString(level.String())
	b.WriteString(" msg=")
	b.WriteString(quote(msg))
	writeKV(&b, s.kv)
	writeKV(&b, kv)
	b.WriteByte('\n')
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	_, _ = io.WriteString(s.out.w, b.String())
}

func writeKV(b *strings.Builder, kv []any) {
	for i := 0; i < len(kv); i += 2 {
		b.WriteByte(' ')
		key := fmt.Sprint(kv[i])
		b.WriteString(key)
		b.WriteByte('=')
		if i+1 < len(kv) {
			b.WriteString(quote(fmt.Sprint(kv[i+1])))
		} else {
			b.WriteString(`"(MISSING)"`)
		}
	}
}

// quote leaves simple values bare and quotes anything with spaces, quotes or
// an equals sign, as logfmt readers expect.
func quote(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=") {
		return strconv.Quote(s)
	}
	return s
}
