package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/migrate/storage"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

// Objects written while v1alpha1 was the storage version stay stored in
// v1alpha1 after v1beta1 becomes it, until hack/migrate (make
// migrate-storage) writes each again: then etcd holds every one of them in
// v1beta1, none lost and none changed, and the CRD's storedVersions is
// [v1beta1], so v1alpha1 could leave the CRD. On v1.37 kube-controller-
// manager's migrator does the writing (a StorageVersionMigration); the
// previous minor (v1.36, bin/skew) does not serve it, and the command
// writes the objects itself.
func TestStoredObjectsMoveToTheStorageVersion(t *testing.T) {
	t.Run("v1.37, by StorageVersionMigration", func(t *testing.T) {
		applyManifests(t)
		migrateStoredObjects(t, cluster, storage.MethodStorageVersionMigration)
	})
	t.Run("v1.36, rewritten by the command", func(t *testing.T) {
		skew, err := envtest.Start(context.Background(), envtest.Options{BinDir: skewBinDir(t)})
		if err != nil {
			t.Fatalf("could not start the v1.36 control plane: %v", err)
		}
		t.Cleanup(func() {
			if err := skew.Stop(); err != nil {
				t.Error(err)
			}
		})
		applyKustomizationsTo(t, skew, crdDir, rbacDir)
		migrateStoredObjects(t, skew, storage.MethodRewrite)
	})
}

