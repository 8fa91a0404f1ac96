// Command devcluster is `make devcluster`: a local control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok nodes, as
// make run starts) with every CRD of manifests/crds applied, and nothing
// else, for running your own operator against it while you write it. The
// kubeconfig is written to a fixed path, .devcluster/kubeconfig, so the
// command that runs the operator stays the same from one start to the next.
// It runs until Ctrl-C, SIGTERM or `make devcluster-stop` (this program with
// -stop), which needs no PID: the running program keeps its PID in
// .devcluster/pid, locked while it lives.
//
// Admission webhooks: no Service leads the API server to an operator run
// from a shell, so the dev cluster also writes .devcluster/webhook/, a
// serving certificate for 127.0.0.1 (tls.crt, tls.key) and the CA that
// signed it (ca.crt), made for each start (webhook.go). An operator with a
// webhook, run with -kubeconfig .devcluster/kubeconfig, finds it next to the
// kubeconfig, serves its webhook on 127.0.0.1 with it and registers itself
// with a URL and that CA (operators/internal/devloop) while it runs.
//
// Pods: kwok's nodes run nothing, which is all an operator run from a shell
// needs. To deploy operators from their images instead (make deploy, make
// upgrade), -pods starts one node of package procnode in their place,
// which runs pods as processes (Linux and root), from the image tarballs
// -images names, each known by its tag (make image IMG=..., pods.go).
// -crds=false leaves manifests/crds unapplied, for a release that applies
// its own.
//
// The cluster's data, certificates and logs stay in a temporary directory,
// removed when it stops: each start is a fresh, empty cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/envtest/procnode"
	"github.com/kooperkit/kooper/hack/internal/terminal"
)

// The files of the state directory (-dir).
const (
	kubeconfigFile = "kubeconfig"
	pidFile        = "pid"
)

func main() {
	restore := terminal.Take()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	restore()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("devcluster", flag.ContinueOnError)
	root := fs.String("root", ".", "the repository: manifests/crds is applied from here")
	dir := fs.String("dir", "", "where the kubeconfig and the pid file go (default: .devcluster under -root)")
	nodes := fs.Int("nodes", 3, "kwok-simulated nodes")
	pods := fs.Bool("pods", false, "instead of kwok's nodes, one node that runs pods as processes (package procnode; Linux and root): for operators deployed from their images, make deploy and make upgrade")
	images := fs.String("images", "bin/images", "with -pods, the image tarballs the node has, comma-separated: files, or directories whose *.tar are taken; each image is known by its tag (make image IMG=...)")
	crds := fs.Bool("crds", true, "apply manifests/crds at start; -crds=false leaves them to what you deploy, such as a release older than this tree")
	stop := fs.Bool("stop", false, "stop the dev cluster running with this -dir and wait until it has exited (make devcluster-stop)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: make devcluster [DEVCLUSTER_ARGS='flags'], make devcluster-stop")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		*dir = filepath.Join(*root, ".devcluster")
	}
	say := func(format string, a ...any) { fmt.Fprintf(out, "==> "+format+"\n", a...) }
	if *stop {
		return stopRunning(ctx, *dir, say)
	}
	c := config{root: *root, dir: *dir, nodes: *nodes, crds: *crds}
	if *pods {
		nodesSet := false
		fs.Visit(func(f *flag.Flag) { nodesSet = nodesSet || f.Name == "nodes" })
		if nodesSet && *nodes > 0 {
			return errors.New("-pods and -nodes: a dev cluster runs pods on kwok's nodes (nothing runs) or on one node as processes (-pods), not both: the scheduler would place an operator's replicas on either")
		}
		var paths []string
		for p := range strings.SplitSeq(*images, ",") {
			if p = strings.TrimSpace(p); p != "" && !filepath.IsAbs(p) {
				p = filepath.Join(*root, p)
			}
			if p != "" {
				paths = append(paths, p)
			}
		}
		var err error
		if c.images, err = nodeImages(paths); err != nil {
			return err
		}
		c.pods = true
	}
	return serve(ctx, c, out, say)
}

// config is what a dev cluster runs.
type config struct {
	root, dir string
	nodes     int
	// crds applies manifests/crds at start.
	crds bool
	// pods runs one procnode node with images instead of kwok's nodes.
	pods   bool
	images map[string]procnode.Image
}

