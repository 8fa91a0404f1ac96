package main

// The operator's cmd/<name>: flags become an operator.Config (main.go), and
// the command line as a shell sees it is tested (main_test.go).

func mainGo(op operator) *goFile {
	f := newGoFile(op, "main")
	does := "so far it writes their status only"
	if len(op.Owns) > 0 {
		does = "for each it makes " + op.ownedList() + ", and says in its status whether they are in place"
	}
	f.doc = `Command $Name is the $Name operator, which reconciles $Plural: ` + does + `.
See operators/$Name/README.md.

This file is wiring only: flags become an operator.Config, and operator.Run
does the rest.

	$Name -kubeconfig ~/.kube/config -leader-elect=false`
	f.code(`// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Exit("$Name", err, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("$Name", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		showVersion = fs.Bool("version", false, "print the version and exit")
		kubeconfig  = fs.String("kubeconfig", "", "kubeconfig file; empty: in-cluster config, else $KUBECONFIG or ~/.kube/config")
		qps         = fs.Float64("kube-api-qps", 50, "client requests per second to the API server (client-go's default 5 is too low for an operator)")
		burst       = fs.Int("kube-api-burst", 100, "client request burst to the API server")
		httpAddr    = fs.String("http-addr", ":8080", "address serving /metrics, /healthz and /readyz; empty disables it")
		secureAddr  = fs.String("metrics-secure-addr", "", "HTTPS address serving /metrics instead of -http-addr, only to clients the API server authorizes to get /metrics (needs the ClusterRole system:auth-delegator); empty: /metrics on -http-addr")
		pprof       = fs.Bool("pprof", false, "also serve Go's profiles under /debug/pprof/ on -http-addr")
		leaderElect = fs.Bool("leader-elect", true, "hold a Lease so that only one replica acts; turn off for a single local replica")
		namespace   = fs.String("namespace", cli.EnvOr("POD_NAMESPACE", operator.DefaultNamespace), "the operator's namespace, where its Lease lives")
`)
	if op.Cluster && len(op.Owns) > 0 {
		f.code(`		children    = fs.String("child-namespace", operator.DefaultChildNamespace, "where the objects each $Kind owns are made (the operator's RBAC must allow it)")
`)
	}
	if op.servesNamespaces() {
		f.code(`		served      = fs.String("served-namespaces", operator.DefaultServedNamespaces, "comma-separated namespaces whose $Plural get their children (the operator needs a Role in each: manifests/rbac/$Name/children.yaml)")
`)
	}
	f.code(`		resync      = fs.Duration("resync", operator.DefaultResync, "how often every $Kind is handled again anyway (changes are seen as they happen)")
		logLevel    = fs.String("log-level", "info", "debug, info, warn or error")
		logFormat   = fs.String("log-format", "text", "text or json")
		tracingMode = fs.String("tracing", "off", "off, stdout (spans on standard error) or otlp (OTLP/gRPC to $OTEL_EXPORTER_OTLP_ENDPOINT)")
		// +kooper:scaffold:flags (make new-version adds the conversion webhook's)
	)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(stdout, "$Name", cli.Version(version))
		return err
	}
	logger, err := cli.NewLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	// client-go logs through klog: one format for every line.
	defer log.RouteKlog(logger)()
	tp, shutdownTracing, err := cli.TracerProvider(ctx, *tracingMode, "$Name", stderr)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()
	restConfig, err := cli.LoadREST(*kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = float32(*qps), *burst
	restConfig.UserAgent = "$Name/" + cli.Version(version)

	// +kooper:scaffold:setup (make new-version finds the dev loop's certificate here)
	logger.Info("$Name", "version", cli.Version(version))
	return operator.Run(ctx, operator.Config{
		REST:                  restConfig,
		Namespace:             *namespace,
`)
	if op.Cluster && len(op.Owns) > 0 {
		f.code("\t\tChildNamespace: *children,\n")
	}
	if op.servesNamespaces() {
		f.code("\t\tServedNamespaces: strings.Split(*served, \",\"),\n")
	}
	f.code(`		Resync:                *resync,
		HTTPAddr:              *httpAddr,
		SecureMetricsAddr:     *secureAddr,
		EnableProfiling:       *pprof,
		DisableLeaderElection: !*leaderElect,
		TracerProvider:        tp,
		Logger:                logger,
		// +kooper:scaffold:config (make new-version adds the conversion webhook's)
	})
}
`)
	return f
}

func mainTestGo(op operator) *goFile {
	f := newGoFile(op, "main")
	f.code(`func TestMain(m *testing.M) {
	e2etest.MainIfAsked(main)
	os.Exit(m.Run())
}

// The program as a shell sees it: exit statuses and what -h, -version and
// mistakes print.
func TestTheCommandLine(t *testing.T) {
	e2etest.CheckCommandLine(t, "$Name")
	if stdout, _, status := e2etest.RunMain(t, "-version"); status != 0 || !strings.HasPrefix(stdout, "$Name dev") {
		t.Errorf("-version: got %q, exit status %d; want $Name dev..., 0", stdout, status)
	}
}
`)
	return f
}
