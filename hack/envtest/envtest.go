package envtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// region: options

// Options configures a Cluster. The zero value starts etcd and
// kube-apiserver only.
type Options struct {
	// BinDir holds the binaries. Default: $KOOPER_CONTROLPLANE_BIN, else the
	// nearest bin/ above the working directory holding kube-apiserver (the
	// repository's, filled by `make controlplane`).
	BinDir string
	// Dir holds the cluster's data, certificates, kubeconfig and logs.
	// Default: a new temporary directory, removed by Stop.
	Dir string
	// ControllerManager starts kube-controller-manager with every controller
	// (garbage collection, ReplicaSets, namespaces, service accounts), and
	// Start waits for the default ServiceAccount. Without it the
	// ServiceAccount admission plugin is off, so pods can still be created.
	ControllerManager bool
	// Nodes starts kube-scheduler and kwok and registers that many fake
	// nodes, so pods are scheduled and reach Running with no kubelet.
	// Implies ControllerManager.
	Nodes int
	// Scheduler starts kube-scheduler, for nodes of your own (package
	// procnode's, which run pods as processes). Implied by Nodes.
	Scheduler bool
	// StartTimeout bounds Start and StartAPIServer. Default 3m: a cluster
	// starts in seconds, but on two cores shared with race-built tests the
	// controller-manager's first ServiceAccount has taken over a minute.
	StartTimeout time.Duration
	// Progress, if set, receives one line per start-up step.
	Progress io.Writer
	// APIServerArgs are more kube-apiserver flags, after the ones a Cluster
	// sets (a later flag wins): an audit log, request limits, and the like.
	APIServerArgs []string
	// FeatureGates are kube-apiserver's feature gates, over the defaults:
	// ShardedListAndWatch (alpha, for package sharding's server-side mode)
	// is on. Set it false to see what a cluster without it does.
	FeatureGates map[string]bool
}

// endregion: options

// Cluster is a local control plane of real Kubernetes processes on
// 127.0.0.1. Start one with Start; Stop it when done.
type Cluster struct {
	opts    Options
	dir     string
	ownDir  bool
	binDir  string
	pki     *pki
	admin   keyPair
	restCfg *rest.Config

	// pickPorts returns n free ports: freePorts, or a test's.
	pickPorts func(n int) ([]int, error)

	mu      sync.Mutex
	procs   []*process // in start order
	api     *process
	etcd    *process
	etcdURL string
}

// Binary names looked up in Options.BinDir.
const (
	BinEtcd              = "etcd"
	BinAPIServer         = "kube-apiserver"
	BinControllerManager = "kube-controller-manager"
	BinScheduler         = "kube-scheduler"
	BinKubectl           = "kubectl"
	BinKwok              = "kwok"
)

// Start starts etcd and kube-apiserver (plus what opts asks for) on free
// 127.0.0.1 ports with a throw-away PKI and RBAC authorization, waits until
// they are ready, and writes an admin kubeconfig. On error everything
// started is stopped again. Errors wrap ErrBinariesMissing when a binary is
// missing.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	return startPicking(ctx, opts, freePorts)
}

