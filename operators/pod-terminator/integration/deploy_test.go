package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

const deployDir = "../../../manifests/pod-terminator"

func readManifest(t *testing.T, file string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// The Deployment runs two leader-elected replicas, locked down.
func TestTheDeploymentIsHardened(t *testing.T) {
	var d appsv1.Deployment
	readManifest(t, "deployment.yaml", &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("got replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "pod-terminator" {
		t.Errorf("got service account %q, want pod-terminator", pod.ServiceAccountName)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("got pod security context %+v, want runAsNonRoot and RuntimeDefault seccomp", psc)
	}
	for k, v := range operator.DefaultPodLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("got pod labels %v, want %s=%s: the webhook protects pods by these", d.Spec.Template.Labels, k, v)
		}
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("got %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("got container security context %+v, want a read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("got requests %v, want cpu and memory", c.Resources.Requests)
	}
	if slices.Contains(c.Args, "-leader-elect=false") {
		t.Error("leader election is off in a 2-replica Deployment")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("got probes %+v %+v, want /readyz and /healthz", c.ReadinessProbe, c.LivenessProbe)
	}
	// /metrics over HTTPS for authorized scrapers only; the probes stay on
	// http.
	if !slices.Contains(c.Args, "-metrics-secure-addr=:8443") ||
		!slices.Contains(c.Ports, corev1.ContainerPort{Name: "https-metrics", ContainerPort: 8443}) {
		t.Errorf("got args %q and ports %+v, want -metrics-secure-addr=:8443 and https-metrics on 8443", c.Args, c.Ports)
	}
}

// The webhook configuration, its Service and the operator's defaults name
// the same things.
func TestTheWebhookManifestsMatchTheOperator(t *testing.T) {
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	readManifest(t, "webhook.yaml", &vwc)
	var svc corev1.Service
	readManifest(t, "service.yaml", &svc)
	if vwc.Name != operator.DefaultWebhookConfigName {
		t.Errorf("got configuration %q, want the operator's default %q (it injects the CA there)", vwc.Name, operator.DefaultWebhookConfigName)
	}
	if len(vwc.Webhooks) != 1 || vwc.Webhooks[0].ClientConfig.Service == nil {
		t.Fatalf("got webhooks %+v, want one, called through a Service", vwc.Webhooks)
	}
	ref := vwc.Webhooks[0].ClientConfig.Service
	if ref.Name != operator.DefaultWebhookService || ref.Name != svc.Name || ref.Namespace != operator.DefaultNamespace ||
		ref.Path == nil || *ref.Path != webhook.Path {
		t.Errorf("got service reference %+v, want %s/%s path %s", ref, operator.DefaultNamespace, svc.Name, webhook.Path)
	}
}

// The API server accepts the manifests (server-side dry run: nothing runs).
func TestTheDeployManifestsApply(t *testing.T) {
	applyManifests(t) // the namespace and ServiceAccount
	out, err := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), "--kubeconfig", cluster.KubeconfigPath(),
		"apply", "--dry-run=server", "-k", deployDir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
	}
}

// applyKustomizations runs the cluster's kubectl apply -k on each directory.
func applyKustomizations(t *testing.T, dirs ...string) {
	t.Helper()
	applyKustomizationsTo(t, cluster, dirs...)
}

// applyKustomizationsTo applies dirs to c, with the package cluster's
// kubectl (c's binaries may be an older server's alone).
func applyKustomizationsTo(t *testing.T, c *envtest.Cluster, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		out, err := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), "--kubeconfig", c.KubeconfigPath(),
			"apply", "-k", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl apply -k %s: %v\n%s", dir, err, out)
		}
	}
}
