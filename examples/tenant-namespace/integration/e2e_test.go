package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/hack/envtest"
)

var cluster *envtest.Cluster

func TestMain(m *testing.M) {
	os.Exit(envtest.RunTests(m, envtest.Options{ControllerManager: true}, &cluster))
}

// The operator of docs/concepts.md does what the page says: a Tenant gets
// its namespace, controlled by it, and a namespace deleted by hand is made
// again (the namespaces are a source of the Tenant controller, so the
// deletion queues the Tenant).
func TestATenantGetsItsNamespaceBack(t *testing.T) {
	ctx := context.Background()
	kubectl := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), "--kubeconfig", cluster.KubeconfigPath(),
		"apply", "-k", "../../../manifests/crds")
	if out, err := kubectl.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	kube := kubernetes.NewForConfigOrDie(cluster.Config())
	tenants := versioned.NewForConfigOrDie(cluster.Config()).TenancyV1alpha1().Tenants()
	eventually(t, 30*time.Second, "the Tenant CRD is served", func() bool {
		_, err := tenants.List(ctx, metav1.ListOptions{})
		return err == nil
	})

	bin := filepath.Join(t.TempDir(), "tenant-namespace")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out bytes.Buffer // one writer for both streams: exec writes one at a time
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("the operator exited with %v after SIGTERM", err)
		}
		if t.Failed() {
			t.Logf("the operator printed:\n%s", out.String())
		}
	})

	name := fmt.Sprintf("concepts-%08x", rand.Uint32())
	tn, err := tenants.Create(ctx, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tenants.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	nsName := "tenant-" + name
	// owned returns the UID of the namespace if it exists, is not being
	// deleted and is controlled by the Tenant.
	owned := func() types.UID {
		ns, err := kube.CoreV1().Namespaces().Get(ctx, nsName, metav1.GetOptions{})
		if err != nil || ns.DeletionTimestamp != nil {
			return ""
		}
		if ref := metav1.GetControllerOfNoCopy(ns); ref == nil || ref.UID != tn.UID {
			t.Fatalf("namespace %s: got controller %+v, want Tenant %s", nsName, ref, tn.UID)
		}
		return ns.UID
	}
	var first types.UID
	eventually(t, 30*time.Second, "the Tenant's namespace", func() bool {
		first = owned()
		return first != ""
	})

	if err := kube.CoreV1().Namespaces().Delete(ctx, nsName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	eventually(t, 60*time.Second, "the namespace made again", func() bool {
		uid := owned()
		return uid != "" && uid != first
	})
	t.Logf("namespace deleted by hand made again in %s (the namespace controller empties it first)", time.Since(began).Round(time.Millisecond))

	// Deleting the Tenant deletes the namespace through the garbage
	// collector, which needs no code here; it discovers a new CRD's kind
	// within 30 s, so this test leaves that to the multi-resource
	// operator's, whose cluster has long had the CRD
	// (operators/multi-resource/integration).
}

// eventually polls cond every 100ms until it holds, and fails t if it does
// not within timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
	}
}