// startPicking is Start with the ports pick returns, for tests of a port
// taken between the pick and the bind.
func startPicking(ctx context.Context, opts Options, pick func(n int) ([]int, error)) (*Cluster, error) {
	if opts.Nodes > 0 {
		opts.ControllerManager, opts.Scheduler = true, true
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	need := []string{BinEtcd, BinAPIServer}
	if opts.ControllerManager {
		need = append(need, BinControllerManager)
	}
	if opts.Scheduler {
		need = append(need, BinScheduler)
	}
	if opts.Nodes > 0 {
		need = append(need, BinKwok)
	}
	binDir, err := findBinDir(opts.BinDir, need)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, binDir: binDir, dir: opts.Dir, pickPorts: pick}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "kooper-devcluster-"); err != nil {
			return nil, fmt.Errorf("could not create the cluster directory: %w", err)
		}
		c.ownDir = true
	}
	if err := c.start(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	began := time.Now()

	pkiDir := filepath.Join(c.dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return fmt.Errorf("could not create %s: %w", pkiDir, err)
	}
	var err error
	if c.pki, err = newPKI(pkiDir); err != nil {
		return err
	}
	serving, err := c.pki.issue("kube-apiserver", nil, []string{"127.0.0.1", "localhost", "10.0.0.1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return err
	}
	if c.admin, err = c.pki.issue("kooper-admin", []string{"system:masters"}, nil); err != nil {
		return err
	}
	saPub, saKey, err := c.pki.serviceAccountKeys()
	if err != nil {
		return err
	}
	// etcd: one member, plain HTTP on loopback, no fsync (throw-away data).
	// Its name is the cluster's own, so Start can tell it from another
	// cluster's etcd answering on the same port.
	etcdName := "devcluster-" + randomHex(6)
	etcdDir := filepath.Join(c.dir, "etcd")
	err = c.startOnFreePorts(ctx, began, 2, func(ports []int) (*process, func(context.Context) error) {
		etcdURL := "http://127.0.0.1:" + itoa(ports[0])
		peerURL := "http://127.0.0.1:" + itoa(ports[1])
		// A member that could not bind its ports may have written data
		// naming them.
		_ = os.RemoveAll(etcdDir)
		p := c.process(BinEtcd, "--name="+etcdName, "--data-dir="+etcdDir,
			"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
			"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster="+etcdName+"="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
		c.etcd, c.etcdURL = p, etcdURL
		return p, func(ctx context.Context) error {
			if err := p.waitHealthy(ctx, etcdURL+"/health", nil); err != nil {
				return err
			}
			return etcdIsNamed(ctx, etcdURL, etcdName)
		}
	})
	if err != nil {
		return err
	}
	c.progress("etcd ready", began)

	err = c.startOnFreePorts(ctx, began, 1, func(ports []int) (*process, func(context.Context) error) {
		apiArgs := []string{
			"--etcd-servers=" + c.etcdURL,
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + itoa(ports[0]),
			"--tls-cert-file=" + serving.certFile, "--tls-private-key-file=" + serving.keyFile,
			"--client-ca-file=" + c.pki.file("ca.crt"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
			"--service-cluster-ip-range=10.0.0.0/24",
			"--authorization-mode=RBAC",
			// With a loopback advertise address the endpoints reconciler fails:
			// Endpoints refuse loopback IPs.
			"--endpoint-reconciler-type=none",
			"--allow-privileged=true",
			"--cert-dir=" + filepath.Join(c.dir, "apiserver"),
		}
		apiArgs = append(apiArgs, "--feature-gates="+featureGates(c.opts.FeatureGates))
		apiArgs = append(apiArgs, c.opts.APIServerArgs...)
		if !c.opts.ControllerManager {
			// No controller-manager creates the default ServiceAccount.
			apiArgs = append(apiArgs, "--disable-admission-plugins=ServiceAccount")
		}
		c.api = c.process(BinAPIServer, apiArgs...)
		c.restCfg = &rest.Config{
			Host:            "https://127.0.0.1:" + itoa(ports[0]),
			TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caPEM, CertData: c.admin.certPEM, KeyData: c.admin.keyPEM},
			QPS:             100,
			Burst:           200,
		}
		return c.api, c.waitAPIServer
	})
	if err != nil {
		return err
	}
	c.progress(c.apiServerName()+" ready at "+c.restCfg.Host, began)
	if err := c.writeKubeconfig(c.KubeconfigPath(), "kooper-admin", c.admin); err != nil {
		return err
	}

	if c.opts.ControllerManager {
		if err := c.startControllerManager(ctx, saKey, began); err != nil {
			return err
		}
	}

	if c.opts.Scheduler {
		if err := c.startScheduler(ctx, began); err != nil {
			return err
		}
	}
	if c.opts.Nodes > 0 {
		if err := c.startNodes(ctx, began); err != nil {
			return err
		}
	}
	return nil
}

// Config returns a copy of the admin client configuration (system:masters).
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.restCfg) }

