package integration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/hack/envtest"
)

// root is the repository, relative to this package.
const root = "../../.."

// program is hack/devcluster and podTerminator the pod-terminator, as a
// user runs it in the dev loop, both built by TestMain.
var program, podTerminator string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "devcluster-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	program, podTerminator = filepath.Join(dir, "devcluster"), filepath.Join(dir, "pod-terminator")
	// One build for both: they share most packages.
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "..", root+"/operators/pod-terminator/cmd/pod-terminator")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n%s", build, err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// make devcluster serves every CRD through the kubeconfig it prints until
// make devcluster-stop, run from another process with no PID given, has
// stopped it and it has exited, leaving nothing behind. A second start
// meanwhile fails at once and disturbs nothing. After the stop it starts
// again, even over a pid file whose PID now belongs to another process,
// which nobody signals.
func TestMakeDevclusterServesUntilMakeDevclusterStop(t *testing.T) {
	needBinaries(t)
	state := filepath.Join(t.TempDir(), ".devcluster")
	crds := crdNames(t)

	first := start(t, state)
	kubeconfig := first.ready(t)
	if want := filepath.Join(state, "kubeconfig"); kubeconfig != want {
		t.Errorf("got kubeconfig %s, want %s", kubeconfig, want)
	}
	checkEstablished(t, kubeconfig, crds)

	second := start(t, state)
	err := second.wait(t, 30*time.Second)
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("got %v from a second start, want exit status 1", err)
	}
	want := fmt.Sprintf("devcluster: a dev cluster is already running (pid %d, kubeconfig %s): use it, or stop it with make devcluster-stop\n",
		first.cmd.Process.Pid, kubeconfig)
	if got := second.out.String(); got != want {
		t.Errorf("a second start said %q, want %q", got, want)
	}
	checkEstablished(t, kubeconfig, crds) // the first one still serves

	stop(t, state, fmt.Sprintf("==> dev cluster stopped (pid %d has exited)", first.cmd.Process.Pid))
	first.stopped(t, kubeconfig)

	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	otherDone := make(chan struct{})
	go func() { _ = other.Wait(); close(otherDone) }()
	t.Cleanup(func() { _ = other.Process.Kill(); <-otherDone })
	if err := os.WriteFile(filepath.Join(state, "pid"), []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	third := start(t, state)
	checkEstablished(t, third.ready(t), crds)
	stop(t, state, fmt.Sprintf("==> dev cluster stopped (pid %d has exited)", third.cmd.Process.Pid))
	third.stopped(t, kubeconfig)
	select {
	case <-otherDone:
		t.Errorf("pid %d, named in a stale pid file, was stopped", other.Process.Pid)
	default:
	}

	stop(t, state, "==> no dev cluster is running")
}

// instance is one run of the program, in a process group of its own as a
// shell would start it.
type instance struct {
	cmd     *exec.Cmd
	out     *syncBuffer
	began   time.Time
	done    chan struct{}
	exitErr error // once done is closed
}

func start(t *testing.T, state string) *instance {
	t.Helper()
	return launch(t, program, "-dir", state)
}

// launch starts bin with args in the repository, where make runs it: the
// control plane is found in bin/.
func launch(t *testing.T, bin string, args ...string) *instance {
	t.Helper()
	dir, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{out: &syncBuffer{}, done: make(chan struct{}), began: time.Now()}
	in.cmd = exec.Command(bin, args...)
	in.cmd.Dir = dir
	in.cmd.Stdout, in.cmd.Stderr = in.out, in.out
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { in.exitErr = in.cmd.Wait(); close(in.done) }()
	// A failed test stops it as make devcluster-stop (or Ctrl-C) would, so
	// that it removes what it wrote, and kills it if that takes too long.
	t.Cleanup(func() {
		_ = in.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-in.done:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-in.cmd.Process.Pid, syscall.SIGKILL)
			<-in.done
		}
	})
	return in
}

var readyLine = regexp.MustCompile(`(?m)^==> dev cluster ready in \S+; kubeconfig: (\S+)$`)

