package slog_test

import (
	"bytes"
	"errors"
	stdslog "log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kooperkit/kooper/kooper/log"
	kooperslog "github.com/kooperkit/kooper/kooper/log/slog"
)

// dropTime removes the time attribute so output is reproducible.
func dropTime(groups []string, a stdslog.Attr) stdslog.Attr {
	if len(groups) == 0 && a.Key == stdslog.TimeKey {
		return stdslog.Attr{}
	}
	return a
}

// newText returns a Kooper logger over a slog text handler writing to buf.
func newText(buf *bytes.Buffer, level stdslog.Level) log.Logger {
	h := stdslog.NewTextHandler(buf, &stdslog.HandlerOptions{Level: level, ReplaceAttr: dropTime})
	return kooperslog.New(stdslog.New(h))
}

func TestLevels(t *testing.T) {
	tests := []struct {
		name string
		log  func(log.Logger)
		want string
	}{
		{name: "debug maps to DEBUG", log: func(l log.Logger) { l.Debug("m") }, want: "level=DEBUG msg=m\n"},
		{name: "info maps to INFO", log: func(l log.Logger) { l.Info("m") }, want: "level=INFO msg=m\n"},
		{name: "warn maps to WARN", log: func(l log.Logger) { l.Warn("m") }, want: "level=WARN msg=m\n"},
		{name: "error maps to ERROR", log: func(l log.Logger) { l.Error("m") }, want: "level=ERROR msg=m\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(newText(&buf, stdslog.LevelDebug))
			if got := buf.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHandlerLevelFilters(t *testing.T) {
	var buf bytes.Buffer
	l := newText(&buf, stdslog.LevelWarn)

	l.Debug("d", "k", "v")
	l.Info("i")
	l.Warn("w")
	l.Error("e")

	want := "level=WARN msg=w\nlevel=ERROR msg=e\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAttributes(t *testing.T) {
	tests := []struct {
		name string
		kv   []any
		want string
	}{
		{
			name: "string keys and values become attributes",
			kv:   []any{"object", "default/web", "attempt", 3},
			want: "level=INFO msg=m object=default/web attempt=3\n",
		},
		{
			name: "a value with spaces is quoted by the handler",
			kv:   []any{"err", errors.New("gone away")},
			want: "level=INFO msg=m err=\"gone away\"\n",
		},
		{
			name: "a non-string key is formatted with fmt.Sprint",
			kv:   []any{42, "v"},
			want: "level=INFO msg=m 42=v\n",
		},
		{
			name: "a trailing key without a value gets (MISSING)",
			kv:   []any{"k", "v", "orphan"},
			want: "level=INFO msg=m k=v orphan=(MISSING)\n",
		},
		{
			name: "a non-string key and a trailing key together",
			kv:   []any{1, 2, 3},
			want: "level=INFO msg=m 1=2 3=(MISSING)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			newText(&buf, stdslog.LevelDebug).Info("m", tt.kv...)
			if got := buf.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWithAccumulates(t *testing.T) {
	var buf bytes.Buffer
	root := newText(&buf, stdslog.LevelDebug)
	ctrl := root.With("controller", "pods")
	worker := ctrl.With("worker", 1)

	worker.Info("handled", "object", "default/web")
	ctrl.Info("synced")
	root.Info("started")
	ctrl.With("orphan").Info("malformed")

	want := "level=INFO msg=handled controller=pods worker=1 object=default/web\n" +
		"level=INFO msg=synced controller=pods\n" +
		"level=INFO msg=started\n" +
		"level=INFO msg=malformed controller=pods orphan=(MISSING)\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWithoutKeyValuesReturnsSameLogger(t *testing.T) {
	var buf bytes.Buffer
	l := newText(&buf, stdslog.LevelInfo)
	if got := l.With(); got != l {
		t.Errorf("got a new Logger from With(), want the receiver")
	}
}

func TestSourceIsTheCaller(t *testing.T) {
	var buf bytes.Buffer
	h := stdslog.NewTextHandler(&buf, &stdslog.HandlerOptions{
		AddSource: true,
		ReplaceAttr: func(groups []string, a stdslog.Attr) stdslog.Attr {
			if src, ok := a.Value.Any().(*stdslog.Source); ok {
				return stdslog.String(a.Key, filepath.Base(src.File)+":"+strconv.Itoa(src.Line))
			}
			return dropTime(groups, a)
		},
	})
	l := kooperslog.New(stdslog.New(h))

	_, _, line, _ := runtime.Caller(0)
	l.Info("m") // must be the line right after runtime.Caller

	want := "level=INFO source=slog_test.go:" + strconv.Itoa(line+1) + " msg=m\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNilGivesNoop(t *testing.T) {
	if got := kooperslog.New(nil); got != log.Noop {
		t.Errorf("got %#v, want log.Noop", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	var buf bytes.Buffer
	l := newText(&buf, stdslog.LevelInfo).With("controller", "pods")

	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			wl := l.With("worker", w)
			for range 50 {
				wl.Info("tick", "object", "default/web")
			}
		})
	}
	wg.Wait()

	if got, want := strings.Count(buf.String(), "\n"), 8*50; got != want {
		t.Errorf("got %d lines, want %d", got, want)
	}
}