// KubeconfigPath returns the admin kubeconfig, for kubectl and operators.
func (c *Cluster) KubeconfigPath() string { return filepath.Join(c.dir, "kubeconfig") }

// Dir returns the cluster's directory (data, certificates, logs).
func (c *Cluster) Dir() string { return c.dir }

// BinDir returns the directory the binaries were taken from; it holds a
// kubectl matching the server when `make controlplane` built it.
func (c *Cluster) BinDir() string { return c.binDir }

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after 3s), for
// fault tests. Clients see connection errors until StartAPIServer.
func (c *Cluster) StopAPIServer() {
	c.api.stop(3 * time.Second)
}

// StartAPIServer starts kube-apiserver again, with the same address, flags
// and etcd data, and waits until it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	if c.api.running() {
		return errors.New("kube-apiserver is running")
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	return c.runAPIServer(ctx)
}

// RestartAPIServer is StopAPIServer then StartAPIServer.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.StopAPIServer()
	return c.StartAPIServer(ctx)
}

// StopEtcd stops etcd (SIGTERM, then SIGKILL after 3s), for fault tests:
// kube-apiserver stays up and answers with errors (and its watch cache)
// until StartEtcd.
func (c *Cluster) StopEtcd() {
	c.etcd.stop(3 * time.Second)
}

// StartEtcd starts etcd again with its data, and waits until it is
// healthy.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	if c.etcd.running() {
		return errors.New("etcd is running")
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	return c.run(ctx, c.etcd, c.etcdURL+"/health", nil)
}

// EtcdURL is etcd's client URL (plain HTTP on 127.0.0.1), for fault tests
// that compact its history.
func (c *Cluster) EtcdURL() string { return c.etcdURL }

// Stop stops every process the cluster started, newest first, waits for
// them to exit, and removes the cluster's directory if Start created it.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(10 * time.Second)
	}
	if c.ownDir {
		if err := os.RemoveAll(c.dir); err != nil {
			return fmt.Errorf("could not remove %s: %w", c.dir, err)
		}
	}
	return nil
}

func (c *Cluster) process(bin string, args ...string) *process {
	p := &process{name: bin, path: filepath.Join(c.binDir, bin), args: args, logFile: filepath.Join(c.dir, bin+".log")}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p
}

func (c *Cluster) run(ctx context.Context, p *process, health string, tlsCfg *tls.Config) error {
	if err := p.start(); err != nil {
		return err
	}
	return p.waitHealthy(ctx, health, tlsCfg)
}

// runAPIServer starts kube-apiserver again on its address, for
// StartAPIServer.
func (c *Cluster) runAPIServer(ctx context.Context) error {
	if err := c.api.start(); err != nil {
		return err
	}
	return c.waitAPIServer(ctx)
}

// waitAPIServer waits until kube-apiserver is ready. The check trusts the
// cluster's CA only, so another cluster's API server on the port does not
// pass it.
func (c *Cluster) waitAPIServer(ctx context.Context) error {
	cert, err := tls.X509KeyPair(c.admin.certPEM, c.admin.keyPEM)
	if err != nil {
		return fmt.Errorf("could not load the admin certificate: %w", err)
	}
	cfg := c.trusting()
	cfg.Certificates = []tls.Certificate{cert}
	return c.api.waitHealthy(ctx, c.restCfg.Host+"/readyz", cfg)
}

