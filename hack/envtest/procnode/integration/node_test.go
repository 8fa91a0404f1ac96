package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/envtest/procnode"
)

var (
	cluster *envtest.Cluster
	node    *procnode.Node
	kube    kubernetes.Interface
	// unsupported is why procnode cannot run here (not root), or nil.
	unsupported error
)

// image is the reference of the test program's image on the node.
const image = "kooper.test/probe:1"

// One cluster with the scheduler and the controller manager (ReplicaSets,
// ServiceAccount tokens' root CA), and one node running the test program.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	c, err := envtest.ForTests(ctx, envtest.Options{ControllerManager: true, Scheduler: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster = c
	defer func() { _ = c.Stop() }()
	kube = kubernetes.NewForConfigOrDie(c.Config())

	dir, err := os.MkdirTemp("", "procnode-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	rootfs := filepath.Join(dir, "rootfs")
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(rootfs, "probe"), "./testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "could not build the test program: %v\n%s", err, out)
		return 1
	}
	node, err = procnode.Start(ctx, procnode.Options{
		Name:   "procnode-test",
		Config: c.Config(),
		Images: map[string]procnode.Image{image: {Dir: rootfs, Entrypoint: []string{"/probe"}, User: "65532:65532"}},
		Log:    os.Stderr,
	})
	if errors.Is(err, procnode.ErrUnsupported) {
		// Not root: a limit of this machine, not a defect, so every test
		// skips with the one-line reason, under CI as anywhere else.
		unsupported = err
		fmt.Fprintf(os.Stderr, "skipping: %v\n", err)
		return m.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := node.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// needNode skips t where procnode cannot run, with the one-line reason.
func needNode(t *testing.T) {
	t.Helper()
	if unsupported != nil {
		t.Skip(unsupported)
	}
}

var seq atomic.Int32

// newNamespace creates a namespace for one test, deleted after it.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("procnode-%d-%d", os.Getpid(), seq.Add(1))
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}) })
	eventually(t, 30*time.Second, "the default ServiceAccount and root CA of "+name, func() error {
		if _, err := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := kube.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
	return name
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// probeContainer is the test program's container with args and a
// readiness probe on its named port.
func probeContainer(args ...string) corev1.Container {
	return corev1.Container{
		Name: "probe", Image: image,
		Args:  append([]string{"-addr=:8080"}, args...),
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			PeriodSeconds: 1},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
	}
}

func deployment(ns, name string, replicas int32, c corev1.Container) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr.To[int64](5)},
			},
		},
	}
}

// readyPods waits until n pods of app are Ready, and returns them.
func readyPods(t *testing.T, ns, app string, n int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	eventually(t, 60*time.Second, fmt.Sprintf("%d Ready pods of %s", n, app), func() error {
		pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return err
		}
		ready = ready[:0]
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready = append(ready, p)
			}
		}
		if len(ready) != n {
			return fmt.Errorf("%d of %d Ready: %s", len(ready), n, describe(pods.Items))
		}
		return nil
	})
	return ready
}

func podReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

func describe(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s node=%q phase=%s ip=%s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP)
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " %s(ready=%v restarts=%d state=%+v)", cs.Name, cs.Ready, cs.RestartCount, cs.State)
		}
	}
	return b.String()
}

// whoami is what the test program reports about itself.
type whoami struct {
	Host, Name, User, UserError string
	UID, GID                    int
	Env                         []string
	RootWritable                bool
}

func ask(t *testing.T, p corev1.Pod) whoami {
	t.Helper()
	resp, err := http.Get("http://" + p.Status.PodIP + ":8080/whoami")
	if err != nil {
		t.Fatalf("pod %s at its address: %v", p.Name, err)
	}
	defer resp.Body.Close()
	var w whoami
	if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
		t.Fatal(err)
	}
	return w
}