// migrateStoredObjects writes objects while c's CRD stores v1alpha1, makes
// v1beta1 the storage version, migrates and checks what etcd holds.
func migrateStoredObjects(t *testing.T, c *envtest.Cluster, method string) {
	ctx := context.Background()
	clients := versioned.NewForConfigOrDie(c.Config())
	beta, alpha := clients.ChaosV1beta1().PodTerminators(), clients.ChaosV1alpha1().PodTerminators()
	waitFor(t, 30*time.Second, "the PodTerminator CRD is served", func() error {
		_, err := beta.List(ctx, metav1.ListOptions{})
		return err
	})
	// The operator serves conversion and admission (the migration's
	// writes pass both) and handles what is written.
	addr := e2etest.FreeAddr(t)
	registerWebhookOn(t, c.Config(), kubernetes.NewForConfigOrDie(c.Config()), addr)
	cfg := operator.Config{
		REST:    e2etest.AsServiceAccount(c.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100),
		Webhook: operator.Webhook{Addr: addr, Hosts: []string{"127.0.0.1"}},
		Logger:  log.NewStd(t.Output(), log.StdOptions{Level: log.LevelWarn}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })

	// region: before
	// 30 objects written while v1alpha1 is stored, as before an upgrade:
	// two in three through v1alpha1, one in three through v1beta1 with
	// what v1alpha1 cannot hold (maxPods, a period of 1h0m0.5s), kept in
	// an annotation. Their periods are an hour: the operator handles each
	// once, then writes nothing that would move it before the migration.
	setStorage(t, c, "v1alpha1")
	const n = 30
	var names []string
	for i := range n {
		name := "migrate-" + rand.String(6)
		names = append(names, name)
		selector := metav1.LabelSelector{MatchLabels: map[string]string{"app": "nothing-" + name}}
		var err error
		waitFor(t, 30*time.Second, "the webhook admits "+name, func() error {
			if i%3 == 0 {
				_, err = beta.Create(ctx, &chaosv1beta1.PodTerminator{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: chaosv1beta1.PodTerminatorSpec{Selector: selector, DryRun: true,
						Period:      &metav1.Duration{Duration: time.Hour + 500*time.Millisecond},
						Termination: chaosv1beta1.Termination{Percent: 10, MaxPods: ptr.To[int32](int32(i + 1))}},
				}, metav1.CreateOptions{})
			} else {
				_, err = alpha.Create(ctx, &chaosv1alpha1.PodTerminator{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: chaosv1alpha1.PodTerminatorSpec{Selector: selector, DryRun: true,
						PeriodSeconds: ptr.To[int32](3600), TerminationPercent: int32(1 + i)},
				}, metav1.CreateOptions{})
			}
			return err
		})
	}
	// With the operator serving, the objects go when the test ends.
	t.Cleanup(func() {
		for _, name := range names {
			_ = beta.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
		e2etest.Eventually(t, 60*time.Second, "the test's PodTerminators are gone", func() bool {
			list, err := beta.List(context.Background(), metav1.ListOptions{})
			return err == nil && !slices.ContainsFunc(list.Items, func(pt chaosv1beta1.PodTerminator) bool { return strings.HasPrefix(pt.Name, "migrate-") })
		})
	})
	e2etest.Eventually(t, 60*time.Second, "the operator handles each (finalizer, status)", func() bool {
		list, err := beta.List(ctx, metav1.ListOptions{})
		handled := 0
		for _, pt := range list.Items {
			if slices.Contains(names, pt.Name) && len(pt.Finalizers) > 0 && pt.Status.ObservedGeneration == pt.Generation {
				handled++
			}
		}
		return err == nil && handled == n
	})
	alphaVersion, betaVersion := chaosv1alpha1.SchemeGroupVersion.String(), chaosv1beta1.SchemeGroupVersion.String()
	storeAll(t, c, alphaVersion, names...)
	setStorage(t, c, "v1beta1")
	// endregion: before
	// The check below finds what a skipped migration leaves: were these
	// not in v1alpha1, the test would show nothing. The operator may still
	// write one or two (a handling that was under way), now in v1beta1.
	before := ours(e2etest.Stored(t, c.EtcdURL(), ptKeys, true), names)
	inAlpha := n - len(notIn(before, alphaVersion))
	t.Logf("before the migration, %d of the %d objects are stored in v1alpha1", inAlpha, n)
	if len(before) != n || inAlpha < n-5 {
		t.Fatalf("etcd holds %d of the %d objects, %d of them in v1alpha1 (%v); want all %d, and nearly all in v1alpha1", len(before), n, inAlpha, before, n)
	}
	crds := apiextensionsclient.NewForConfigOrDie(c.Config()).ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, webhook.CRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(crd.Status.StoredVersions, "v1alpha1") {
		t.Fatalf("storedVersions is %v before the migration, want v1alpha1 in it", crd.Status.StoredVersions)
	}
	read := func() map[string]chaosv1beta1.PodTerminator {
		t.Helper()
		list, err := beta.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]chaosv1beta1.PodTerminator{}
		for _, pt := range list.Items {
			if slices.Contains(names, pt.Name) {
				// What a write changes whatever it holds.
				pt.ResourceVersion, pt.ManagedFields = "", nil
				got[pt.Name] = pt
			}
		}
		return got
	}
	was := read()

	// region: migrate
	began := time.Now()
	report, err := storage.Migrate(ctx, c.Config(), webhook.CRDName, storage.Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Logf("%s, in %s", report, time.Since(began).Round(time.Millisecond))
	// endregion: migrate
	if report.Method != method {
		t.Errorf("migrated by %s, want %s", report.Method, method)
	}
	if method == storage.MethodRewrite && (report.Listed != n || report.Rewritten < inAlpha || report.Rewritten+report.Already+report.ChangedSince != n) {
		t.Errorf("listed %d, rewrote %d, found %d stored already and %d written since; want %d listed, and the %d in v1alpha1 rewritten", report.Listed, report.Rewritten, report.Already, report.ChangedSince, n, inAlpha)
	}
	after := ours(e2etest.Stored(t, c.EtcdURL(), ptKeys, true), names)
	if bad := notIn(after, betaVersion); len(after) != n || len(bad) != 0 {
		t.Errorf("etcd holds %d of the %d objects after the migration, %d not in v1beta1: %v", len(after), n, len(bad), bad)
	}
	if crd, err = crds.Get(ctx, webhook.CRDName, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v1beta1"}) || !slices.Equal(report.After, []string{"v1beta1"}) {
		t.Errorf("storedVersions is %v (the report says %v), want [v1beta1]", crd.Status.StoredVersions, report.After)
	}
	if now := read(); !reflect.DeepEqual(now, was) {
		for name := range was {
			if !reflect.DeepEqual(now[name], was[name]) {
				t.Errorf("%s changed in the migration:\nbefore %+v\nafter  %+v", name, was[name], now[name])
			}
		}
	}
	// Nothing is left to do: a second run writes nothing.
	if again, err := storage.Migrate(ctx, c.Config(), webhook.CRDName, storage.Options{}); err != nil || again.Method != storage.MethodNone {
		t.Errorf("a second run: %v, %v; want nothing done", again, err)
	}
}

// ours keeps the entries of stored whose object is one of names.
func ours(stored map[string]string, names []string) map[string]string {
	got := map[string]string{}
	for key, version := range stored {
		if slices.Contains(names, filepath.Base(key)) {
			got[filepath.Base(key)] = version
		}
	}
	return got
}

// notIn returns the entries of stored whose version is not version.
func notIn(stored map[string]string, version string) map[string]string {
	bad := map[string]string{}
	for name, v := range stored {
		if v != version {
			bad[name] = v
		}
	}
	return bad
}

// skewBinDir is where the previous minor's kube-apiserver and etcd are:
// $KOOPER_SKEW_BIN, else bin/skew (make controlplane WITH_SKEW=1, which
// make test runs).
func skewBinDir(t *testing.T) string {
	t.Helper()
	dirs := []string{os.Getenv("KOOPER_SKEW_BIN"), filepath.Join(cluster.BinDir(), "skew"), filepath.Join("..", "..", "..", "bin", "skew")}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, envtest.BinAPIServer)); dir != "" && err == nil {
			return dir
		}
	}
	t.Fatalf("no previous-minor kube-apiserver in %q: make controlplane WITH_SKEW=1 builds it into bin/skew", dirs)
	return ""
}
