package integration_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

// While no replica serves the conversion webhook, a client that names
// v1alpha1 fails ("StorageError: corrupt object ... conversion webhook ...
// failed"), and what is stored in v1beta1 still reads and writes in
// v1beta1. But one object still stored in v1alpha1 (written before v1beta1
// became the storage version, and not written since) fails every LIST of
// v1beta1, the version the garbage collector and the namespace controller
// list, through the metadata API: their caches of the kind cannot fill, so
// neither sees its objects go. When a replica is back, everything reads
// again with nothing done by hand.
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
	var stop func() // the running operator's, nil while it is stopped
	run := func() {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- operator.Run(rctx, cfg) }()
		stop = func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the operator: %v", err)
			}
			stop = nil
		}
	}
	clients := versioned.NewForConfigOrDie(cluster.Config())
	beta, alpha := clients.ChaosV1beta1().PodTerminators(), clients.ChaosV1alpha1().PodTerminators()
	var names []string
	// Last: with the operator serving, delete what the test made and wait
	// until it is gone (the operator removes its finalizer), so that no
	// object stored in v1alpha1 is left to fail the next test's lists.
	t.Cleanup(func() {
		if stop == nil {
			run()
		}
		defer stop()
		for _, n := range names {
			_ = beta.Delete(context.Background(), n, metav1.DeleteOptions{})
		}
		e2etest.Eventually(t, 60*time.Second, "the test's PodTerminators are gone", func() bool {
			for _, n := range names {
				if _, err := beta.Get(context.Background(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false
				}
			}
			return true
		})
	})
	run()

	// region: stored
	// One object stored in v1beta1...
	current := "current-" + rand.String(5)
	names = append(names, current)
	waitFor(t, 30*time.Second, "the webhook admits the PodTerminator", func() error {
		_, err := beta.Create(ctx, &chaosv1beta1.PodTerminator{
			ObjectMeta: metav1.ObjectMeta{Name: current},
			Spec: chaosv1beta1.PodTerminatorSpec{
				Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
				Period:      &metav1.Duration{Duration: time.Hour}, // written once, then not for an hour
				Termination: chaosv1beta1.Termination{Percent: 10},
				DryRun:      true,
			},
		}, metav1.CreateOptions{})
		return err
	})
	handled := func(name string) {
		t.Helper()
		e2etest.Eventually(t, 30*time.Second, "the operator handles "+name+" (finalizer, status)", func() bool {
			pt, err := beta.Get(ctx, name, metav1.GetOptions{})
			return err == nil && len(pt.Finalizers) > 0 && pt.Status.LastTerminationTime != nil
		})
	}
	handled(current)
	waitFor(t, 30*time.Second, "v1alpha1 is served", func() error { _, err := alpha.Get(ctx, current, metav1.GetOptions{}); return err })
	// ...and one still stored in v1alpha1, as one written before the
	// upgrade and not since: the CRD stores v1alpha1 while it is written
	// and handled, then v1beta1 again.
	setStorage(t, cluster, "v1alpha1")
	old := "stored-old-" + rand.String(5)
	names = append(names, old)
	if _, err := alpha.Create(ctx, &chaosv1alpha1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: old},
		Spec: chaosv1alpha1.PodTerminatorSpec{
			Selector:           metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			PeriodSeconds:      ptr.To[int32](3600), // written once, then not for an hour
			TerminationPercent: 10,
			DryRun:             true,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	handled(old)
	storeAll(t, cluster, chaosv1alpha1.SchemeGroupVersion.String(), old)
	setStorage(t, cluster, "v1beta1")
	// endregion: stored
	if got := storedVersion(t, cluster, ptKeys+old); got != chaosv1alpha1.SchemeGroupVersion.String() {
		t.Fatalf("%s is stored in %s, want it in v1alpha1: the test shows nothing", old, got)
	}
	if got := storedVersion(t, cluster, ptKeys+current); got != chaosv1beta1.SchemeGroupVersion.String() {
		t.Fatalf("%s is stored in %s, want it in v1beta1", current, got)
	}

	// region: down
	stop()
	meta := metadata.NewForConfigOrDie(cluster.Config()).Resource(chaosv1beta1.SchemeGroupVersion.WithResource("podterminators"))
	_, alphaErr := alpha.Get(ctx, current, metav1.GetOptions{})
	_, betaErr := beta.Get(ctx, current, metav1.GetOptions{})
	_, oldErr := beta.Get(ctx, old, metav1.GetOptions{})
	_, listErr := beta.List(ctx, metav1.ListOptions{})
	_, metaErr := meta.List(ctx, metav1.ListOptions{})
	t.Logf("webhook down:\n  v1alpha1 get of one stored in v1beta1: %v\n  v1beta1 get of it: %v\n  v1beta1 get of one stored in v1alpha1: %v\n  v1beta1 list: %v\n  v1beta1 list of metadata (the garbage collector's and the namespace controller's): %v",
		alphaErr, betaErr, oldErr, listErr, metaErr)
	// endregion: down
	if alphaErr == nil || betaErr != nil {
		t.Errorf("want v1alpha1 failing and v1beta1 served for an object stored in v1beta1")
	}
	if oldErr == nil {
		t.Errorf("want the object stored in v1alpha1 unreadable in v1beta1")
	}
	// The lists are served from the API server's watch cache, which
	// converted every object while the webhook was up.
	if listErr != nil || metaErr != nil {
		t.Errorf("want the v1beta1 lists served from the watch cache")
	}

	// region: restart
	// An API server that starts while the webhook is down (an upgrade of
	// the control plane, a restart) fills its cache from etcd: the object
	// stored in v1alpha1 cannot be converted, and no list of the kind is
	// served.
	if err := cluster.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	_, listErr = beta.List(ctx, metav1.ListOptions{})
	_, metaErr = meta.List(ctx, metav1.ListOptions{})
	_, betaErr = beta.Get(ctx, current, metav1.GetOptions{})
	t.Logf("webhook down, API server restarted:\n  v1beta1 list: %v\n  v1beta1 list of metadata: %v\n  v1beta1 get of one stored in v1beta1: %v", listErr, metaErr, betaErr)
	// endregion: restart
	if listErr == nil || metaErr == nil {
		t.Errorf("want every list of v1beta1 failing once the API server restarted with the webhook down")
	}

	run()
	began := time.Now()
	waitFor(t, 30*time.Second, "every read works again", func() error {
		if _, err := meta.List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		_, err := alpha.Get(ctx, current, metav1.GetOptions{})
		return err
	})
	t.Logf("webhook back: v1beta1 lists and v1alpha1 reads work again %s after the operator started", time.Since(began).Round(time.Millisecond))
}

// ptKeys is where etcd holds the PodTerminators.
const ptKeys = "/registry/chaos.kooperkit.io/podterminators/"

// setStorage makes version c's PodTerminator CRD's storage version
// (e2etest.SetStorage).
func setStorage(t *testing.T, c *envtest.Cluster, version string) {
	t.Helper()
	e2etest.SetStorage(t, c.Config(), webhook.CRDName, version)
}

// storeAll writes each PodTerminator of names that c's etcd holds in
// another version than version again, unchanged, until all are stored in
// version (e2etest.StoreAgain).
func storeAll(t *testing.T, c *envtest.Cluster, version string, names ...string) {
	t.Helper()
	res := dynamic.NewForConfigOrDie(c.Config()).Resource(chaosv1beta1.SchemeGroupVersion.WithResource("podterminators"))
	e2etest.StoreAgain(t, res, c.EtcdURL(), ptKeys, version, names...)
}

// storedVersion returns the apiVersion of what c's etcd holds at key.
func storedVersion(t *testing.T, c *envtest.Cluster, key string) string {
	t.Helper()
	got := e2etest.Stored(t, c.EtcdURL(), key, false)
	if len(got) != 1 {
		t.Fatalf("etcd holds %d objects at %s, want 1", len(got), key)
	}
	return got[key]
}
