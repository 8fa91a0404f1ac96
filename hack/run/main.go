// Command run is `make run`: it starts a local control plane (or uses the
// cluster of an explicit -kubeconfig), installs the CRDs and RBAC from
// manifests/, starts the example programs and every operator against it,
// creates a workload, each operator's demo (demo.go) or its example.yaml,
// and streams what the programs do, until Ctrl-C.
//
// It never picks up an exported KUBECONFIG: the demo deletes pods, so
// pointing it at a real cluster takes the -kubeconfig flag.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/internal/terminal"
)

// examplePrograms are the example programs `make run` starts, built into bin/ by
// `make build`, with their own flags. Each gets -kubeconfig; its output is
// prefixed with its name.
var examplePrograms = []program{
	{name: "pod-logger", args: []string{"-metrics-addr", "127.0.0.1:8180"}},
	// Three replicas of one sharded controller: each prints the pods of
	// its slots only (docs/tutorial-sharding.md).
	{name: "pod-sharding-1", bin: "pod-sharding", args: []string{"-identity", "pod-sharding-1", "-metrics-addr", "127.0.0.1:8181"}},
	{name: "pod-sharding-2", bin: "pod-sharding", args: []string{"-identity", "pod-sharding-2", "-metrics-addr", "127.0.0.1:8182"}},
	{name: "pod-sharding-3", bin: "pod-sharding", args: []string{"-identity", "pod-sharding-3", "-metrics-addr", "127.0.0.1:8183"}},
}

// firstFreePort is the port of the first operator without a demo of its
// own; each next one gets the next port.
const firstFreePort = 8083

// programs returns what make run starts: the example programs, then every operator
// of the repository (operators/<name>/cmd/<name>): with its demo's port and
// flags if it has one (demos), else, such as one written by make
// new-operator, each on the next port from firstFreePort, with the flags
// every scaffolded operator has and its example.yaml.
func programs(root string) ([]program, error) {
	ops, err := operators(root)
	if err != nil {
		return nil, err
	}
	progs := slices.Clone(examplePrograms)
	port := firstFreePort
	for _, name := range ops {
		if d, ok := demos[name]; ok {
			progs = append(progs, program{name: name, args: append([]string{"-http-addr", fmt.Sprintf("127.0.0.1:%d", d.port)}, d.args...)})
			continue
		}
		progs = append(progs, program{
			name:    name,
			args:    []string{"-http-addr", fmt.Sprintf("127.0.0.1:%d", port), "-leader-elect=false"},
			example: filepath.Join("operators", name, "example.yaml"),
		})
		port++
	}
	return progs, nil
}

// operators lists the operators of the repository at root: the directories
// of operators/ with a cmd/<name>, sorted.
func operators(root string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "operators", "*", "cmd"))
	if err != nil {
		return nil, fmt.Errorf("could not list the operators: %w", err)
	}
	var names []string
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.IsDir() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

type program struct {
	name string
	// bin is the binary in bin/, if not name.
	bin  string
	args []string
	// example, relative to the repository, is a custom resource applied once
	// the program runs, and awaited until Ready.
	example string
}

