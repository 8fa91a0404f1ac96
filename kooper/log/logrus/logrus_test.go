package logrus_test

import (
	"bytes"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	logrustest "github.com/sirupsen/logrus/hooks/test"

	"github.com/kooperkit/kooper/kooper/log"
	kooperlogrus "github.com/kooperkit/kooper/kooper/log/logrus"
)

func TestLevels(t *testing.T) {
	tests := []struct {
		name string
		log  func(log.Logger)
		want logrus.Level
	}{
		{name: "debug maps to debug", log: func(l log.Logger) { l.Debug("m") }, want: logrus.DebugLevel},
		{name: "info maps to info", log: func(l log.Logger) { l.Info("m") }, want: logrus.InfoLevel},
		{name: "warn maps to warn", log: func(l log.Logger) { l.Warn("m") }, want: logrus.WarnLevel},
		{name: "error maps to error", log: func(l log.Logger) { l.Error("m") }, want: logrus.ErrorLevel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, hook := logrustest.NewNullLogger()
			l.SetLevel(logrus.DebugLevel)
			tt.log(kooperlogrus.New(l))

			entries := hook.AllEntries()
			if len(entries) != 1 {
				t.Fatalf("got %d entries, want 1", len(entries))
			}
			if got := entries[0].Level; got != tt.want {
				t.Errorf("got level %v, want %v", got, tt.want)
			}
			if got, want := entries[0].Message, "m"; got != want {
				t.Errorf("got message %q, want %q", got, want)
			}
		})
	}
}

func TestLogrusLevelFilters(t *testing.T) {
	tests := []struct {
		name   string
		source func(*logrus.Logger) logrus.FieldLogger
	}{
		{name: "a logger filters by its level", source: func(l *logrus.Logger) logrus.FieldLogger { return l }},
		{name: "an entry filters by its logger's level", source: func(l *logrus.Logger) logrus.FieldLogger { return l.WithField("a", 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, hook := logrustest.NewNullLogger()
			l.SetLevel(logrus.WarnLevel)
			logger := kooperlogrus.New(tt.source(l))

			logger.Debug("d", "k", "v")
			logger.Info("i")
			logger.Warn("w")
			logger.Error("e")

			var got []string
			for _, e := range hook.AllEntries() {
				got = append(got, e.Message)
			}
			if want := []string{"w", "e"}; !reflect.DeepEqual(got, want) {
				t.Errorf("got messages %q, want %q", got, want)
			}
		})
	}
}

func TestFields(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		kv   []any
		want logrus.Fields
	}{
		{
			name: "no key/values give no fields",
			want: logrus.Fields{},
		},
		{
			name: "values keep their types",
			kv:   []any{"object", "default/web", "attempt", 3, "err", errBoom},
			want: logrus.Fields{"object": "default/web", "attempt": 3, "err": errBoom},
		},
		{
			name: "a non-string key is formatted with fmt.Sprint",
			kv:   []any{42, "v", true, "w"},
			want: logrus.Fields{"42": "v", "true": "w"},
		},
		{
			name: "a trailing key without a value gets (MISSING)",
			kv:   []any{"k", "v", "orphan"},
			want: logrus.Fields{"k": "v", "orphan": "(MISSING)"},
		},
		{
			name: "a repeated key keeps the last value",
			kv:   []any{"k", 1, "k", 2},
			want: logrus.Fields{"k": 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, hook := logrustest.NewNullLogger()
			kooperlogrus.New(l).Info("m", tt.kv...)

			entry := hook.LastEntry()
			if entry == nil {
				t.Fatal("got no entry, want one")
			}
			if !reflect.DeepEqual(entry.Data, tt.want) {
				t.Errorf("got fields %v, want %v", entry.Data, tt.want)
			}
		})
	}
}

func TestWithAccumulates(t *testing.T) {
	l, hook := logrustest.NewNullLogger()
	root := kooperlogrus.New(l)
	ctrl := root.With("controller", "pods")
	worker := ctrl.With("worker", 1)

	worker.Info("handled", "object", "default/web")
	ctrl.Info("synced")
	root.Info("started")
	worker.Info("overridden", "worker", 2)

	want := []logrus.Fields{
		{"controller": "pods", "worker": 1, "object": "default/web"},
		{"controller": "pods"},
		{},
		{"controller": "pods", "worker": 2},
	}
	entries := hook.AllEntries()
	if len(entries) != len(want) {
		t.Fatalf("got %d entries, want %d", len(entries), len(want))
	}
	for i, e := range entries {
		if !reflect.DeepEqual(e.Data, want[i]) {
			t.Errorf("entry %d %q: got fields %v, want %v", i, e.Message, e.Data, want[i])
		}
	}
}

func TestWithoutKeyValuesReturnsSameLogger(t *testing.T) {
	l, _ := logrustest.NewNullLogger()
	logger := kooperlogrus.New(l)
	if got := logger.With(); got != logger {
		t.Errorf("got a new Logger from With(), want the receiver")
	}
}

func TestEntryFieldsAreKept(t *testing.T) {
	l, hook := logrustest.NewNullLogger()
	kooperlogrus.New(l.WithField("app", "pod-terminator")).Info("m", "k", "v")

	want := logrus.Fields{"app": "pod-terminator", "k": "v"}
	if got := hook.LastEntry().Data; !reflect.DeepEqual(got, want) {
		t.Errorf("got fields %v, want %v", got, want)
	}
}

func TestNilGivesNoop(t *testing.T) {
	if got := kooperlogrus.New(nil); got != log.Noop {
		t.Errorf("got %#v, want log.Noop", got)
	}
}

func TestTextOutput(t *testing.T) {
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true, DisableColors: true})

	kooperlogrus.New(l).With("controller", "pods").Warn("could not sync", "err", errors.New("gone away"))

	want := "level=warning msg=\"could not sync\" controller=pods err=\"gone away\"\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestConcurrentUse(t *testing.T) {
	l, hook := logrustest.NewNullLogger()
	logger := kooperlogrus.New(l).With("controller", "pods")

	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			wl := logger.With("worker", w)
			for range 50 {
				wl.Info("tick", "object", "default/web")
			}
		})
	}
	wg.Wait()

	if got, want := len(hook.AllEntries()), 8*50; got != want {
		t.Errorf("got %d entries, want %d", got, want)
	}
}
