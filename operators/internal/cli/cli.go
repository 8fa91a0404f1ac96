// Package cli holds what every sample operator's main does the same way:
// load the client config, build the logger from flags, tell the version. The
// operators' cmd/ packages stay wiring only.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdslog "log/slog"
	"os"
	"runtime/debug"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/kooper/log"
	kooperslog "github.com/kooperkit/kooper/kooper/log/slog"
)

// LoadREST returns the client config of kubeconfig; for an empty path the
// in-cluster config, else $KUBECONFIG or ~/.kube/config.
func LoadREST(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("could not load the client config: %w", err)
	}
	return cfg, nil
}

// NewLogger returns a logger writing to w at level ("debug", "info", "warn",
// "error") in format: "text" (log.NewStd) or "json" (log/slog's JSON
// handler).
func NewLogger(w io.Writer, level, format string) (log.Logger, error) {
	lvl, err := log.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	switch format {
	case "text":
		return log.NewStd(w, log.StdOptions{Level: lvl}), nil
	case "json":
		slogLevel := map[log.Level]stdslog.Level{
			log.LevelDebug: stdslog.LevelDebug, log.LevelInfo: stdslog.LevelInfo,
			log.LevelWarn: stdslog.LevelWarn, log.LevelError: stdslog.LevelError,
		}[lvl]
		return kooperslog.New(stdslog.New(stdslog.NewJSONHandler(w, &stdslog.HandlerOptions{Level: slogLevel}))), nil
	}
	return nil, fmt.Errorf(`-log-format must be "text" or "json", got %q`, format)
}

// Version returns stamped (set with -ldflags "-X main.version=..." by make
// build and the Dockerfile) if not empty, else the module version or VCS
// revision Go recorded, else "dev".
func Version(stamped string) string {
	if stamped != "" {
		return stamped
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

// EnvOr returns the environment variable key, or def when it is unset or
// empty.
func EnvOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// TracerProvider returns the tracer provider the -tracing flag asks for:
// "off" (nil: no tracing), "stdout" (spans printed to w, for local use) or
// "otlp" (spans sent over OTLP/gRPC, configured by the standard
// OTEL_EXPORTER_OTLP_* variables, e.g. OTEL_EXPORTER_OTLP_ENDPOINT). Call
// shutdown before exiting to flush the spans.
func TracerProvider(ctx context.Context, mode, service string, w io.Writer) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	// region: tracer-provider
	var exporter sdktrace.SpanExporter
	switch mode {
	case "off", "":
		return nil, func(context.Context) error { return nil }, nil
	case "stdout":
		exporter, err = stdouttrace.New(stdouttrace.WithWriter(w))
	case "otlp":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, nil, fmt.Errorf(`-tracing must be "off", "stdout" or "otlp", got %q`, mode)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("could not create the %s span exporter: %w", mode, err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	return sdk, sdk.Shutdown, nil
	// endregion: tracer-provider
}

// ErrUsage marks a command line the flags could not parse; the flag package
// has already printed the problem and the usage.
var ErrUsage = errors.New("usage")

// Parse parses args with fs, which must use flag.ContinueOnError. Its error
// is flag.ErrHelp for -h and -help, and wraps ErrUsage for any other problem
// with the command line.
func Parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUsage, err)
}

// Exit returns the exit status for a command's error and prints to stderr
// what the flag package did not: 0 for none or -h (the usage was printed), 2
// for a command-line error (printed with the usage), else 1 after printing
// "name: err".
func Exit(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}
