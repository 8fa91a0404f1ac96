package integration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/envtest/procnode"
)

// podsTest is a cluster with the scheduler, the controller manager and a
// procnode node, on which the operators run as their Deployments say: the
// binary from the image make image builds, the container's args and env,
// the ServiceAccount token the kubelet would mount (the binary's
// in-cluster configuration reads it: no kubeconfig), the ports, probes,
// user and grace period of the manifest. The API server calls webhooks
// through their Service's EndpointSlice (--enable-aggregator-routing), as
// a cluster with kube-proxy would, and writes what the operators'
// ServiceAccounts do to an audit log.
type podsTest struct {
	cluster *envtest.Cluster
	node    *procnode.Node
	kube    kubernetes.Interface
	crs     versioned.Interface
	images  map[string]string // operator → image reference
	audit   string
}

func startPodsTest(t *testing.T) *podsTest {
	t.Helper()
	dir := t.TempDir()
	images := map[string]procnode.Image{}
	refs := map[string]string{}
	for _, op := range operators {
		ref := "kooper.test/" + op.name + ":podtest"
		images[ref] = procnode.Image{Tarball: buildImage(t, root, dir, op.name, ref)}
		refs[op.name] = ref
	}
	return startPodsCluster(t, dir, images, refs)
}

// startPodsCluster starts the cluster and the node of a podsTest with
// images, the operators' (refs: operator → image reference) and the pause
// image, whose pods the audit log follows.
func startPodsCluster(t *testing.T, dir string, images map[string]procnode.Image, refs map[string]string) *podsTest {
	t.Helper()
	ctx := context.Background()
	var groups []string
	for op := range refs {
		groups = append(groups, strconv.Quote("system:serviceaccounts:"+namespaceOf(op)))
	}
	slices.Sort(groups)
	pause := filepath.Join(dir, "pause-rootfs")
	goBuild(t, filepath.Join(pause, "pause"), "./testdata/pause")
	images[pauseImage] = procnode.Image{Dir: pause, Entrypoint: []string{"/pause"}, User: "65532:65532"}

	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    userGroups: [`+strings.Join(groups, ", ")+`]
  - level: None
`), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "audit.log")
	// region: procnode
	c, err := envtest.Start(ctx, envtest.Options{BinDir: cluster.BinDir(), ControllerManager: true, Scheduler: true,
		APIServerArgs: []string{"--enable-aggregator-routing=true", "--audit-policy-file=" + policy, "--audit-log-path=" + audit}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	nodeLog := &lockedWriter{w: &bytes.Buffer{}}
	node, err := procnode.Start(ctx, procnode.Options{Config: c.Config(), Images: images, Log: nodeLog})
	if errors.Is(err, procnode.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// endregion: procnode
	t.Cleanup(func() {
		if err := node.Stop(ctx); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("the node's log:\n%s", nodeLog.String())
		}
	})
	return &podsTest{cluster: c, node: node, kube: kubernetes.NewForConfigOrDie(c.Config()),
		crs: versioned.NewForConfigOrDie(c.Config()), images: refs, audit: audit}
}

// pauseImage runs the pods the examples act on.
const pauseImage = "kooper.test/pause:1"

// buildImage builds op's image from the repository at repo as make image
// does (hack/build/build.sh, then hack/image), tagged ref, into dir, and
// returns the tarball.
func buildImage(t *testing.T, repo, dir, op, ref string) string {
	t.Helper()
	bin := filepath.Join(dir, op)
	repo, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command(filepath.Join(repo, "hack", "build", "build.sh"), bin, "./operators/"+op+"/cmd/"+op)
	build.Dir = repo
	build.Env = append(os.Environ(), "GOOS=linux", "VERSION=v0.0.0-podtest")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/build/build.sh %s: %v\n%s", op, err, out)
	}
	tarball := filepath.Join(dir, op+".tar")
	img := exec.Command("go", "run", ".", "-binary", bin, "-version", "v0.0.0-podtest", "-tag", ref, "-out", tarball)
	img.Dir = filepath.Join(repo, "hack", "image")
	img.Env = append(os.Environ(), "GOOS=", "GOARCH=", "SOURCE_DATE_EPOCH=0")
	if out, err := img.CombinedOutput(); err != nil {
		t.Fatalf("hack/image %s: %v\n%s", op, err, out)
	}
	return tarball
}

func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// stream writes objs as one YAML stream.
func stream(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	var b strings.Builder
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String()
}

// apply applies a YAML stream with the test cluster's kubectl.
func (p *podsTest) apply(stream string) error {
	cmd := exec.Command(kubectlPathOf(p.cluster), "--kubeconfig", p.cluster.KubeconfigPath(), "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(stream)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %w\n%s", err, out)
	}
	return nil
}

func kubectlPathOf(c *envtest.Cluster) string {
	return filepath.Join(c.BinDir(), envtest.BinKubectl)
}

// deployed is one operator as rendered, as the run checks it.
type deployed struct {
	op   string
	objs []*unstructured.Unstructured
	// logsFrom is how many container logs the node had before this run:
	// only the run's own pods' logs are read.
	logsFrom int
	since    time.Time
}

// deploy applies what make deploy would (deploy.sh render with the
// image), changed by mutate when set.
func (p *podsTest) deploy(t *testing.T, op string, mutate func(objs []*unstructured.Unstructured)) *deployed {
	t.Helper()
	objs := objects(t, render(t, op, p.images[op]))
	if mutate != nil {
		mutate(objs)
	}
	d := &deployed{op: op, objs: objs, logsFrom: len(p.node.ContainerLogs()), since: time.Now()}
	eventually(t, 30*time.Second, "kubectl apply of "+op, func() error { return p.apply(stream(t, objs)) })
	return d
}

// removeDeployment deletes the operator's Deployment and waits until its
// pods are gone, so that the next run starts from none.
func (p *podsTest) removeDeployment(t *testing.T, op string) {
	t.Helper()
	ctx := context.Background()
	err := p.kube.AppsV1().Deployments(namespaceOf(op)).Delete(ctx, op, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, op+"'s pods are gone", func() error {
		pods, err := p.kube.CoreV1().Pods(namespaceOf(op)).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + op})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.w)
}