// ready waits for the line that names the kubeconfig and returns it.
func (in *instance) ready(t *testing.T) string {
	t.Helper()
	return in.await(t, readyLine, 150*time.Second)[1]
}

// await waits until the output matches re and returns the match and its
// submatches.
func (in *instance) await(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := re.FindStringSubmatch(in.out.String()); m != nil {
			t.Logf("pid %d said %q after %s", in.cmd.Process.Pid, m[0], time.Since(in.began).Round(time.Millisecond))
			return m
		}
		select {
		case <-in.done:
			t.Fatalf("exited (%v) before it said %q:\n%s", in.exitErr, re, in.out.String())
		case <-deadline.C:
			t.Fatalf("did not say %q within %s:\n%s", re, timeout, in.out.String())
		case <-tick.C:
		}
	}
}

func (in *instance) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-in.done:
		return in.exitErr
	case <-time.After(timeout):
		t.Fatalf("pid %d still running after %s:\n%s", in.cmd.Process.Pid, timeout, in.out.String())
		return nil
	}
}

// stopped checks, right after make devcluster-stop has returned, that the
// instance has removed its kubeconfig, the cluster's directory and its pid
// file, and has exited with status 0: stop returns once it is gone.
func (in *instance) stopped(t *testing.T, kubeconfig string) {
	t.Helper()
	got := in.out.String()
	m := regexp.MustCompile(`data and logs in (\S+) `).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no cluster directory in the output:\n%s", got)
	}
	for _, path := range []string{kubeconfig, m[1], filepath.Join(filepath.Dir(kubeconfig), "pid"), filepath.Join(filepath.Dir(kubeconfig), "webhook")} {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there when make devcluster-stop returns (%v)", path, err)
		}
	}
	// It has exited; at most the test has not reaped it yet.
	if err := in.wait(t, 2*time.Second); err != nil {
		t.Errorf("got %v after make devcluster-stop, want exit status 0:\n%s", err, in.out.String())
	}
	got = in.out.String()
	if !strings.Contains(got, "==> dev cluster stopped\n") || strings.Contains(got, "could not") {
		t.Errorf("the output does not show a clean stop:\n%s", got)
	}
}

// stop runs make devcluster-stop's command and checks its output.
func stop(t *testing.T, state, want string) {
	t.Helper()
	began := time.Now()
	out, err := exec.Command(program, "-dir", state, "-stop").CombinedOutput()
	if err != nil {
		t.Fatalf("-stop: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("-stop said %q, want %q", out, want)
	}
	t.Logf("-stop returned after %s", time.Since(began).Round(time.Millisecond))
}

// checkEstablished checks through kubeconfig that the API server serves
// every CRD: the ready line promises it, so there is no waiting.
func checkEstablished(t *testing.T, kubeconfig string, names []string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("could not read CRD %s through %s: %v", name, kubeconfig, err)
			continue
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}
		if !established {
			t.Errorf("CRD %s is not established: %+v", name, crd.Status.Conditions)
		}
	}
}

// crdNames are the names of the CRDs in manifests/crds/<group>/.
func crdNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "manifests", "crds", "*", "*_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRD in manifests/crds (%v)", err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("could not decode %s: %v", f, err)
		}
		names = append(names, crd.Name)
	}
	return names
}

// needBinaries fails the test when the control plane make devcluster
// starts is not built: make test builds it first, so only a broken build
// can leave a binary out.
func needBinaries(t *testing.T) {
	t.Helper()
	dir := os.Getenv(envtest.EnvBinDir)
	if dir == "" {
		dir = filepath.Join(root, "bin")
	}
	for _, bin := range []string{envtest.BinEtcd, envtest.BinAPIServer, envtest.BinControllerManager,
		envtest.BinScheduler, envtest.BinKwok, envtest.BinKubectl} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			t.Fatalf("%s is missing in %s: make test builds it (make controlplane WITH_KWOK=1)", bin, dir)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a process's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
