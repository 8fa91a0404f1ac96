package envtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kooperkit/kooper/hack/envtest"
)

var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	began := time.Now()
	c, err := envtest.ForTests(context.Background(), envtest.Options{ControllerManager: true, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "devcluster: started in %s\n", time.Since(began).Round(time.Millisecond))
	cluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// admin returns a client with the cluster's admin credentials.
func admin() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(cluster.Config())
}

func namespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func TestTheAPIServerAnswersWithRBACOn(t *testing.T) {
	client := admin()
	ns := namespace(t, client)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin could not create a ConfigMap: %v", err)
	}
	cfg := cluster.Config()
	cfg.Impersonate.UserName = "nobody"
	_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("got %v listing secrets as an unknown user, want Forbidden (RBAC on)", err)
	}
}

func TestTheKubeconfigWorks(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("could not reach the server through the kubeconfig: %v", err)
	}
	if want := pinnedKubernetes(t); v.GitVersion != want {
		t.Errorf("got server version %s, want %s (binaries stamped with the version hack/controlplane/go.mod pins)", v.GitVersion, want)
	}
}

// pinnedKubernetes is the k8s.io/kubernetes version the repository builds
// its control plane from.
func pinnedKubernetes(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../hack/controlplane/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("hack/controlplane/go.mod does not require k8s.io/kubernetes")
	}
	return string(m[1])
}

func TestTheGarbageCollectorDeletesDependents(t *testing.T) {
	client := admin()
	ctx := context.Background()
	ns := namespace(t, client)
	owner, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for {
		_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.Logf("dependent deleted %s after its owner", time.Since(began).Round(time.Millisecond))
			return
		}
		if time.Since(began) > 30*time.Second {
			t.Fatalf("dependent still there 30s after its owner was deleted (last error %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestARestartedAPIServerKeepsItsData(t *testing.T) {
	client := admin()
	ctx := context.Background()
	ns := namespace(t, client)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.StopAPIServer()
	if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{}); err == nil {
		t.Error("got an answer from a stopped API server")
	}
	began := time.Now()
	if err := cluster.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver ready %s after a restart", time.Since(began).Round(time.Millisecond))
	if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("got %v reading a ConfigMap after the restart, want it kept", err)
	}
}

func TestMissingBinariesSayHowToBuildThem(t *testing.T) {
	_, err := envtest.Start(context.Background(), envtest.Options{BinDir: t.TempDir()})
	if !errors.Is(err, envtest.ErrBinariesMissing) || !strings.Contains(err.Error(), "make controlplane") {
		t.Errorf("got %v, want ErrBinariesMissing telling to run make controlplane", err)
	}
}
