package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	tenancyv1alpha1 "github.com/kooperkit/kooper/apis/tenancy/v1alpha1"
)

// Both operators, two replicas each, run on the node exactly as their
// manifests say, and do their jobs with their own ServiceAccounts: the
// examples of the READMEs and the tutorial work. Then four broken
// manifests, each a mistake no other test would notice, are each caught.
func TestTheOperatorsRunAsTheirDeploymentsSay(t *testing.T) {
	p := startPodsTest(t)
	ctx := context.Background()
	var runs []*deployed
	for _, op := range []string{"pod-terminator", "multi-resource"} {
		runs = append(runs, p.deploy(t, op, nil))
	}
	for _, d := range runs {
		if err := p.check(ctx, d); err != nil {
			t.Fatalf("%s: %v", d.op, err)
		}
	}
	p.podTerminatorExamples(t)
	p.tenantExamples(t)
	for _, d := range runs {
		if err := p.stillLive(ctx, d); err != nil {
			t.Errorf("%s: %v", d.op, err)
		}
	}
	if t.Failed() {
		return
	}
	p.removeDeployment(t, "multi-resource")

	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			p.removeDeployment(t, "pod-terminator")
			d := p.deploy(t, "pod-terminator", func(objs []*unstructured.Unstructured) { m.mutate(t, objs) })
			err := p.check(ctx, d)
			if err == nil {
				t.Fatalf("%s: not caught", m.name)
			}
			t.Logf("caught: %v", err)
			if !strings.Contains(err.Error(), m.want) {
				t.Errorf("caught for another reason than %q", m.want)
			}
		})
	}
}

// mutations are mistakes in the manifests that the run must catch, each
// with a word of the failure it must give.
var mutations = []struct {
	name   string
	mutate func(t *testing.T, objs []*unstructured.Unstructured)
	want   string
}{
	{"a flag that does not exist", func(t *testing.T, objs []*unstructured.Unstructured) {
		container(t, objs, func(c map[string]any) {
			c["args"] = append(c["args"].([]any), "-webhook-address=:9443")
		})
	}, "flag provided but not defined: -webhook-address"},
	{"a probe path that does not exist", func(t *testing.T, objs []*unstructured.Unstructured) {
		container(t, objs, func(c map[string]any) {
			c["readinessProbe"].(map[string]any)["httpGet"].(map[string]any)["path"] = "/ready"
		})
	}, "statuscode: 404"},
	{"a Service port that is no container port", func(t *testing.T, objs []*unstructured.Unstructured) {
		for _, o := range objs {
			if o.GetKind() == "Service" && o.GetName() == "pod-terminator-webhook" {
				ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
				ports[0].(map[string]any)["targetPort"] = int64(9444)
				_ = unstructured.SetNestedSlice(o.Object, ports, "spec", "ports")
				return
			}
		}
		t.Fatal("no webhook Service")
	}, "9444"},
	{"a permission the ServiceAccount lacks", func(t *testing.T, objs []*unstructured.Unstructured) {
		for _, o := range objs {
			if o.GetKind() != "Role" || o.GetNamespace() != namespaceOf("pod-terminator") {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			n := len(rules)
			kept := slices.DeleteFunc(rules, func(r any) bool {
				return slices.Contains(r.(map[string]any)["resources"].([]any), any("leases"))
			})
			if len(kept) == n {
				continue
			}
			_ = unstructured.SetNestedSlice(o.Object, kept, "rules")
			return
		}
		t.Fatal("no Role granting leases")
	}, "forbidden"},
}

// container changes the Deployment's one container.
func container(t *testing.T, objs []*unstructured.Unstructured, change func(c map[string]any)) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			change(cs[0].(map[string]any))
			_ = unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
			return
		}
	}
	t.Fatal("no Deployment")
}

// docExamples returns the YAML documents of kind in the operators' READMEs
// and docs/: fenced blocks, and heredocs in shell blocks.
func docExamples(t *testing.T, kind string) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "operators", "*", "README.md"))
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	found := map[string]string{}
	start := regexp.MustCompile(`^apiVersion: \S+\.kooperkit\.io/`)
	for _, f := range append(files, docs...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc []string
		flush := func() {
			if len(doc) > 0 && slices.Contains(doc, "kind: "+kind) {
				rel, _ := filepath.Rel(root, f)
				found[rel+": "+strings.Join(doc, "\n")] = strings.Join(doc, "\n")
			}
			doc = nil
		}
		for line := range strings.Lines(string(b)) {
			line = strings.TrimRight(line, "\n")
			switch {
			case start.MatchString(line):
				flush()
				doc = []string{line}
			case doc != nil && (strings.HasPrefix(line, "```") || line == "EOF" || line == "---"):
				flush()
			case doc != nil:
				doc = append(doc, line)
			}
		}
		flush()
	}
	if len(found) == 0 {
		t.Fatalf("no %s example in the READMEs and docs", kind)
	}
	return found
}