// serve starts the cluster, applies the CRDs, writes the kubeconfig and
// waits until ctx is done; then it stops everything and removes the
// kubeconfig and the pid file.
func serve(ctx context.Context, c config, out io.Writer, say func(string, ...any)) error {
	root, dir, nodes := c.root, c.dir, c.nodes
	crds := filepath.Join(root, "manifests", "crds")
	if _, err := os.Stat(filepath.Join(crds, "kustomization.yaml")); c.crds && err != nil {
		return fmt.Errorf("no %s/kustomization.yaml: run from the repository or pass -root (%w)", crds, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("could not create %s: %w", dir, err)
	}
	kubeconfig := filepath.Join(dir, kubeconfigFile)
	pidPath := filepath.Join(dir, pidFile)
	// The lock is never released: the kernel drops it when the process
	// exits, and that is what make devcluster-stop waits for.
	_, err := lockPID(pidPath)
	if running := (*runningError)(nil); errors.As(err, &running) {
		return fmt.Errorf("a dev cluster is already running (pid %d, kubeconfig %s): use it, or stop it with make devcluster-stop", running.pid, kubeconfig)
	}
	if err != nil {
		return err
	}
	// Deferred calls run last first: the kubeconfig goes before the cluster
	// stops, the pid file after.
	defer func() { _ = os.Remove(pidPath) }()

	opts := envtest.Options{Nodes: nodes, Progress: out}
	if c.pods {
		opts = podsOptions(opts)
		say("starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and a node that runs pods as processes")
	} else {
		say("starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok with %d nodes", nodes)
	}
	began := time.Now()
	cluster, err := envtest.Start(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			say("stopped before it was ready")
			return nil
		}
		return err
	}
	defer func() {
		say("stopping the dev cluster")
		if err := cluster.Stop(); err != nil {
			say("%v", err)
			return
		}
		say("dev cluster stopped")
	}()
	say("data and logs in %s (removed when it stops)", cluster.Dir())

	if c.pods {
		stopNode, err := startNode(ctx, cluster, c.images, out)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		// Before the cluster stops: the node deletes its pods.
		defer func() {
			if err := stopNode(); err != nil {
				say("%v", err)
			}
		}()
		say("node %s runs pods as processes, from the images %s", nodeName, strings.Join(tags(c.images), ", "))
	}

	kubectl := kubectlPath(cluster.BinDir())
	if c.crds {
		names, err := applyCRDs(ctx, cluster, kubectl, crds)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		say("applied %s: %s established", crds, strings.Join(names, ", "))
	}
	// Before the kubeconfig, which says the dev cluster is ready, and
	// removed after it.
	webhooks := filepath.Join(dir, webhookDir)
	if err := writeWebhookCerts(webhooks, time.Now()); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(webhooks) }()
	if err := copyFile(cluster.KubeconfigPath(), kubeconfig); err != nil {
		return err
	}
	defer func() { _ = os.Remove(kubeconfig) }()

	say("dev cluster ready in %.1fs; kubeconfig: %s", time.Since(began).Seconds(), kubeconfig)
	if c.pods {
		fmt.Fprintf(out, "    deploy:         make deploy OPERATOR=<name> IMG=<one of the images above> KUBECTL=%s KUBECONFIG=%s\n", kubectlName(kubectl, workDir()), kubeconfig)
	}
	// One replica: no namespace is there for a leader-election Lease.
	fmt.Fprintf(out, "    your operator:  go run ./operators/<name>/cmd/<name> -kubeconfig %s -leader-elect=false\n", kubeconfig)
	fmt.Fprintf(out, "    its webhook:    served on 127.0.0.1 with %s/%s, registered by the operator while it runs\n", webhooks, webhookCert)
	fmt.Fprintf(out, "    kubectl:        %s --kubeconfig %s get crds,nodes\n", kubectlName(kubectl, workDir()), kubeconfig)
	fmt.Fprintf(out, "    stop:           Ctrl-C here, or make devcluster-stop from another shell (pid %d)\n", os.Getpid())
	<-ctx.Done()
	return nil
}

// kubectlPath is the kubectl that `make controlplane` built next to the
// control plane (it matches the server), else the one on the PATH.
func kubectlPath(binDir string) string {
	p := filepath.Join(binDir, envtest.BinKubectl)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return envtest.BinKubectl
}

// kubectlName is how the user, in the directory wd that make runs in,
// runs the kubectl at path: bin/kubectl when make controlplane built it
// there, which matches the server (a kubectl on the PATH may be older and
// warn about version skew, or be missing), else the path in full. A
// relative path (the PATH's kubectl, when none was built) is named as it
// is.
func kubectlName(path, wd string) string {
	if !filepath.IsAbs(path) || wd == "" {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// workDir is the working directory, or "" if it cannot be told.
func workDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return wd
}

// copyFile writes src's content to dst, readable by the user only (it holds
// the admin's key), through a rename so a reader never sees half a file.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("could not read %s: %w", src, err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("could not write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("could not write %s: %w", dst, err)
	}
	return nil
}
