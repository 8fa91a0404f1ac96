// Command multi-resource is the tenant bootstrapper: for every Tenant it
// keeps a namespace with a quota, default container limits, a RoleBinding of
// the tenant's admins and, optionally, a default-deny NetworkPolicy. See
// operators/multi-resource/README.md.
//
// This file is wiring only: flags become an operator.Config, and
// operator.Run does the rest.
//
//	multi-resource -kubeconfig ~/.kube/config -leader-elect=false
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/cli"
	"github.com/kooperkit/kooper/operators/multi-resource/internal/operator"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit("multi-resource", err, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("multi-resource", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		showVersion = fs.Bool("version", false, "print the version and exit")
		kubeconfig  = fs.String("kubeconfig", "", "kubeconfig file; empty: in-cluster config, else $KUBECONFIG or ~/.kube/config")
		qps         = fs.Float64("kube-api-qps", 100, "client requests per second to the API server (each Tenant is six objects: client-go's default 5 makes 50 Tenants take a minute)")
		burst       = fs.Int("kube-api-burst", 200, "client request burst to the API server")
		httpAddr    = fs.String("http-addr", ":8080", "address serving /metrics, /healthz and /readyz; empty disables it")
		secureAddr  = fs.String("metrics-secure-addr", "", "HTTPS address serving /metrics instead of -http-addr, only to clients the API server authorizes to get /metrics (needs the ClusterRole system:auth-delegator); empty: /metrics on -http-addr")
		pprof       = fs.Bool("pprof", false, "also serve Go's profiles under /debug/pprof/ on -http-addr")
		leaderElect = fs.Bool("leader-elect", true, "hold a Lease so that only one replica acts; turn off for a single local replica")
		leaseDur    = fs.Duration("leader-elect-lease-duration", leaderelection.DefaultLeaseDuration, "how long a standby waits after the leader's last renewal before taking over")
		renewDL     = fs.Duration("leader-elect-renew-deadline", leaderelection.DefaultRenewDeadline, "how long the leader retries a renewal before it stops leading; shorter than the lease duration")
		retryPeriod = fs.Duration("leader-elect-retry-period", leaderelection.DefaultRetryPeriod, "the wait between attempts to acquire or renew the Lease")
		namespace   = fs.String("namespace", cli.EnvOr("POD_NAMESPACE", operator.DefaultNamespace), "the operator's namespace, where its Lease lives")
		resync      = fs.Duration("resync", operator.DefaultResync, "how often every Tenant is handled again anyway (drift is seen as it happens)")
		logLevel    = fs.String("log-level", "info", "debug, info, warn or error")
		logFormat   = fs.String("log-format", "text", "text or json")
		tracingMode = fs.String("tracing", "off", "off, stdout (spans on standard error) or otlp (OTLP/gRPC to $OTEL_EXPORTER_OTLP_ENDPOINT)")
	)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(stdout, "multi-resource", cli.Version(version))
		return err
	}
	logger, err := cli.NewLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	// client-go logs through klog: one format for every line.
	defer log.RouteKlog(logger)()
	tp, shutdownTracing, err := cli.TracerProvider(ctx, *tracingMode, "multi-resource", stderr)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()
	restConfig, err := cli.LoadREST(*kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = float32(*qps), *burst
	restConfig.UserAgent = "multi-resource/" + cli.Version(version)

	logger.Info("multi-resource", "version", cli.Version(version))
	// region: run
	return operator.Run(ctx, operator.Config{
		REST:                  restConfig,
		Namespace:             *namespace,
		Resync:                *resync,
		HTTPAddr:              *httpAddr,
		SecureMetricsAddr:     *secureAddr,
		EnableProfiling:       *pprof,
		DisableLeaderElection: !*leaderElect,
		LeaseDuration:         *leaseDur,
		RenewDeadline:         *renewDL,
		RetryPeriod:           *retryPeriod,
		TracerProvider:        tp,
		Logger:                logger,
	})
	// endregion: run
}
