package cli_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/operators/internal/cli"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		level, format string
		wantErr       string
		wantLine      string // what logger.Info("started", "n", 1) writes
	}{
		{level: "info", format: "text", wantLine: `msg=started n=1`},
		{level: "info", format: "json", wantLine: `"msg":"started","n":1`},
		{level: "error", format: "json", wantLine: ""},
		{level: "info", format: "xml", wantErr: `-log-format must be "text" or "json", got "xml"`},
		{level: "loud", format: "text", wantErr: "loud"},
	}
	for _, tt := range tests {
		t.Run(tt.level+"/"+tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := cli.NewLogger(&buf, tt.level, tt.format)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l.Info("started", "n", 1)
			if !strings.Contains(buf.String(), tt.wantLine) || (tt.wantLine == "" && buf.Len() > 0) {
				t.Errorf("got %q, want it to contain %q", buf.String(), tt.wantLine)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	if got := cli.Version("v1.2.3"); got != "v1.2.3" {
		t.Errorf("got %q, want the stamped version", got)
	}
	if got := cli.Version(""); !strings.HasPrefix(got, "dev") {
		t.Errorf("got %q in a test binary, want dev...", got)
	}
}

func TestEnvOr(t *testing.T) {
	t.Setenv("KOOPER_CLI_TEST", "")
	if got := cli.EnvOr("KOOPER_CLI_TEST", "def"); got != "def" {
		t.Errorf("got %q for an empty variable, want the default", got)
	}
	t.Setenv("KOOPER_CLI_TEST", "set")
	if got := cli.EnvOr("KOOPER_CLI_TEST", "def"); got != "set" {
		t.Errorf("got %q, want the variable", got)
	}
}

func TestLoadRESTNamesAMissingFile(t *testing.T) {
	if _, err := cli.LoadREST("/no/such/kubeconfig"); err == nil || !strings.Contains(err.Error(), "could not load the client config") {
		t.Errorf("got %v, want a clear error", err)
	}
}

func TestTracerProvider(t *testing.T) {
	ctx := context.Background()
	if tp, shutdown, err := cli.TracerProvider(ctx, "off", "op", io.Discard); err != nil || tp != nil || shutdown(ctx) != nil {
		t.Errorf("off: got %v, %v, want no provider", tp, err)
	}
	if _, _, err := cli.TracerProvider(ctx, "jaeger", "op", io.Discard); err == nil || !strings.Contains(err.Error(), `-tracing must be "off", "stdout" or "otlp", got "jaeger"`) {
		t.Errorf("got %v, want a clear error", err)
	}
	var buf bytes.Buffer
	tp, shutdown, err := cli.TracerProvider(ctx, "stdout", "op", &buf)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(ctx, "handle op")
	span.End()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"Name":"handle op"`) || !strings.Contains(buf.String(), `"Value":"op"`) {
		t.Errorf("got %q, want the span with service.name op", buf.String())
	}
}