func main() {
	restore := terminal.Take()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	restore()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "use this existing cluster instead of starting a local one (the demo deletes pods there)")
	nodes := fs.Int("nodes", 3, "kwok-simulated nodes of the local cluster")
	root := fs.String("root", ".", "the repository: manifests/ and bin/ are found here")
	duration := fs.Duration("duration", 0, "stop by itself after this long, e.g. 2m, for scripts and CI (0: run until Ctrl-C or SIGTERM)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: make run [RUN_ARGS='flags']")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	binDir := filepath.Join(*root, "bin")
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	say := func(format string, a ...any) { fmt.Fprintf(out, "==> "+format+"\n", a...) }

	path := *kubeconfig
	if path == "" {
		say("starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok with %d nodes", *nodes)
		began := time.Now()
		cluster, err := envtest.Start(ctx, envtest.Options{BinDir: binDir, Nodes: *nodes, Progress: prefixed(out, "devcluster")})
		if err != nil {
			return err
		}
		defer func() {
			say("stopping the local control plane")
			_ = cluster.Stop()
		}()
		path = cluster.KubeconfigPath()
		say("control plane ready in %.1fs; logs and certificates in %s", time.Since(began).Seconds(), cluster.Dir())
	} else {
		say("using the existing cluster of %s", path)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("could not load %s: %w", path, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("could not create a client: %w", err)
	}
	kubectl := filepath.Join(binDir, envtest.BinKubectl)

	progs, err := programs(*root)
	if err != nil {
		return err
	}
	// Kustomizations: every CRD, and each operator's namespace and RBAC.
	dirs := []string{"manifests/crds"}
	for _, p := range progs {
		if dir := filepath.Join(*root, "manifests", "rbac", p.name); hasYAML(dir) {
			dirs = append(dirs, "manifests/rbac/"+p.name)
		}
	}
	for _, dir := range dirs {
		dir = filepath.Join(*root, dir)
		if hasYAML(dir) {
			say("kubectl apply -k %s", dir)
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", path, "apply", "-k", dir)
			cmd.Stdout, cmd.Stderr = prefixed(out, "kubectl"), prefixed(out, "kubectl")
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("could not apply %s: %w", dir, err)
			}
		}
	}

	// Stop the programs (SIGTERM, then wait) before the cluster goes.
	var (
		wg      sync.WaitGroup
		started []*exec.Cmd
	)
	defer func() {
		for _, cmd := range started {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		wg.Wait()
	}()
	for _, p := range progs {
		bin := p.bin
		if bin == "" {
			bin = p.name
		}
		cmd := exec.Command(filepath.Join(binDir, bin), append([]string{"-kubeconfig", path}, p.args...)...)
		cmd.Stdout, cmd.Stderr = prefixed(out, p.name), prefixed(out, p.name)
		cmd.SysProcAttr = ownGroup()
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("could not start %s (run make build): %w", p.name, err)
		}
		say("started %s (pid %d)", p.name, cmd.Process.Pid)
		started = append(started, cmd)
		wg.Go(func() { _ = cmd.Wait() })
	}

	kooper, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("could not create a client: %w", err)
	}
	c := demoClients{kube: client, kooper: kooper}
	names := demoNames(progs)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	for _, name := range names {
		for _, kind := range demos[name].kinds {
			wg.Go(func() { showEvents(watchCtx, client, kind, prefixed(out, "events")) })
		}
	}
	// Remove the demos' objects while their operators still run to take
	// their finalizers off: an existing cluster is left as it was found.
	defer func() {
		for _, name := range names {
			stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := demos[name].stop(stopCtx, c); err != nil {
				say("%s: %v", name, err)
			} else {
				say("removed the demo of %s", name)
			}
			cancel()
		}
	}()
	if err := workload(ctx, client, say); err != nil && ctx.Err() == nil {
		return err
	}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		if err := demos[name].start(ctx, c, say); err != nil && ctx.Err() == nil {
			return fmt.Errorf("the demo of %s: %w", name, err)
		}
	}
	kc := kubectlCmd{bin: kubectl, kubeconfig: path, out: prefixed(out, "kubectl")}
	// The examples are removed on the way out, while their operators still
	// run.
	var examples []string
	defer func() {
		for _, example := range examples {
			_ = kc.run(context.Background(), "delete", "--ignore-not-found", "--wait=false", "-f", example)
		}
	}()
	for _, p := range progs {
		if p.example == "" || ctx.Err() != nil {
			continue
		}
		example := filepath.Join(*root, p.example)
		if _, err := os.Stat(example); err != nil {
			continue
		}
		say("kubectl apply -f %s", p.example)
		if err := kc.apply(ctx, example, 30*time.Second); err != nil {
			return fmt.Errorf("could not apply %s: %w", p.example, err)
		}
		examples = append(examples, example)
		if err := kc.run(ctx, "wait", "--for=condition=Ready", "--timeout=60s", "-f", example); err != nil {
			if ctx.Err() != nil {
				break
			}
			say("%s is not Ready after 60s: see [%s] above", p.example, p.name)
			continue
		}
		say("%s: the example %s is Ready", p.name, p.example)
	}
	resources := []string{}
	for _, name := range names {
		resources = append(resources, demos[name].resources...)
	}
	say("try: KUBECONFIG=%s %s get %s -A", path, kubectl, strings.Join(append(resources, "pods"), ","))
	say("Ctrl-C stops everything")
	<-ctx.Done()
	return nil
}

// kubectlCmd runs kubectl on one cluster, its output to out.
type kubectlCmd struct {
	bin, kubeconfig string
	out             io.Writer
}

func (k kubectlCmd) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = k.out, k.out
	return cmd.Run()
}

// apply runs kubectl apply -f file until it succeeds, for up to wait: an
// operator serving a conversion webhook points its CRD at itself as it
// starts (the dev loop), and until then an object in a version the API
// server does not store cannot be written. Only the last try's output is
// shown.
func (k kubectlCmd) apply(ctx context.Context, file string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		var out bytes.Buffer
		try := k
		try.out = &out
		err := try.run(ctx, "apply", "-f", file)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			_, _ = k.out.Write(out.Bytes())
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func hasYAML(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			found = true
		}
		return nil
	})
	return found
}

// prefixed returns a writer that writes each line to out as "[name] line".
func prefixed(out io.Writer, name string) io.Writer {
	r, w := io.Pipe()
	go func() {
		s := bufio.NewScanner(r)
		s.Buffer(make([]byte, 64*1024), 1024*1024)
		for s.Scan() {
			fmt.Fprintf(out, "[%s] %s\n", name, s.Text())
		}
		_ = r.CloseWithError(errors.Join(s.Err(), io.EOF))
	}()
	return w
}
