package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	chaosv1alpha1 "github.com/kooperkit/kooper/apis/chaos/v1alpha1"
	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// The API server stores v1beta1 and serves v1alpha1 too, converted by the
// operator's conversion webhook: either version reads the same object, a
// write through v1alpha1 reads back through v1beta1, what v1alpha1 cannot
// hold survives a read-modify-write through it, and v1alpha1 answers with
// a deprecation warning.
func TestBothVersionsServeTheSameObjects(t *testing.T) {
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
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })

	seen := &warningRecorder{}
	restCfg := cluster.Config()
	restCfg.WarningHandler = seen
	clients := versioned.NewForConfigOrDie(restCfg)
	beta, alpha := clients.ChaosV1beta1().PodTerminators(), clients.ChaosV1alpha1().PodTerminators()
	name := "both-" + rand.String(5)
	t.Cleanup(func() { _ = beta.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	want := &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			Period:   &metav1.Duration{Duration: 1500 * time.Millisecond},
			Termination: chaosv1beta1.Termination{
				Percent: 20, MaxPods: ptr.To[int32](2), Method: chaosv1beta1.TerminationMethodDelete,
			},
			DryRun: true,
		},
	}
	// Once the operator serves its webhooks, the create is admitted.
	var written *chaosv1beta1.PodTerminator
	waitFor(t, 30*time.Second, "the webhook admits the PodTerminator", func() error {
		var err error
		written, err = beta.Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
		return err
	})
	// The operator writes its CA into the CRD; until the API server has
	// it, nothing can be read in v1alpha1.
	waitFor(t, 30*time.Second, "v1alpha1 is served through the conversion webhook", func() error {
		_, err := alpha.Get(ctx, name, metav1.GetOptions{})
		return err
	})

	t.Run("v1alpha1 reads what v1beta1 wrote, with a deprecation warning", func(t *testing.T) {
		old, err := alpha.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := old.Spec
		if *s.PeriodSeconds != 1 || s.TerminationPercent != 20 || *s.MinimumInstances != 1 || s.TerminationMethod != chaosv1alpha1.TerminationMethodDelete || !s.DryRun {
			t.Errorf("got spec %+v, want periodSeconds 1 (1.5s toward zero), 20%%, the default minimum 1, Delete, dry run", s)
		}
		if got := old.Annotations[chaosv1beta1.PreservedAnnotation]; got != `{"period":"1.5s","maxPods":2}` {
			t.Errorf("got annotation %q, want what v1alpha1 cannot hold", got)
		}
		if old.UID != written.UID {
			t.Errorf("got uid %s, want the object written (%s)", old.UID, written.UID)
		}
		// The same resourceVersion as a v1beta1 read: the operator writes
		// the object every period (1.5s), so read v1alpha1 between two
		// v1beta1 reads that agree.
		waitFor(t, 10*time.Second, "a v1alpha1 read between two v1beta1 reads at the same resourceVersion", func() error {
			before, err := beta.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			old, err := alpha.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			after, err := beta.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if before.ResourceVersion != after.ResourceVersion {
				return fmt.Errorf("written meanwhile (%s, then %s)", before.ResourceVersion, after.ResourceVersion)
			}
			if old.ResourceVersion != before.ResourceVersion {
				t.Errorf("got resourceVersion %s in v1alpha1, want v1beta1's %s", old.ResourceVersion, before.ResourceVersion)
			}
			return nil
		})
		if !strings.Contains(seen.String(), "chaos.kooperkit.io/v1alpha1 PodTerminator is deprecated") {
			t.Errorf("got warnings %q, want the deprecation", seen)
		}
	})

	t.Run("kubectl get of either version returns the same object", func(t *testing.T) {
		get := func(resource string) map[string]any {
			out, err := exec.Command(filepath.Join(cluster.BinDir(), envtest.BinKubectl), "--kubeconfig", cluster.KubeconfigPath(),
				"get", resource, name, "-o", "json").Output()
			if err != nil {
				t.Fatalf("kubectl get %s: %v", resource, err)
			}
			var obj map[string]any
			if err := json.Unmarshal(out, &obj); err != nil {
				t.Fatal(err)
			}
			return obj
		}
		b, a := get("podterminators.v1beta1.chaos.kooperkit.io"), get("podterminators.v1alpha1.chaos.kooperkit.io")
		bm, am := b["metadata"].(map[string]any), a["metadata"].(map[string]any)
		if b["apiVersion"] != "chaos.kooperkit.io/v1beta1" || a["apiVersion"] != "chaos.kooperkit.io/v1alpha1" || bm["uid"] != am["uid"] || bm["resourceVersion"] != am["resourceVersion"] {
			t.Errorf("got %v %v and %v %v, want one object in two versions", b["apiVersion"], bm["uid"], a["apiVersion"], am["uid"])
		}
	})

	t.Run("an update through v1alpha1 keeps what only v1beta1 holds", func(t *testing.T) {
		// A read-modify-write, as a v1alpha1 client makes it: again from
		// the read if the operator wrote in between (its finalizer, its
		// status).
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			old, err := alpha.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			old.Spec.TerminationPercent = 30
			_, err = alpha.Update(ctx, old, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := beta.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tm := got.Spec.Termination
		if tm.Percent != 30 || tm.MaxPods == nil || *tm.MaxPods != 2 || got.Spec.Period.Duration != 1500*time.Millisecond {
			t.Errorf("got termination %+v, period %s, want 30%% and the kept maxPods 2 and period 1.5s", tm, got.Spec.Period.Duration)
		}
		if _, ok := got.Annotations[chaosv1beta1.PreservedAnnotation]; ok {
			t.Errorf("got annotations %v, want none of the conversion's in v1beta1", got.Annotations)
		}
	})

	t.Run("a write through v1alpha1 reads back through v1beta1", func(t *testing.T) {
		oldName := "old-" + rand.String(5)
		t.Cleanup(func() { _ = beta.Delete(context.Background(), oldName, metav1.DeleteOptions{}) })
		_, err := alpha.Create(ctx, &chaosv1alpha1.PodTerminator{
			ObjectMeta: metav1.ObjectMeta{Name: oldName},
			Spec: chaosv1alpha1.PodTerminatorSpec{
				Selector:           metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
				PeriodSeconds:      ptr.To[int32](30),
				TerminationPercent: 25,
				MinimumInstances:   ptr.To[int32](2),
				DryRun:             true,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := beta.Get(ctx, oldName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tm := got.Spec.Termination
		if got.Spec.Period.Duration != 30*time.Second || tm.Percent != 25 || *tm.MinimumInstances != 2 || tm.Method != chaosv1beta1.TerminationMethodEviction || tm.MaxPods != nil {
			t.Errorf("got period %s, termination %+v, want 30s, 25%%, minimum 2, the default Eviction, no cap", got.Spec.Period.Duration, tm)
		}
	})

	// A period is a string: "60s" and "1m0s" are one duration, and the
	// typed client writes the second. The operator writes only its
	// finalizer and status, so what the user wrote stays, at generation 1.
	t.Run("the operator leaves the spec as written", func(t *testing.T) {
		resource := chaosv1beta1.SchemeGroupVersion.WithResource("podterminators")
		objs := dynamic.NewForConfigOrDie(cluster.Config()).Resource(resource)
		asWritten := "as-written-" + rand.String(5)
		t.Cleanup(func() { _ = beta.Delete(context.Background(), asWritten, metav1.DeleteOptions{}) })
		_, err := objs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": chaosv1beta1.SchemeGroupVersion.String(), "kind": "PodTerminator",
			"metadata": map[string]any{"name": asWritten},
			"spec": map[string]any{
				"selector":    map[string]any{"matchLabels": map[string]any{"app": "victim"}},
				"period":      "60s",
				"termination": map[string]any{"percent": int64(10)},
				"dryRun":      true,
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got *unstructured.Unstructured
		waitFor(t, 30*time.Second, "the operator adds its finalizer and records a period", func() error {
			if got, err = objs.Get(ctx, asWritten, metav1.GetOptions{}); err != nil {
				return err
			}
			fins, _, _ := unstructured.NestedStringSlice(got.Object, "metadata", "finalizers")
			if _, ok, _ := unstructured.NestedString(got.Object, "status", "lastTerminationTime"); len(fins) == 0 || !ok {
				return fmt.Errorf("finalizers %v, status %v", fins, got.Object["status"])
			}
			return nil
		})
		if period, _, _ := unstructured.NestedString(got.Object, "spec", "period"); period != "60s" || got.GetGeneration() != 1 {
			t.Errorf("got period %q at generation %d, want \"60s\" as written, at generation 1", period, got.GetGeneration())
		}
	})
}

// Every replica serves the conversion webhook, not only the leader: with
// the CRD's conversion pointed at a standby's server alone, v1alpha1 is
// served while the standby stays a standby.
func TestAStandbyServesConversion(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	leaderAddr, standbyAddr := e2etest.FreeAddr(t), e2etest.FreeAddr(t)
	registerWebhook(t, admin, standbyAddr) // the admission and conversion webhooks call the standby only
	replica := func(webhookAddr string) (reg *prom.Registry, readyz string) {
		reg = prom.NewRegistry()
		httpAddr := e2etest.FreeAddr(t)
		cfg := operator.Config{
			REST:     e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100),
			Registry: reg, HTTPAddr: httpAddr,
			Webhook: operator.Webhook{Addr: webhookAddr, Hosts: []string{"127.0.0.1"}},
			Logger:  log.NewStd(t.Output(), log.StdOptions{}),
		}
		e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
		return reg, "http://" + httpAddr + "/readyz"
	}
	leading := func(reg *prom.Registry) bool {
		return e2etest.Metric(t, reg, "kooper_controller_leader", map[string]string{"controller": operator.DefaultName}) == 1
	}
	leaderReg, _ := replica(leaderAddr)
	e2etest.Eventually(t, 30*time.Second, "the first replica leads", func() bool { return leading(leaderReg) })
	standbyReg, standbyReady := replica(standbyAddr)
	e2etest.Eventually(t, 30*time.Second, "the second replica is ready as a standby", func() bool {
		return readiness(t, standbyReady) == "200 standby"
	})

	clients := versioned.NewForConfigOrDie(cluster.Config())
	name := "standby-" + rand.String(5)
	t.Cleanup(func() {
		_ = clients.ChaosV1beta1().PodTerminators().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	waitFor(t, 30*time.Second, "the standby's webhook admits the PodTerminator", func() error {
		_, err := clients.ChaosV1beta1().PodTerminators().Create(ctx, &chaosv1beta1.PodTerminator{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: chaosv1beta1.PodTerminatorSpec{
				Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
				Termination: chaosv1beta1.Termination{Percent: 10},
				DryRun:      true,
			},
		}, metav1.CreateOptions{})
		return err
	})
	waitFor(t, 30*time.Second, "the standby converts to v1alpha1", func() error {
		old, err := clients.ChaosV1alpha1().PodTerminators().Get(ctx, name, metav1.GetOptions{})
		if err == nil && old.Spec.TerminationPercent != 10 {
			return fmt.Errorf("got terminationPercent %d, want 10", old.Spec.TerminationPercent)
		}
		return err
	})
	if leading(standbyReg) || !leading(leaderReg) {
		t.Errorf("the roles changed: the test shows nothing about a standby")
	}
}
