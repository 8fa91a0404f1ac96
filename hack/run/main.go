// Command run is `make run`: it starts a local control plane (or uses the
// cluster of an explicit -kubeconfig), installs the CRDs and RBAC from
// manifests/, starts the sample programs against it, creates example
// resources and streams what the programs do, until Ctrl-C.
//
// It never picks up an exported KUBECONFIG: the demo deletes pods, so
// pointing it at a real cluster takes the -kubeconfig flag.
package main

import (
	"bufio"
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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/hack/internal/terminal"
	"github.com/kooperkit/kooper/kooper/devcluster"
)

// samples are the sample programs `make run` starts, built into bin/ by
// `make build`, with their own flags. Each gets -kubeconfig; its output is
// prefixed with its name.
var samples = []program{
	{name: "pod-logger", args: []string{"-metrics-addr", "127.0.0.1:8180"}},
	// One replica: no leader election. The webhook needs a Service or a URL
	// the API server can reach over TLS; the tests cover it, the demo skips it.
	{name: "pod-terminator", args: []string{"-http-addr", "127.0.0.1:8081", "-leader-elect=false", "-webhook-addr=", "-namespace", "kooper-pod-terminator"}},
	{name: "multi-resource", args: []string{"-http-addr", "127.0.0.1:8082", "-leader-elect=false"}},
	// Three replicas of one sharded controller: each prints the pods of
	// its slots only (docs/tutorial-sharding.md).
	{name: "pod-sharding-1", bin: "pod-sharding", args: []string{"-identity", "pod-sharding-1", "-metrics-addr", "127.0.0.1:8181"}},
	{name: "pod-sharding-2", bin: "pod-sharding", args: []string{"-identity", "pod-sharding-2", "-metrics-addr", "127.0.0.1:8182"}},
	{name: "pod-sharding-3", bin: "pod-sharding", args: []string{"-identity", "pod-sharding-3", "-metrics-addr", "127.0.0.1:8183"}},
}

// programs returns what make run starts: the samples, then every other
// operator of the repository (operators/<name>/cmd/<name>, such as one
// written by make new-operator), each on the next port from 8083, with the
// flags every scaffolded operator has.
func programs(root string) ([]program, error) {
	ops, err := operators(root)
	if err != nil {
		return nil, err
	}
	progs := slices.Clone(samples)
	port := 8083
	for _, name := range ops {
		if slices.ContainsFunc(samples, func(p program) bool { return p.name == name }) {
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
		cluster, err := devcluster.Start(ctx, devcluster.Options{BinDir: binDir, Nodes: *nodes, Progress: prefixed(out, "devcluster")})
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
	kubectl := filepath.Join(binDir, devcluster.BinKubectl)

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

	chaosClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("could not create a client: %w", err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wg.Go(func() { showTerminations(watchCtx, client, prefixed(out, "events")) })
	// Remove the demo PodTerminator while its operator still runs to take
	// its finalizer off: an existing cluster is left as it was found.
	defer removeDemo(chaosClient, say)
	if err := demo(ctx, client, chaosClient, say); err != nil && ctx.Err() == nil {
		return err
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
		if err := kc.run(ctx, "apply", "-f", example); err != nil {
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
	say("try: KUBECONFIG=%s %s get podterminators,pods -A", path, kubectl)
	say("Ctrl-C stops everything")
	<-ctx.Done()
	return nil
}

// demoTerminator is the PodTerminator the demo creates.
const demoTerminator = "kooper-demo-victims"

// demo creates a Deployment of pods that the sample programs act on, scales
// it up after a while so there is something to see, and has the
// pod-terminator terminate some of its pods every few seconds.
func demo(ctx context.Context, client kubernetes.Interface, chaosClient versioned.Interface, say func(string, ...any)) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kooper-demo"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("could not create the demo namespace: %w", err)
	}
	labels := map[string]string{"app": "victim"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: ns.Name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns.Name).Create(ctx, deploy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("could not create the demo Deployment: %w", err)
	}
	say("created Deployment kooper-demo/victim with 3 replicas (kwok runs its pods)")
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(5 * time.Second):
	}
	scale, err := client.AppsV1().Deployments(ns.Name).GetScale(ctx, "victim", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("could not read the demo scale: %w", err)
	}
	scale.Spec.Replicas = 5
	if _, err := client.AppsV1().Deployments(ns.Name).UpdateScale(ctx, "victim", scale, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("could not scale the demo Deployment: %w", err)
	}
	say("scaled kooper-demo/victim to 5 replicas")

	pt := &chaosv1alpha1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: demoTerminator},
		Spec: chaosv1alpha1.PodTerminatorSpec{
			Selector:           metav1.LabelSelector{MatchLabels: labels},
			Namespaces:         []string{ns.Name},
			PeriodSeconds:      ptr.To[int32](5),
			TerminationPercent: 40,
			MinimumInstances:   ptr.To[int32](3),
		},
	}
	if _, err := chaosClient.ChaosV1alpha1().PodTerminators().Create(ctx, pt, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("could not create the demo PodTerminator: %w", err)
	}
	say("created PodTerminator %s: every 5s, 40%% of kooper-demo's app=victim pods, never fewer than 3 left", demoTerminator)

	tn := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: demoTenant},
		Spec: tenancyv1alpha1.TenantSpec{
			Admins:           []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "demo-devs"}},
			NetworkIsolation: true,
		},
	}
	if _, err := chaosClient.TenancyV1alpha1().Tenants().Create(ctx, tn, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("could not create the demo Tenant: %w", err)
	}
	say("created Tenant %s: the multi-resource operator makes namespace tenant-%s with a quota, limits, a RoleBinding and a NetworkPolicy", demoTenant, demoTenant)
	return showTenant(ctx, chaosClient, say)
}