// The pod-terminator's examples: each PodTerminator of the README and the
// tutorial becomes Ready and says which pods it would terminate; the
// README's, for real, evicts a pod (the ServiceAccount may); the
// tutorial's kubectl patch to kube-system is refused by the webhook.
func (p *podsTest) podTerminatorExamples(t *testing.T) {
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
	for where, doc := range docExamples(t, "PodTerminator") {
		var pt chaosv1alpha1.PodTerminator
		if err := yaml.UnmarshalStrict([]byte(doc), &pt); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if err := p.apply(doc); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		names = append(names, pt.Name)
		t.Cleanup(func() { _ = p.crs.ChaosV1alpha1().PodTerminators().Delete(ctx, pt.Name, metav1.DeleteOptions{}) })
	}
	for _, name := range names {
		eventually(t, 30*time.Second, "PodTerminator "+name+" is Ready and says what it would terminate", func() error {
			pt, err := p.crs.ChaosV1alpha1().PodTerminators().Get(ctx, name, metav1.GetOptions{})
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
	live := &chaosv1alpha1.PodTerminator{}
	pt, err := p.crs.ChaosV1alpha1().PodTerminators().Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the README's shop-web: %v", err)
	}
	live.Name, live.Spec = "shop-web-live", pt.Spec
	live.Spec.DryRun = false
	if _, err := p.crs.ChaosV1alpha1().PodTerminators().Create(ctx, live, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.crs.ChaosV1alpha1().PodTerminators().Delete(ctx, live.Name, metav1.DeleteOptions{}) })
	eventually(t, 30*time.Second, "shop-web-live terminates a pod", func() error {
		pt, err := p.crs.ChaosV1alpha1().PodTerminators().Get(ctx, live.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pt.Status.TerminatedTotal < 1 {
			return fmt.Errorf("status %+v", pt.Status)
		}
		return nil
	})
	eventually(t, 60*time.Second, "the evicted pod is replaced", fourReady)

	// The tutorial's last command.
	cmd := exec.Command(kubectlPathOf(p.cluster), "--kubeconfig", p.cluster.KubeconfigPath(),
		"patch", "pt", "web", "--type=merge", "-p", `{"spec":{"namespaces":["kube-system"]}}`)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `admission webhook "podterminators.chaos.kooperkit.io" denied the request`) {
		t.Errorf("kubectl patch pt web to kube-system: %v: %s; want the webhook's refusal", err, out)
	}
	for _, name := range append(names, live.Name) {
		if err := p.crs.ChaosV1alpha1().PodTerminators().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	eventually(t, 30*time.Second, "the PodTerminators are finalized and gone", func() error {
		list, err := p.crs.ChaosV1alpha1().PodTerminators().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d left", len(list.Items))
		}
		return nil
	})
}

func metaReady(conds []metav1.Condition) bool {
	return slices.ContainsFunc(conds, func(c metav1.Condition) bool { return c.Type == "Ready" && c.Status == metav1.ConditionTrue })
}

// The multi-resource operator's examples: each Tenant of the README
// becomes Ready with its namespace and children.
func (p *podsTest) tenantExamples(t *testing.T) {
	ctx := context.Background()
	for where, doc := range docExamples(t, "Tenant") {
		var tn tenancyv1alpha1.Tenant
		if err := yaml.UnmarshalStrict([]byte(doc), &tn); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if err := p.apply(doc); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		eventually(t, 30*time.Second, "Tenant "+tn.Name+" is Ready with its children", func() error {
			got, err := p.crs.TenancyV1alpha1().Tenants().Get(ctx, tn.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !metaReady(got.Status.Conditions) {
				return fmt.Errorf("conditions %+v", got.Status.Conditions)
			}
			ns := "tenant-" + tn.Name
			if _, err := p.kube.CoreV1().ResourceQuotas(ns).Get(ctx, "tenant-quota", metav1.GetOptions{}); err != nil {
				return err
			}
			if _, err := p.kube.RbacV1().RoleBindings(ns).Get(ctx, "tenant-admins", metav1.GetOptions{}); err != nil {
				return err
			}
			return nil
		})
		if err := p.crs.TenancyV1alpha1().Tenants().Delete(ctx, tn.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "Tenant "+tn.Name+" is gone", func() error {
			_, err := p.crs.TenancyV1alpha1().Tenants().Get(ctx, tn.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%w)", err)
		})
	}
}
