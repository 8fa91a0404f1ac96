// Command pod-terminator is the pod-terminator operator: every period of
// each PodTerminator it terminates a share of the pods the PodTerminator
// selects, never leaving fewer than its minimum. See operators/README.md.
//
// This file is wiring only: flags become an operator.Config, and
// operator.Run does the rest.
//
//	pod-terminator -kubeconfig ~/.kube/config -leader-elect=false -webhook-addr=
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdslog "log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/kooper/log"
	kooperslog "github.com/kooperkit/kooper/kooper/log/slog"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pod-terminator:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pod-terminator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		showVersion = fs.Bool("version", false, "print the version and exit")
		kubeconfig  = fs.String("kubeconfig", "", "kubeconfig file; empty: in-cluster config, else $KUBECONFIG or ~/.kube/config")
		qps         = fs.Float64("kube-api-qps", 50, "client requests per second to the API server (client-go's default 5 is too low for an operator)")
		burst       = fs.Int("kube-api-burst", 100, "client request burst to the API server")
		httpAddr    = fs.String("http-addr", ":8080", "address serving /metrics, /healthz and /readyz; empty disables it")
		leaderElect = fs.Bool("leader-elect", true, "hold a Lease so that only one replica acts; turn off for a single local replica")
		namespace   = fs.String("namespace", envOr("POD_NAMESPACE", operator.DefaultNamespace), "the operator's namespace: its Lease and webhook Secret live there, and it is never a target")
		logLevel    = fs.String("log-level", "info", "debug, info, warn or error")
		logFormat   = fs.String("log-format", "text", "text or json")
		dryRunAll   = fs.Bool("dry-run-all", false, "treat every PodTerminator as a dry run: choose pods, delete none")
		whAddr      = fs.String("webhook-addr", ":9443", "HTTPS address of the admission webhook; empty disables it")
		whCertDir   = fs.String("webhook-cert-dir", "", "directory with tls.crt and tls.key (e.g. from cert-manager); empty: a self-signed certificate kept in a Secret")
		whService   = fs.String("webhook-service", operator.DefaultWebhookService, "Service in front of the webhook: the self-signed certificate covers <service>.<namespace>.svc")
		whConfig    = fs.String("webhook-config", operator.DefaultWebhookConfigName, "ValidatingWebhookConfiguration that receives the self-signed CA bundle")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(stdout, "pod-terminator", versionString())
		return err
	}
	logger, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	restConfig, err := loadREST(*kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = float32(*qps), *burst
	restConfig.UserAgent = "pod-terminator/" + versionString()

	logger.Info("pod-terminator", "version", versionString())
	return operator.Run(ctx, operator.Config{
		REST:                  restConfig,
		Namespace:             *namespace,
		HTTPAddr:              *httpAddr,
		DisableLeaderElection: !*leaderElect,
		DryRunAll:             *dryRunAll,
		Webhook: operator.Webhook{
			Addr:       *whAddr,
			CertDir:    *whCertDir,
			Hosts:      []string{*whService + "." + *namespace + ".svc"},
			ConfigName: *whConfig,
		},
		Logger: logger,
	})
}

func loadREST(kubeconfig string) (*rest.Config, error) {
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

func newLogger(w io.Writer, level, format string) (log.Logger, error) {
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
	return nil, errors.New(`-log-format must be "text" or "json", got ` + fmt.Sprintf("%q", format))
}

// versionString is the stamped version, else the module version or VCS
// revision Go recorded, else "dev".
func versionString() string {
	if version != "" {
		return version
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

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