// startControllerManager starts kube-controller-manager and waits for the
// default ServiceAccount it creates.
func (c *Cluster) startControllerManager(ctx context.Context, saKey string, began time.Time) error {
	kcm, err := c.component("system:kube-controller-manager", nil)
	if err != nil {
		return err
	}
	serving, err := c.pki.issue("kube-controller-manager-serving", nil, []string{"127.0.0.1", "localhost"})
	if err != nil {
		return err
	}
	err = c.startOnFreePorts(ctx, began, 1, func(ports []int) (*process, func(context.Context) error) {
		p := c.process(BinControllerManager,
			"--kubeconfig="+kcm, "--authentication-kubeconfig="+kcm, "--authorization-kubeconfig="+kcm,
			"--bind-address=127.0.0.1", "--secure-port="+itoa(ports[0]),
			"--tls-cert-file="+serving.certFile, "--tls-private-key-file="+serving.keyFile,
			"--cert-dir="+filepath.Join(c.dir, "kube-controller-manager"),
			"--controllers=*", "--leader-elect=false", "--use-service-account-credentials=true",
			"--service-account-private-key-file="+saKey, "--root-ca-file="+c.pki.file("ca.crt"),
			"--cluster-signing-cert-file="+c.pki.file("ca.crt"), "--cluster-signing-key-file="+c.pki.file("ca.key"))
		return p, func(ctx context.Context) error {
			if err := p.waitHealthy(ctx, "https://127.0.0.1:"+itoa(ports[0])+"/healthz", c.trusting()); err != nil {
				return err
			}
			if err := c.waitDefaultServiceAccount(ctx, p); err != nil {
				// The controller-manager's log says why: a controller that
				// could not sync, or a process that died.
				return fmt.Errorf("%w after %s; %w", err, time.Since(began).Round(time.Millisecond), p.failure("was running"))
			}
			return nil
		}
	})
	if err != nil {
		return err
	}
	c.progress("kube-controller-manager ready", began)
	return nil
}

// trusting returns a TLS client configuration that trusts the cluster's CA
// alone: a component's health check passes only when the component itself
// answers, not another cluster's on a port taken in between.
func (c *Cluster) trusting() *tls.Config {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.pki.caPEM)
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// component writes a kubeconfig for a control-plane component whose client
// certificate has common name user.
func (c *Cluster) component(user string, groups []string) (string, error) {
	kp, err := c.pki.issue(user, groups, nil)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, filepath.Base(kp.certFile)+".kubeconfig")
	return path, c.writeKubeconfig(path, user, kp)
}

func (c *Cluster) writeKubeconfig(path, user string, kp keyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devcluster"] = &clientcmdapi.Cluster{Server: c.restCfg.Host, CertificateAuthorityData: c.pki.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.certPEM, ClientKeyData: kp.keyPEM}
	cfg.Contexts["devcluster"] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: user}
	cfg.CurrentContext = "devcluster"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("could not write kubeconfig %s: %w", path, err)
	}
	return nil
}

// waitDefaultServiceAccount waits for the controller-manager p to create
// the default ServiceAccount, without which pods are refused. It stops
// waiting when p exits.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context, p *process) error {
	client, err := kubernetes.NewForConfig(c.restCfg)
	if err != nil {
		return fmt.Errorf("could not create a client: %w", err)
	}
	for {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return fmt.Errorf("could not read the default ServiceAccount: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the default ServiceAccount was not created in time: %w", context.Cause(ctx))
		case <-p.done:
			return errors.New("the default ServiceAccount was not created")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// apiServerName is "kube-apiserver" and, when progress is reported, the
// version it serves: a test run says which server it ran against (the
// version-skew run points BinDir at an older one).
func (c *Cluster) apiServerName() string {
	if c.opts.Progress == nil {
		return BinAPIServer
	}
	client, err := kubernetes.NewForConfig(c.restCfg)
	if err != nil {
		return BinAPIServer
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		return BinAPIServer
	}
	return BinAPIServer + " " + v.GitVersion
}

func (c *Cluster) progress(step string, began time.Time) {
	if c.opts.Progress != nil {
		fmt.Fprintf(c.opts.Progress, "devcluster: %s (%.1fs)\n", step, time.Since(began).Seconds())
	}
}

// insecure is for the health endpoints of components serving self-signed
// certificates on loopback.
// featureGates is the --feature-gates value: the defaults (see
// Options.FeatureGates) with set over them, sorted.
func featureGates(set map[string]bool) string {
	gates := map[string]bool{"ShardedListAndWatch": true}
	maps.Copy(gates, set)
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		parts = append(parts, name+"="+strconv.FormatBool(gates[name]))
	}
	return strings.Join(parts, ",")
}
