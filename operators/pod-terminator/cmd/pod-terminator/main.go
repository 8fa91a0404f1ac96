// Command pod-terminator is the pod-terminator operator: every period of
// each PodTerminator it terminates a share of the pods the PodTerminator
// selects, never leaving fewer than its minimum. See operators/README.md.
//
// This file is wiring only: flags become an operator.Config, and
// operator.Run does the rest.
//
// In the dev loop, against make devcluster's cluster, it needs no other
// flags: with -webhook-cert-dir empty, it takes the certificate the dev
// cluster wrote next to the kubeconfig, serves the webhook on 127.0.0.1 and
// registers it there itself while it runs (operators/internal/devloop).
//
//	go run ./operators/pod-terminator/cmd/pod-terminator -kubeconfig .devcluster/kubeconfig -leader-elect=false
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/cli"
	"github.com/kooperkit/kooper/operators/internal/devloop"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	// region: main
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit("pod-terminator", err, os.Stderr))
	// endregion: main
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pod-terminator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		showVersion = fs.Bool("version", false, "print the version and exit")
		kubeconfig  = fs.String("kubeconfig", "", "kubeconfig file; empty: in-cluster config, else $KUBECONFIG or ~/.kube/config")
		qps         = fs.Float64("kube-api-qps", 50, "client requests per second to the API server for the controller (client-go's default 5 is too low for an operator); leader election, the webhook's access checks and the metrics' token reviews have clients and limits of their own")
		burst       = fs.Int("kube-api-burst", 100, "client request burst to the API server for the controller")
		httpAddr    = fs.String("http-addr", ":8080", "address serving /metrics, /healthz and /readyz; empty disables it")
		secureAddr  = fs.String("metrics-secure-addr", "", "HTTPS address serving /metrics instead of -http-addr, only to clients the API server authorizes to get /metrics (needs the ClusterRole system:auth-delegator); empty: /metrics on -http-addr")
		pprof       = fs.Bool("pprof", false, "also serve Go's profiles under /debug/pprof/ on -http-addr")
		leaderElect = fs.Bool("leader-elect", true, "hold a Lease so that only one replica acts; turn off for a single local replica")
		leaseDur    = fs.Duration("leader-elect-lease-duration", leaderelection.DefaultLeaseDuration, "how long a standby waits after the leader's last renewal before taking over")
		renewDL     = fs.Duration("leader-elect-renew-deadline", leaderelection.DefaultRenewDeadline, "how long the leader retries a renewal before it stops leading; shorter than the lease duration")
		retryPeriod = fs.Duration("leader-elect-retry-period", leaderelection.DefaultRetryPeriod, "the wait between attempts to acquire or renew the Lease")
		namespace   = fs.String("namespace", cli.EnvOr("POD_NAMESPACE", operator.DefaultNamespace), "the operator's namespace: its Lease and webhook Secret live there, and it is never a target")
		protected   = fs.String("protected-namespaces", "", "comma-separated namespaces no PodTerminator may target, besides kube-system, kube-public, kube-node-lease and -namespace")
		logLevel    = fs.String("log-level", "info", "debug, info, warn or error")
		logFormat   = fs.String("log-format", "text", "text or json")
		tracingMode = fs.String("tracing", "off", "off, stdout (spans on standard error) or otlp (OTLP/gRPC to $OTEL_EXPORTER_OTLP_ENDPOINT)")
		dryRunAll   = fs.Bool("dry-run-all", false, "treat every PodTerminator as a dry run: choose pods, delete none")
		whAddr      = fs.String("webhook-addr", ":9443", "HTTPS address of the admission webhook; empty disables it")
		whCertDir   = fs.String("webhook-cert-dir", "", "directory with tls.crt and tls.key (e.g. from cert-manager); empty: make devcluster's next to -kubeconfig, served on 127.0.0.1 and registered by the operator, else a self-signed certificate kept in a Secret")
		whService   = fs.String("webhook-service", operator.DefaultWebhookService, "Service in front of the webhook: the self-signed certificate covers <service>.<namespace>.svc")
		whConfig    = fs.String("webhook-config", operator.DefaultWebhookConfigName, "ValidatingWebhookConfiguration that receives the self-signed CA bundle; in the dev loop, the one the operator registers")
	)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(stdout, "pod-terminator", cli.Version(version))
		return err
	}
	protectedNamespaces, err := namespaceList(*protected)
	if err != nil {
		return fmt.Errorf("-protected-namespaces: %w", err)
	}
	logger, err := cli.NewLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	// client-go logs through klog: one format for every line.
	defer log.RouteKlog(logger)()
	tp, shutdownTracing, err := cli.TracerProvider(ctx, *tracingMode, "pod-terminator", stderr)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()
	restConfig, err := cli.LoadREST(*kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = float32(*qps), *burst
	restConfig.UserAgent = "pod-terminator/" + cli.Version(version)
	// The dev loop: make devcluster's certificate, and no Service, so the
	// operator registers its webhook itself.
	certDir, register := *whCertDir, false
	if certDir == "" {
		if certDir, err = devloop.CertDir(*kubeconfig, restConfig); err != nil {
			return err
		}
		register = certDir != ""
	}

	logger.Info("pod-terminator", "version", cli.Version(version))
	// region: config
	return operator.Run(ctx, operator.Config{
		REST:                  restConfig,
		Namespace:             *namespace,
		ProtectedNamespaces:   protectedNamespaces,
		HTTPAddr:              *httpAddr,
		SecureMetricsAddr:     *secureAddr,
		EnableProfiling:       *pprof,
		DisableLeaderElection: !*leaderElect,
		LeaseDuration:         *leaseDur,
		RenewDeadline:         *renewDL,
		RetryPeriod:           *retryPeriod,
		DryRunAll:             *dryRunAll,
		Webhook: operator.Webhook{
			Addr:       *whAddr,
			CertDir:    certDir,
			Register:   register,
			Hosts:      []string{*whService + "." + *namespace + ".svc"},
			ConfigName: *whConfig,
		},
		TracerProvider: tp,
		Logger:         logger,
	})
	// endregion: config
}

// namespaceList splits a comma-separated list of namespace names, ignoring
// spaces and empty entries.
func namespaceList(s string) ([]string, error) {
	var out []string
	for ns := range strings.SplitSeq(s, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if msgs := k8svalidation.IsDNS1123Label(ns); len(msgs) > 0 {
			return nil, fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
		}
		out = append(out, ns)
	}
	return out, nil
}