// demoTenant is the Tenant the demo creates.
const demoTenant = "demo"

// showTenant waits until the demo Tenant is Ready and prints its children.
func showTenant(ctx context.Context, client versioned.Interface, say func(string, ...any)) error {
	for {
		tn, err := client.TenancyV1alpha1().Tenants().Get(ctx, demoTenant, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("could not read the demo Tenant: %w", err)
		}
		for _, c := range tn.Status.Conditions {
			if c.Type == tenancyv1alpha1.ConditionReady && c.Status == metav1.ConditionTrue && c.ObservedGeneration == tn.Generation {
				var names []string
				for _, ch := range tn.Status.Children {
					names = append(names, ch.Kind+" "+ch.Name)
				}
				say("Tenant %s is Ready: %s", demoTenant, strings.Join(names, ", "))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// removeDemo deletes the demo PodTerminator and waits until its operator has
// removed the finalizer.
func removeDemo(chaosClient versioned.Interface, say func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pts := chaosClient.ChaosV1alpha1().PodTerminators()
	// The Tenant has no finalizer: the garbage collector deletes its
	// namespace after it, with or without the operator.
	_ = chaosClient.TenancyV1alpha1().Tenants().Delete(ctx, demoTenant, metav1.DeleteOptions{})
	if err := pts.Delete(ctx, demoTerminator, metav1.DeleteOptions{}); err != nil {
		return // never created, or the cluster is gone
	}
	for ctx.Err() == nil {
		if _, err := pts.Get(ctx, demoTerminator, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			say("deleted PodTerminator %s", demoTerminator)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	say("PodTerminator %s is still there: is the pod-terminator running?", demoTerminator)
}

// showTerminations prints the Events the pod-terminator records, until ctx
// is done.
func showTerminations(ctx context.Context, client kubernetes.Interface, out io.Writer) {
	w, err := client.CoreV1().Events(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=PodTerminator"})
	if err != nil {
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if e, isEvent := ev.Object.(*corev1.Event); isEvent && ev.Type != watch.Deleted {
				fmt.Fprintf(out, "PodTerminator %s: %s %s\n", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
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
