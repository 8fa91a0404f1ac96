package integration

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
)

// The pod-terminator under Prometheus: a PodTerminator and a dry-run one,
// every second, on six pods that one kwok node runs (it counts and
// terminates only Ready pods). Its webhook is off: no Service here for the
// API server to call it through.
func init() {
	register(workload{
		name: "pod-terminator",
		args: []string{"-webhook-addr="},
		work: func(ctx context.Context, t *testing.T, c clients) {
			if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "victims"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			labels := map[string]string{"app": "victim"}
			if _, err := c.kube.AppsV1().Deployments("victims").Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "victims"},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](6),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}},
					},
				},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, dryRun := range []bool{false, true} {
				name := "victims"
				if dryRun {
					name = "victims-dry-run"
				}
				if _, err := c.kooper.ChaosV1beta1().PodTerminators().Create(ctx, &chaosv1beta1.PodTerminator{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: chaosv1beta1.PodTerminatorSpec{
						Selector:    metav1.LabelSelector{MatchLabels: labels},
						Namespaces:  []string{"victims"},
						Period:      &metav1.Duration{Duration: 1 * time.Second},
						Termination: chaosv1beta1.Termination{Percent: 30, MinimumInstances: ptr.To[int32](2)},
						DryRun:      dryRun,
					},
				}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		},
		answered: []string{
			`sum(kooper_pod_terminator_terminated_pods_total{terminator="victims", dry_run="false"}) >= 2`,
			`sum(kooper_pod_terminator_terminated_pods_total{terminator="victims-dry-run", dry_run="true"}) >= 2`,
		},
	})
}