// Two replicas listen on the same port, each at its own address, named
// after its pod, as the image's user, with the environment the kubelet
// gives (fieldRef, resourceFieldRef, $(VAR) in args, the kubernetes
// Service), and reach the API server as their ServiceAccount with the
// token and CA mounted where client-go's in-cluster configuration reads
// them.
func TestPodsRunAsTheirSpecSays(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	ns := newNamespace(t)
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prober"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := probeContainer("-name=$(POD_NAME)")
	c.Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
		{Name: "GREETING", Value: "hello $(POD_NAMESPACE), $$(not expanded)"},
	}
	d := deployment(ns, "probe", 2, c)
	d.Spec.Template.Spec.ServiceAccountName = "prober"
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := readyPods(t, ns, "probe", 2)
	if pods[0].Status.PodIP == pods[1].Status.PodIP {
		t.Fatalf("both pods have address %s", pods[0].Status.PodIP)
	}
	for _, p := range pods {
		if p.Spec.NodeName != node.Name() || p.Status.HostIP != node.IP().String() {
			t.Errorf("%s: on node %s (%s), want %s (%s)", p.Name, p.Spec.NodeName, p.Status.HostIP, node.Name(), node.IP())
		}
		w := ask(t, p)
		want := []string{"POD_NAME=" + p.Name, "POD_NAMESPACE=" + ns, "GOMEMLIMIT=67108864",
			"GREETING=hello " + ns + ", $(not expanded)", "KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443"}
		for _, kv := range want {
			if !slices.Contains(w.Env, kv) {
				t.Errorf("%s: environment lacks %s: %v", p.Name, kv, w.Env)
			}
		}
		if w.Host != p.Name || w.Name != p.Name {
			t.Errorf("%s: host name %q, -name %q, want the pod's name", p.Name, w.Host, w.Name)
		}
		if w.UID != 65532 || w.GID != 65532 {
			t.Errorf("%s: runs as %d:%d, want the image's 65532:65532", p.Name, w.UID, w.GID)
		}
		if sa := "system:serviceaccount:" + ns + ":prober"; w.User != sa {
			t.Errorf("%s: the API server sees %q (%s), want %s", p.Name, w.User, w.UserError, sa)
		}
		if w.RootWritable {
			t.Errorf("%s: a non-root container could write to its root file system", p.Name)
		}
	}
}

// A container that exits is restarted with the kubelet's back-off, its
// last state in the pod's status; one whose liveness probe fails is
// killed and restarted; one whose image the node lacks waits, saying so.
func TestFailingContainers(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	ns := newNamespace(t)

	crash := probeContainer("-exit=3")
	live := probeContainer()
	live.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/nope", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 2}
	missing := probeContainer()
	missing.Image = "kooper.test/absent:1"
	for name, c := range map[string]corev1.Container{"crash": crash, "live": live, "missing": missing} {
		if _, err := kube.AppsV1().Deployments(ns).Create(ctx, deployment(ns, name, 1, c), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := func(app string, ok func(cs corev1.ContainerStatus) error) {
		t.Helper()
		eventually(t, 60*time.Second, app, func() error {
			pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
			if err != nil {
				return err
			}
			if len(pods.Items) != 1 || len(pods.Items[0].Status.ContainerStatuses) != 1 {
				return fmt.Errorf("pods: %s", describe(pods.Items))
			}
			return ok(pods.Items[0].Status.ContainerStatuses[0])
		})
	}
	status("crash", func(cs corev1.ContainerStatus) error {
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount < 2 || last == nil || last.ExitCode != 3 || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
			return fmt.Errorf("want 2 restarts, exit code 3 and CrashLoopBackOff: %+v", cs)
		}
		return nil
	})
	status("live", func(cs corev1.ContainerStatus) error {
		if cs.RestartCount < 1 || cs.LastTerminationState.Terminated == nil {
			return fmt.Errorf("want a restart after the liveness probe failed: %+v", cs)
		}
		return nil
	})
	status("missing", func(cs corev1.ContainerStatus) error {
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ErrImageNeverPull" || !strings.Contains(cs.State.Waiting.Message, "kooper.test/absent:1") {
			return fmt.Errorf("want ErrImageNeverPull naming the image: %+v", cs)
		}
		return nil
	})
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var unhealthy bool
	for _, e := range events.Items {
		unhealthy = unhealthy || (e.Reason == "Unhealthy" && strings.Contains(e.Message, "Liveness probe failed: HTTP probe failed with statuscode: 404"))
	}
	if !unhealthy {
		t.Error("no Unhealthy Event for the failed liveness probe")
	}
}

// A deleted pod's process gets SIGTERM, and the pod is gone from the API
// server once it exited; the container's log says so.
func TestDeletionStopsTheProcess(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	ns := newNamespace(t)
	d := deployment(ns, "stop", 1, probeContainer())
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := readyPods(t, ns, "stop", 1)[0]
	if err := kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the pod is deleted", func() error {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	var log string
	for _, l := range node.ContainerLogs() {
		if l.UID == pod.UID {
			b, err := os.ReadFile(filepath.Join(l.Dir, "1.log"))
			if err != nil {
				t.Fatal(err)
			}
			log = string(b)
		}
	}
	if !strings.Contains(log, "got SIGTERM") {
		t.Errorf("the process did not get SIGTERM; its log:\n%s", log)
	}
}
