package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
)

// With -log-format json every line the operator prints is JSON, whatever
// client-go writes through klog included, and a cache that cannot
// fill says which resource:
// here the Tenant CRD is not installed yet and the ServiceAccount lacks the
// LimitRange rule. (A fresh control plane: the other tests install the CRD.)
func TestEveryLogLineIsJSONAndNamesTheResource(t *testing.T) {
	ctx := context.Background()
	bare, err := envtest.Start(ctx, envtest.Options{BinDir: cluster.BinDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Stop() })

	// The operator's RBAC, less the LimitRange rule.
	kubectl := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), "--kubeconfig", bare.KubeconfigPath(),
		"apply", "-k", "../../../manifests/rbac/multi-resource")
	if out, err := kubectl.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	admin := kubernetes.NewForConfigOrDie(bare.Config())
	role, err := admin.RbacV1().ClusterRoles().Get(ctx, "kooper-multi-resource", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(res string) bool { return res == "limitranges" })
		if len(r.Resources) > 0 {
			rules = append(rules, r)
		}
	}
	role.Rules = rules
	if _, err := admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A kubeconfig acting as the operator's ServiceAccount.
	kc, err := clientcmd.LoadFromFile(bare.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range kc.AuthInfos {
		auth.Impersonate = "system:serviceaccount:kooper-multi-resource:multi-resource"
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "multi-resource")
	build := exec.Command("go", "build", "-o", bin, "../cmd/multi-resource")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out lockedBuffer
	// Leader election on: the runner logs that it leads.
	cmd := exec.Command(bin, "-kubeconfig", kubeconfig, "-log-format", "json", "-http-addr", e2etest.FreeAddr(t))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the operator printed:\n%s", out.String())
		}
	})

	mentions := func(parts ...string) func() bool {
		return func() bool {
			return slices.ContainsFunc(strings.Split(out.String(), "\n"), func(line string) bool {
				for _, p := range parts {
					if !strings.Contains(line, p) {
						return false
					}
				}
				return true
			})
		}
	}
	e2etest.Eventually(t, 30*time.Second, "a line naming the Tenant type the server does not serve",
		mentions(`*v1alpha1.Tenant`, `the server could not find the requested resource`))
	e2etest.Eventually(t, 30*time.Second, "a line naming the LimitRanges the operator may not list",
		mentions(`"controller":"multi-resource"`, `limitranges \"tenant-limits\" is forbidden`))
	e2etest.Eventually(t, 30*time.Second, "the leader election saying it leads",
		mentions(`"msg":"leading"`, `"lease":"kooper-multi-resource/multi-resource"`))
	stop()

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Errorf("not JSON: %s", line)
		}
		if strings.Contains(line, "<unspecified>") {
			t.Errorf("names no resource: %s", line)
		}
	}
	t.Logf("%d lines, all JSON", len(lines))
}

// lockedBuffer is a bytes.Buffer the two output streams of a process may
// write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
