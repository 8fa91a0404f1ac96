package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
)

// The pod-terminator renders exactly these objects; on the node, the
// PodTerminators of its README and tutorial work, and its webhook refuses
// a PodTerminator of a protected namespace.
func init() {
	register(deployable{
		name:  "pod-terminator",
		group: "chaos.kooperkit.io",
		// ClusterRoles: its own and the metrics reader's; bindings: those
		// two and system:auth-delegator's.
		kinds: []string{"ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ClusterRoleBinding",
			"CustomResourceDefinition", "Deployment", "Namespace", "NetworkPolicy", "PodDisruptionBudget",
			"Role", "Role", "RoleBinding", "RoleBinding", "Service", "Service", "ServiceAccount",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy",
			"ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding",
			"ValidatingWebhookConfiguration"},
		// Events about PodTerminators (cluster-scoped) are written in default.
		elsewhere: map[string][]string{"Role/kooper-pod-terminator-events": {"default"}, "RoleBinding/kooper-pod-terminator-events": {"default"}},
		examples:  podTerminatorExamples,
		refused: func(ctx context.Context, p *podsTest) (string, error) {
			invalid := &chaosv1beta1.PodTerminator{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "protected-"},
				Spec: chaosv1beta1.PodTerminatorSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Namespaces: []string{"kube-system"}, Termination: chaosv1beta1.Termination{Percent: 10}},
			}
			created, err := p.crs.ChaosV1beta1().PodTerminators().Create(ctx, invalid, metav1.CreateOptions{})
			if err == nil {
				_ = p.crs.ChaosV1beta1().PodTerminators().Delete(ctx, created.Name, metav1.DeleteOptions{})
			}
			return `admission webhook "podterminators.chaos.kooperkit.io" denied the request`, err
		},
	})
}

// The pod-terminator's examples: each PodTerminator of the README and the
// tutorial becomes Ready and says which pods it would terminate; the
// README's, for real, evicts a pod (the ServiceAccount may); the
// tutorial's kubectl patch to kube-system is refused by the webhook.
func podTerminatorExamples(t *testing.T, p *podsTest) {
	ctx := context.Background()
	if _, err := p.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: pauseImage}},
					TerminationGracePeriodSeconds: ptr.To[int64](1)},
			},
		},
	}
	if _, err := p.kube.AppsV1().Deployments("shop").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fourReady := func() error {
		d, err := p.kube.AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ReadyReplicas != 4 {
			return fmt.Errorf("%d Ready", d.Status.ReadyReplicas)
		}
		return nil
	}
	eventually(t, 60*time.Second, "4 Ready web pods", fourReady)
	var names []string
	for where, doc := range docExamples(t, "chaos.kooperkit.io", "PodTerminator") {
		var pt chaosv1beta1.PodTerminator
		if err := yaml.UnmarshalStrict([]byte(doc), &pt); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if err := p.apply(doc); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		names = append(names, pt.Name)
		t.Cleanup(func() { _ = p.crs.ChaosV1beta1().PodTerminators().Delete(ctx, pt.Name, metav1.DeleteOptions{}) })
	}
	for _, name := range names {
		eventually(t, 30*time.Second, "PodTerminator "+name+" is Ready and says what it would terminate", func() error {
			pt, err := p.crs.ChaosV1beta1().PodTerminators().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !metaReady(pt.Status.Conditions) {
				return fmt.Errorf("conditions %+v", pt.Status.Conditions)
			}
			evs, err := p.kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
			if err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.Reason == "DryRun" && strings.Contains(e.Message, "web-") {
					return nil
				}
			}
			return errors.New("no DryRun Event naming a web pod")
		})
	}

	// The README's example for real: one of the four pods is evicted.
	live := &chaosv1beta1.PodTerminator{}
	pt, err := p.crs.ChaosV1beta1().PodTerminators().Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the README's shop-web: %v", err)
	}
	live.Name, live.Spec = "shop-web-live", pt.Spec
	live.Spec.DryRun = false
	if _, err := p.crs.ChaosV1beta1().PodTerminators().Create(ctx, live, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.crs.ChaosV1beta1().PodTerminators().Delete(ctx, live.Name, metav1.DeleteOptions{}) })
	eventually(t, 30*time.Second, "shop-web-live terminates a pod", func() error {
		pt, err := p.crs.ChaosV1beta1().PodTerminators().Get(ctx, live.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pt.Status.TerminatedTotal < 1 {
			return fmt.Errorf("status %+v", pt.Status)
		}
		return nil
	})
	eventually(t, 60*time.Second, "the evicted pod is replaced", fourReady)

	// The deployed webhook refuses what the tutorial shows the dev loop's
	// refusing: a PodTerminator reaching into kube-system.
	cmd := exec.Command(kubectlPathOf(p.cluster), "--kubeconfig", p.cluster.KubeconfigPath(),
		"patch", "pt", "shop-web", "--type=merge", "-p", `{"spec":{"namespaces":["kube-system"]}}`)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `admission webhook "podterminators.chaos.kooperkit.io" denied the request`) {
		t.Errorf("kubectl patch pt shop-web to kube-system: %v: %s; want the webhook's refusal", err, out)
	}
	for _, name := range append(names, live.Name) {
		if err := p.crs.ChaosV1beta1().PodTerminators().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	eventually(t, 30*time.Second, "the PodTerminators are finalized and gone", func() error {
		list, err := p.crs.ChaosV1beta1().PodTerminators().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d left", len(list.Items))
		}
		return nil
	})
}
