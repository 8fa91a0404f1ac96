package integration_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// While no replica serves the conversion webhook, what is stored (v1beta1)
// still reads and writes; a client that names v1alpha1 fails ("StorageError:
// corrupt object ... conversion webhook ... failed"), and so does the
// garbage collector for a dependent whose owner reference names v1alpha1:
// it is not deleted after its owner. When a replica is back, both recover
// with nothing done (seen: v1alpha1 served 6-17 ms after the first
// admitted create, the dependent deleted 4 ms to 21 s after that: the
// garbage collector retries with a backoff).
func TestWhatBreaksWhileTheConversionWebhookIsDown(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	addr := e2etest.FreeAddr(t)
	registerWebhook(t, admin, addr)
	cfg := operator.Config{
		REST:    e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100),
		Webhook: operator.Webhook{Addr: addr, Hosts: []string{"127.0.0.1"}},
		Logger:  log.NewStd(t.Output(), log.StdOptions{}),
	}
	run := func() (stop func()) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- operator.Run(rctx, cfg) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the operator: %v", err)
			}
		}
	}
	stop := run()
	clients := versioned.NewForConfigOrDie(cluster.Config())
	beta, alpha := clients.ChaosV1beta1().PodTerminators(), clients.ChaosV1alpha1().PodTerminators()
	name := "down-" + rand.String(5)
	var pt *chaosv1beta1.PodTerminator
	waitFor(t, 30*time.Second, "the webhook admits the PodTerminator", func() error {
		var err error
		pt, err = beta.Create(ctx, &chaosv1beta1.PodTerminator{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: chaosv1beta1.PodTerminatorSpec{
				Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
				Termination: chaosv1beta1.Termination{Percent: 10},
				DryRun:      true,
			},
		}, metav1.CreateOptions{})
		return err
	})
	waitFor(t, 30*time.Second, "v1alpha1 is served", func() error { _, err := alpha.Get(ctx, name, metav1.GetOptions{}); return err })
	// region: dependent
	// A ConfigMap that names its owner in v1alpha1, as one written by an
	// older controller would.
	dependent, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "owned-by-" + name + "-",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "chaos.kooperkit.io/v1alpha1", Kind: "PodTerminator", Name: name, UID: pt.UID, BlockOwnerDeletion: ptr.To(false),
		}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// endregion: dependent

	stop()
	_, alphaErr := alpha.Get(ctx, name, metav1.GetOptions{})
	_, betaErr := beta.Get(ctx, name, metav1.GetOptions{})
	_, listErr := beta.List(ctx, metav1.ListOptions{})
	t.Logf("webhook down: v1alpha1 get: %v; v1beta1 get: %v; v1beta1 list: %v", alphaErr, betaErr, listErr)
	if alphaErr == nil || betaErr != nil || listErr != nil {
		t.Errorf("want v1alpha1 failing and v1beta1 served")
	}
	if err := beta.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete through v1beta1 with the webhook down: %v", err)
	}
	began := time.Now()
	gone := false
	for time.Since(began) < 20*time.Second {
		if _, err := admin.CoreV1().ConfigMaps("default").Get(ctx, dependent.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			gone = true
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// What breaks: the garbage collector looks the owner up in the
	// version the dependent names, which needs the webhook.
	if gone {
		t.Errorf("the dependent naming its owner in v1alpha1 was deleted %s after its owner, with the webhook down; want it kept until the webhook is back", time.Since(began).Round(time.Millisecond))
	}

	stop = run()
	defer stop()
	other := "back-" + rand.String(5)
	waitFor(t, 30*time.Second, "the webhook is back", func() error {
		_, err := beta.Create(ctx, &chaosv1beta1.PodTerminator{
			ObjectMeta: metav1.ObjectMeta{Name: other},
			Spec: chaosv1beta1.PodTerminatorSpec{
				Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
				Termination: chaosv1beta1.Termination{Percent: 10},
				DryRun:      true,
			},
		}, metav1.CreateOptions{})
		return err
	})
	t.Cleanup(func() { _ = beta.Delete(context.Background(), other, metav1.DeleteOptions{}) })
	began = time.Now()
	waitFor(t, 30*time.Second, "v1alpha1 is served again", func() error { _, err := alpha.Get(ctx, other, metav1.GetOptions{}); return err })
	t.Logf("v1alpha1 served again %s after the webhook admitted a create", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	e2etest.Eventually(t, 120*time.Second, "the garbage collector deletes the dependent", func() bool {
		_, err := admin.CoreV1().ConfigMaps("default").Get(ctx, dependent.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	t.Logf("webhook back: the dependent deleted %s later", time.Since(began).Round(time.Millisecond))
}
