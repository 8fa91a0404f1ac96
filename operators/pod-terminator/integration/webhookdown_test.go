package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/handler"
)

// While no replica answers the webhook (failurePolicy Fail), a
// PodTerminator's spec cannot change, but deleting it still completes:
// the delete is not sent to the webhook, and removing the finalizer, an
// update that leaves the spec as it was, skips it (webhook.yaml's
// matchCondition). Without the matchCondition the deletion hung until a
// replica answered again.
func TestAPodTerminatorIsDeletedWhileItsWebhookIsDown(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	pts := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()
	name := "webhook-down-" + rand.String(5)
	_, err := pts.Create(ctx, &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{handler.Finalizer}},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			Termination: chaosv1beta1.Termination{Percent: 30},
			DryRun:      true,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Runs after registerWebhook's cleanup (cleanups run last first): the
	// finalizer is removed with the webhook gone, should the test fail.
	t.Cleanup(func() {
		_, _ = pts.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = pts.Delete(ctx, name, metav1.DeleteOptions{})
	})

	// Nothing listens at the webhook's address.
	registerWebhook(t, kubernetes.NewForConfigOrDie(cluster.Config()), e2etest.FreeAddr(t))
	percent := int32(30)
	e2etest.Eventually(t, 30*time.Second, "a spec change is refused: the webhook does not answer", func() bool {
		percent++
		patch := fmt.Appendf(nil, `{"spec":{"termination":{"percent":%d}}}`, percent)
		_, err := pts.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil: // the API server has not seen the configuration yet
			return false
		case strings.Contains(err.Error(), `failed calling webhook "podterminators.chaos.kooperkit.io"`):
			return true
		default:
			t.Fatalf("got %v, want the change made (webhook not registered yet) or refused for the webhook's failure", err)
			return false
		}
	})

	if _, err := pts.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"chaos"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("a label change: %v, want it made without the webhook", err)
	}
	if err := pts.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	// What the operator does once the PodTerminator is being deleted.
	if _, err := pts.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the finalizer: %v, want it done without the webhook", err)
	}
	e2etest.Eventually(t, 10*time.Second, name+" is gone", func() bool {
		_, err := pts.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
