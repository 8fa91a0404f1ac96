package log_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kooperkit/kooper/kooper/log"
)

// logAll writes one entry at each level.
func logAll(l log.Logger) {
	l.Debug("d")
	l.Info("i")
	l.Warn("w")
	l.Error("e")
}

func TestStdLevels(t *testing.T) {
	tests := []struct {
		name  string
		level log.Level
		want  string
	}{
		{
			name:  "debug writes every level",
			level: log.LevelDebug,
			want:  "level=debug msg=d\nlevel=info msg=i\nlevel=warn msg=w\nlevel=error msg=e\n",
		},
		{
			name:  "info drops debug",
			level: log.LevelInfo,
			want:  "level=info msg=i\nlevel=warn msg=w\nlevel=error msg=e\n",
		},
		{
			name:  "warn drops debug and info",
			level: log.LevelWarn,
			want:  "level=warn msg=w\nlevel=error msg=e\n",
		},
		{
			name:  "error writes only errors",
			level: log.LevelError,
			want:  "level=error msg=e\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logAll(log.NewStd(&buf, log.StdOptions{Level: tt.level, DisableTime: true}))
			if got := buf.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStdWith(t *testing.T) {
	var buf bytes.Buffer
	root := log.NewStd(&buf, log.StdOptions{DisableTime: true})
	ctrl := root.With("controller", "pods")
	worker := ctrl.With("worker", 2)

	worker.Info("handled", "object", "default/web")
	ctrl.Info("synced")
	root.Info("started")

	want := "level=info msg=handled controller=pods worker=2 object=default/web\n" +
		"level=info msg=synced controller=pods\n" +
		"level=info msg=started\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStdWithDoesNotShareBackingArray(t *testing.T) {
	// Two children of one parent must not overwrite each other's key/values,
	// which a careless append to a shared slice would do.
	var buf bytes.Buffer
	parent := log.NewStd(&buf, log.StdOptions{DisableTime: true}).With("a", 1)
	left := parent.With("side", "left")
	right := parent.With("side", "right")

	left.Info("m")
	right.Info("m")

	want := "level=info msg=m a=1 side=left\nlevel=info msg=m a=1 side=right\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStdValues(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		kv   []any
		want string
	}{
		{
			name: "a simple value is left bare",
			msg:  "m",
			kv:   []any{"k", "v"},
			want: "level=info msg=m k=v\n",
		},
		{
			name: "a value with a space is quoted",
			msg:  "m",
			kv:   []any{"k", "a b"},
			want: "level=info msg=m k=\"a b\"\n",
		},
		{
			name: "a value with an equals sign is quoted",
			msg:  "m",
			kv:   []any{"k", "a=b"},
			want: "level=info msg=m k=\"a=b\"\n",
		},
		{
			name: "a value with a quote is quoted and escaped",
			msg:  "m",
			kv:   []any{"k", `say "hi"`},
			want: "level=info msg=m k=\"say \\\"hi\\\"\"\n",
		},
		{
			name: "an empty value is quoted",
			msg:  "m",
			kv:   []any{"k", ""},
			want: "level=info msg=m k=\"\"\n",
		},
		{
			name: "a message with spaces is quoted",
			msg:  "could not sync",
			want: "level=info msg=\"could not sync\"\n",
		},
		{
			name: "non-string values are formatted with fmt.Sprint",
			msg:  "m",
			kv:   []any{"n", 3, "d", 1500 * time.Millisecond, "err", fmt.Errorf("boom")},
			want: "level=info msg=m n=3 d=1.5s err=boom\n",
		},
		{
			name: "a non-string key is formatted with fmt.Sprint",
			msg:  "m",
			kv:   []any{7, "v"},
			want: "level=info msg=m 7=v\n",
		},
		{
			name: "a key without a value gets (MISSING)",
			msg:  "m",
			kv:   []any{"k", "v", "orphan"},
			want: "level=info msg=m k=v orphan=\"(MISSING)\"\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log.NewStd(&buf, log.StdOptions{DisableTime: true}).Info(tt.msg, tt.kv...)
			if got := buf.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStdTime(t *testing.T) {
	var buf bytes.Buffer
	log.NewStd(&buf, log.StdOptions{}).Error("m")

	first, rest, ok := strings.Cut(buf.String(), " ")
	if !ok {
		t.Fatalf("got line %q, want a time field then the level", buf.String())
	}
	ts, found := strings.CutPrefix(first, "time=")
	if !found {
		t.Fatalf("got first field %q, want time=...", first)
	}
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		t.Errorf("got time %q, want RFC 3339: %v", ts, err)
	}
	if want := "level=error msg=m\n"; rest != want {
		t.Errorf("got %q after the time, want %q", rest, want)
	}
}

func TestStdConcurrentLinesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	l := log.NewStd(&buf, log.StdOptions{DisableTime: true})
	const goroutines, lines = 8, 50

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			wl := l.With("worker", g)
			for range lines {
				wl.Info("tick", "k", "a b")
			}
		})
	}
	wg.Wait()

	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != goroutines*lines {
		t.Fatalf("got %d lines, want %d", len(got), goroutines*lines)
	}
	for _, line := range got {
		if !strings.HasPrefix(line, "level=info msg=tick worker=") || !strings.HasSuffix(line, ` k="a b"`) {
			t.Fatalf("got interleaved line %q, want one whole entry", line)
		}
	}
}

func TestParseLevel(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    log.Level
		wantErr bool
	}{
		{name: "debug parses", in: "debug", want: log.LevelDebug},
		{name: "info parses", in: "info", want: log.LevelInfo},
		{name: "warn parses", in: "warn", want: log.LevelWarn},
		{name: "error parses", in: "error", want: log.LevelError},
		{name: "case is ignored", in: "WARN", want: log.LevelWarn},
		{name: "an unknown name is an error", in: "verbose", want: log.LevelInfo, wantErr: true},
		{name: "an empty name is an error", in: "", want: log.LevelInfo, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := log.ParseLevel(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %t", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseLevelErrorNamesInput(t *testing.T) {
	_, err := log.ParseLevel("verbose")
	if err == nil || !strings.Contains(err.Error(), `"verbose"`) {
		t.Errorf("got error %v, want it to quote the input", err)
	}
}

func TestLevelStringRoundTrips(t *testing.T) {
	for _, l := range []log.Level{log.LevelDebug, log.LevelInfo, log.LevelWarn, log.LevelError} {
		got, err := log.ParseLevel(l.String())
		if err != nil || got != l {
			t.Errorf("got %v, %v from ParseLevel(%q), want %v, nil", got, err, l.String(), l)
		}
	}
	if got, want := log.Level(9).String(), "level(9)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNoopDiscards(t *testing.T) {
	// Noop must accept anything, including malformed key/values, and its
	// With must stay a no-op.
	l := log.Noop.With("k")
	logAll(l)
	l.Error("m", 1, 2, 3)
	if l != log.Noop {
		t.Errorf("got %#v from Noop.With, want Noop", l)
	}
}

func TestAZeroLevelMeansInfo(t *testing.T) {
	var b strings.Builder
	l := log.NewStd(&b, log.StdOptions{DisableTime: true})
	l.Debug("hidden")
	l.Info("shown")
	if got, want := b.String(), "level=info msg=shown\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
