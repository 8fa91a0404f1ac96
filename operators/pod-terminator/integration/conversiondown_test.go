package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
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
	if got := storedVersion(t, cluster, "/registry/chaos.kooperkit.io/podterminators/"+old); got != chaosv1alpha1.SchemeGroupVersion.String() {
		t.Fatalf("%s is stored in %s, want it in v1alpha1: the test shows nothing", old, got)
	}
	if got := storedVersion(t, cluster, "/registry/chaos.kooperkit.io/podterminators/"+current); got != chaosv1beta1.SchemeGroupVersion.String() {
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

// setStorage makes version c's CRD's storage version, and waits until the
// API server has taken the change (the CRD is established again).
func setStorage(t *testing.T, c *envtest.Cluster, version string) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(c.Config()).ApiextensionsV1().CustomResourceDefinitions()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(context.Background(), webhook.CRDName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
		_, err = crds.Update(context.Background(), crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("could not make %s the storage version: %v", version, err)
	}
	e2etest.Eventually(t, 30*time.Second, "the CRD stores "+version, func() bool {
		crd, err := crds.Get(context.Background(), webhook.CRDName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
	// The API server's handler for the CRD is replaced asynchronously:
	// a write made too early may still be stored in the previous version.
	// The tests check what was stored, in etcd.
	time.Sleep(2 * time.Second)
}

// storeAll writes each PodTerminator of names that c's etcd holds in
// another version than version again, unchanged, until all are stored in
// version. The API server takes a new storage version a moment after the
// CRD says so (setStorage), and a write made before is stored in the
// previous one; an unchanged write stores it again, in the new one.
func storeAll(t *testing.T, c *envtest.Cluster, version string, names ...string) {
	t.Helper()
	res := dynamic.NewForConfigOrDie(c.Config()).Resource(chaosv1beta1.SchemeGroupVersion.WithResource("podterminators"))
	waitFor(t, 30*time.Second, "all are stored in "+version, func() error {
		late := 0
		for _, name := range names {
			if storedVersion(t, c, "/registry/chaos.kooperkit.io/podterminators/"+name) == version {
				continue
			}
			late++
			pt, err := res.Get(context.Background(), name, metav1.GetOptions{})
			if err == nil {
				_, _ = res.Patch(context.Background(), name, types.MergePatchType,
					fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q}}`, pt.GetResourceVersion()), metav1.PatchOptions{})
			}
		}
		if late > 0 {
			return fmt.Errorf("%d of %d not stored in %s", late, len(names), version)
		}
		return nil
	})
}

// storedVersion returns the apiVersion of what c's etcd holds at key.
func storedVersion(t *testing.T, c *envtest.Cluster, key string) string {
	t.Helper()
	got := stored(t, c, key, false)
	if len(got) != 1 {
		t.Fatalf("etcd holds %d objects at %s, want 1", len(got), key)
	}
	return got[key]
}

// stored returns the apiVersion of each object c's etcd holds at key, or
// under it if prefix, read through etcd's JSON gateway: custom resources
// are stored as JSON.
func stored(t *testing.T, c *envtest.Cluster, key string, prefix bool) map[string]string {
	t.Helper()
	req := map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))}
	if prefix {
		end := []byte(key)
		end[len(end)-1]++ // the keys that start with key: [key, end)
		req["range_end"] = base64.StdEncoding.EncodeToString(end)
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(c.EtcdURL()+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("could not read %s from etcd: %v", key, err)
	}
	defer resp.Body.Close()
	var got struct {
		KVs []struct {
			Key   []byte `json:"key"`   // base64 in JSON
			Value []byte `json:"value"` // base64 in JSON
		} `json:"kvs"`
		More bool `json:"more"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.More {
		t.Fatalf("could not read %s from etcd: %v (more: %v)", key, err, got.More)
	}
	versions := make(map[string]string, len(got.KVs))
	for _, kv := range got.KVs {
		var obj struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(kv.Value, &obj); err != nil {
			t.Fatalf("%s in etcd is not JSON: %v", kv.Key, fmt.Errorf("%w: %.80q", err, kv.Value))
		}
		versions[string(kv.Key)] = obj.APIVersion
	}
	return versions
}
