package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
	"github.com/kooperkit/kooper/kooper/devcluster"
)

// make deploy installs each operator with its image; make undeploy removes
// one operator, its custom resources first, while its Deployment still runs
// to remove their finalizers, then the operator with its own namespace, then
// its CRDs, and leaves the other operator, its CRDs and its namespace alone;
// undeploying again is harmless.
//
// It runs on a cluster of its own, with the controller manager: ReplicaSets
// make the pods (so Pod Security admission checks real pods), and the
// namespace controller deletes namespaces. No node runs the pods, so the test
// plays the operator's part: it removes a finalizer from a Tenant. (The
// pod-terminator is the operator with a finalizer, but a PodTerminator cannot
// be created while its webhook has no running replica to answer.)
func TestMakeDeployAndUndeploy(t *testing.T) {
	kubectlBin := kubectlPath(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	ctx := context.Background()
	c, err := devcluster.Start(ctx, devcluster.Options{BinDir: cluster.BinDir(), ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	kube := kubernetes.NewForConfigOrDie(c.Config())
	crds := apiextensions.NewForConfigOrDie(c.Config()).ApiextensionsV1().CustomResourceDefinitions()
	tenants := versioned.NewForConfigOrDie(c.Config()).TenancyV1alpha1().Tenants()
	deployments := func(op string) typedappsv1.DeploymentInterface { return kube.AppsV1().Deployments(namespaceOf(op)) }
	policies := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()

	runMake := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", root, "KUBECTL=" + kubectlBin, "VERSION=v0.0.0-deploytest"}, args...)...)
		// The current context is the test cluster's, whatever the caller's
		// environment says.
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.KubeconfigPath(), "UNDEPLOY_TIMEOUT=60s")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("make %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}

	runMake("deploy", "OPERATOR=pod-terminator")
	runMake("deploy", "OPERATOR=multi-resource", "IMG=registry.example/team/multi-resource:v1")
	for name, image := range map[string]string{
		"pod-terminator": "ghcr.io/kooperkit/pod-terminator:v0.0.0-deploytest", // IMAGE_REGISTRY/<operator>:VERSION
		"multi-resource": "registry.example/team/multi-resource:v1",
	} {
		d, err := deployments(name).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
			t.Errorf("%s: got image %s, want %s", name, got, image)
		}
		eventually(t, 60*time.Second, name+"'s ReplicaSet makes 2 pods that Pod Security admission accepts", func() error {
			pods, err := kube.CoreV1().Pods(namespaceOf(name)).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
			if err != nil {
				return err
			}
			if len(pods.Items) != 2 {
				return fmt.Errorf("got %d pods", len(pods.Items))
			}
			return nil
		})
	}

	// What lies outside the operators' namespaces is installed too.
	for _, name := range []string{"kooper-pod-terminator-ca-bundle-only", "kooper-pod-terminator-protected-pods", "kooper-pod-terminator-webhook-secret",
		"kooper-multi-resource-tenant-namespaces", "kooper-multi-resource-admin-bindings"} {
		if _, err := policies.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("policy %s: %v", name, err)
		}
	}
	if _, err := kube.RbacV1().RoleBindings("default").Get(ctx, "kooper-pod-terminator-events", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod-terminator's events RoleBinding in default: %v", err)
	}
	for _, name := range []string{"pod-terminator", "multi-resource"} {
		for _, binding := range []string{"kooper-" + name + "-auth-delegator", "kooper-" + name + "-metrics-reader"} {
			if _, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{}); err != nil {
				t.Errorf("ClusterRoleBinding %s: %v", binding, err)
			}
		}
		if _, err := kube.PolicyV1().PodDisruptionBudgets(namespaceOf(name)).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("the %s PodDisruptionBudget: %v", name, err)
		}
	}

	// A Tenant with a finalizer that only a running operator would remove.
	const finalizer = "manifests.kooperkit.io/test"
	_, err = tenants.Create(ctx, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "undeploy", Finalizers: []string{finalizer}},
		Spec:       tenancyv1alpha1.TenantSpec{Admins: []tenancyv1alpha1.Admin{{Kind: "User", Name: "alice"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finalized := make(chan error, 1)
	go func() {
		finalized <- func() error {
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				tenant, err := tenants.Get(ctx, "undeploy", metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("could not get the Tenant: %w", err)
				}
				if tenant.DeletionTimestamp == nil {
					continue
				}
				if _, err := deployments("multi-resource").Get(ctx, "multi-resource", metav1.GetOptions{}); err != nil {
					return fmt.Errorf("the Tenant is being deleted but the operator's Deployment is not there to finalize it: %w", err)
				}
				tenant.Finalizers = nil
				if _, err := tenants.Update(ctx, tenant, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("could not remove the finalizer: %w", err)
				}
				return nil
			}
			return fmt.Errorf("the Tenant was not deleted within 60s")
		}()
	}()

	runMake("undeploy", "OPERATOR=multi-resource")
	if err := <-finalized; err != nil {
		t.Fatal(err)
	}
	gone := func(what string, err error) {
		t.Helper()
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: got %v, want it gone", what, err)
		}
	}
	// make undeploy waits for the namespace controller to empty and delete
	// the operator's namespace.
	namespaceGone := func(op string) {
		t.Helper()
		ns, err := kube.CoreV1().Namespaces().Get(ctx, namespaceOf(op), metav1.GetOptions{})
		if err == nil {
			err = fmt.Errorf("namespace %s is %s", ns.Name, ns.Status.Phase)
		}
		gone("the "+op+" namespace", err)
	}
	_, err = crds.Get(ctx, "tenants.tenancy.kooperkit.io", metav1.GetOptions{})
	gone("the Tenant CRD", err)
	_, err = deployments("multi-resource").Get(ctx, "multi-resource", metav1.GetOptions{})
	gone("the multi-resource Deployment", err)
	_, err = kube.RbacV1().ClusterRoles().Get(ctx, "kooper-multi-resource", metav1.GetOptions{})
	gone("the multi-resource ClusterRole", err)
	for _, name := range []string{"kooper-multi-resource-tenant-namespaces", "kooper-multi-resource-admin-bindings"} {
		_, err = policies.Get(ctx, name, metav1.GetOptions{})
		gone("the multi-resource policy "+name, err)
		_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
		gone("the multi-resource policy binding "+name, err)
	}
	_, err = kube.NetworkingV1().NetworkPolicies(namespaceOf("multi-resource")).Get(ctx, "multi-resource", metav1.GetOptions{})
	gone("the multi-resource NetworkPolicy", err)
	_, err = kube.PolicyV1().PodDisruptionBudgets(namespaceOf("multi-resource")).Get(ctx, "multi-resource", metav1.GetOptions{})
	gone("the multi-resource PodDisruptionBudget", err)
	namespaceGone("multi-resource")
	_, err = kube.RbacV1().ClusterRoles().Get(ctx, "kooper-multi-resource-metrics-reader", metav1.GetOptions{})
	gone("the multi-resource metrics-reader ClusterRole", err)
	for _, binding := range []string{"kooper-multi-resource-auth-delegator", "kooper-multi-resource-metrics-reader"} {
		_, err = kube.RbacV1().ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{})
		gone("the multi-resource ClusterRoleBinding "+binding, err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, "kooper-pod-terminator-auth-delegator", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod-terminator's auth-delegator binding: %v, want it kept", err)
	}
	if _, err := policies.Get(ctx, "kooper-pod-terminator-ca-bundle-only", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod-terminator's policy: %v, want it kept", err)
	}
	if _, err := crds.Get(ctx, "podterminators.chaos.kooperkit.io", metav1.GetOptions{}); err != nil {
		t.Errorf("the PodTerminator CRD: %v, want it kept", err)
	}
	if _, err := deployments("pod-terminator").Get(ctx, "pod-terminator", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod-terminator Deployment: %v, want it kept", err)
	}
	if ns, err := kube.CoreV1().Namespaces().Get(ctx, namespaceOf("pod-terminator"), metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("namespace %s: %v (deleted at %v), want it kept", namespaceOf("pod-terminator"), err, ns.GetDeletionTimestamp())
	}

	runMake("undeploy", "OPERATOR=pod-terminator")
	_, err = crds.Get(ctx, "podterminators.chaos.kooperkit.io", metav1.GetOptions{})
	gone("the PodTerminator CRD", err)
	_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "kooper-pod-terminator", metav1.GetOptions{})
	gone("the webhook configuration", err)
	_, err = policies.Get(ctx, "kooper-pod-terminator-ca-bundle-only", metav1.GetOptions{})
	gone("the pod-terminator's policy", err)
	_, err = kube.RbacV1().Roles("default").Get(ctx, "kooper-pod-terminator-events", metav1.GetOptions{})
	gone("the pod-terminator's events Role in default", err)
	_, err = kube.RbacV1().ClusterRoleBindings().Get(ctx, "kooper-pod-terminator-metrics-reader", metav1.GetOptions{})
	gone("the pod-terminator's metrics-reader binding", err)
	namespaceGone("pod-terminator")

	runMake("undeploy") // both, when nothing is left: a no-op
}
