package main

import (
	"context"
	"fmt"
	"regexp"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
)

// demoTerminator is the PodTerminator the pod-terminator's demo creates.
const demoTerminator = "kooper-demo-victims"

// The pod-terminator's demo: a PodTerminator that terminates some of the
// workload's pods every few seconds, whose Events make run prints. One
// replica, so no leader election; the webhook needs a Service or a URL the
// API server can reach over TLS: the tests cover it, the demo goes without.
func init() {
	register("pod-terminator", demo{
		port: 8081,
		args: []string{"-leader-elect=false", "-webhook-addr=", "-namespace", "kooper-pod-terminator"},
		start: func(ctx context.Context, c demoClients, say func(string, ...any)) error {
			pt := &chaosv1beta1.PodTerminator{
				ObjectMeta: metav1.ObjectMeta{Name: demoTerminator},
				Spec: chaosv1beta1.PodTerminatorSpec{
					Selector:    metav1.LabelSelector{MatchLabels: demoLabels},
					Namespaces:  []string{demoNamespace},
					Period:      &metav1.Duration{Duration: 5 * time.Second},
					Termination: chaosv1beta1.Termination{Percent: 40, MinimumInstances: ptr.To[int32](3)},
				},
			}
			if _, err := c.kooper.ChaosV1beta1().PodTerminators().Create(ctx, pt, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("could not create the demo PodTerminator: %w", err)
			}
			say("created PodTerminator %s: every 5s, 40%% of %s's app=victim pods, never fewer than 3 left", demoTerminator, demoNamespace)
			return nil
		},
		// It waits until the operator has removed the finalizer.
		stop: func(ctx context.Context, c demoClients) error {
			pts := c.kooper.ChaosV1beta1().PodTerminators()
			if err := pts.Delete(ctx, demoTerminator, metav1.DeleteOptions{}); apierrors.IsNotFound(err) {
				return nil // never created
			} else if err != nil {
				return fmt.Errorf("could not delete PodTerminator %s: %w", demoTerminator, err)
			}
			for ctx.Err() == nil {
				if _, err := pts.Get(ctx, demoTerminator, metav1.GetOptions{}); apierrors.IsNotFound(err) {
					return nil
				}
				time.Sleep(100 * time.Millisecond)
			}
			return fmt.Errorf("PodTerminator %s is still there: is the pod-terminator running?", demoTerminator)
		},
		kinds:     []string{"PodTerminator"},
		resources: []string{"podterminators"},
		shows: []*regexp.Regexp{
			regexp.MustCompile(`\[events\] PodTerminator kooper-demo-victims: Terminated terminated [12] of [45] live pods \(40%, minimum 3\): kooper-demo/victim-`),
		},
	})
}
