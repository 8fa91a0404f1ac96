package integration_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// Two replicas with leader election; the leader stops cleanly mid-way. The
// standby takes over and carries on from the status: no period is run twice,
// and the counts still agree.
func TestTerminationsCarryOnAcrossALeaderChange(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	terminators := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()

	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "failover-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteNamespaceAtEnd(t, admin, ns.Name)
	pods := watchPods(t, admin, ns.Name)
	createVictims(t, admin, ns.Name, 10)
	e2etest.Eventually(t, 60*time.Second, "10 victim pods are live", func() bool { return pods.live() == 10 })
	pods.startCountingMinimum()

	// replica starts an operator; stop cancels it and returns Run's error.
	replica := func() (reg *prom.Registry, readyz string, stop func() error) {
		reg = prom.NewRegistry()
		addr := e2etest.FreeAddr(t)
		readyz = "http://" + addr + "/readyz"
		cfg := operator.Config{REST: e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100), Registry: reg, HTTPAddr: addr}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- operator.Run(rctx, cfg) }()
		var once sync.Once
		var err error
		stop = func() error {
			once.Do(func() { cancel(); err = <-done })
			return err
		}
		t.Cleanup(func() { _ = stop() })
		return reg, readyz, stop
	}
	leading := func(reg *prom.Registry) bool {
		return e2etest.Metric(t, reg, "kooper_controller_leader", map[string]string{"controller": operator.DefaultName}) == 1
	}
	// region: replicas
	regA, readyA, stopA := replica()
	e2etest.Eventually(t, 30*time.Second, "replica A leads", func() bool { return leading(regA) })
	regB, readyB, _ := replica()
	// Both replicas are ready, each saying its role, so a 2-replica
	// Deployment is Available with one waiting.
	e2etest.Eventually(t, 10*time.Second, "A is ready as leader and B as standby", func() bool {
		return readiness(t, readyA) == "200 leading" && readiness(t, readyB) == "200 standby" && !leading(regB)
	})
	// endregion: replicas

	// A name of its own per run: -count=2 must not count the first run's Events.
	name := ns.Name
	_, err = terminators.Create(ctx, &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			Namespaces:  []string{ns.Name},
			Period:      &metav1.Duration{Duration: 1 * time.Second},
			Termination: chaosv1beta1.Termination{Percent: 30, MinimumInstances: ptr.To[int32](8)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Deleted and awaited while B still runs, so its finalizer is removed
	// and no later run (-count=3) finds it terminating.
	t.Cleanup(func() { deleteTerminator(t, terminators, name) })
	e2etest.Eventually(t, 30*time.Second, "replica A terminates 6 pods", func() bool { return pods.deletedCount() >= 6 })

	// region: handover
	if err := stopA(); err != nil {
		t.Fatalf("replica A: %v", err)
	}
	handedOver := time.Now()
	byA := pods.deletedCount()
	e2etest.Eventually(t, 30*time.Second, "replica B takes over and terminates 6 more", func() bool {
		return leading(regB) && pods.deletedCount() >= byA+6
	})
	t.Logf("replica B took over and terminated 6 more pods %s after A stopped", time.Since(handedOver).Round(time.Millisecond))
	if got := readiness(t, readyB); got != "200 leading" {
		t.Errorf("got B's /readyz %q after the handover, want 200 leading", got)
	}
	// endregion: handover

	// Stop terminating, then compare: every pod the watch saw deleted is in
	// the status, in the two replicas' metrics and in the Events.
	updateSpec(t, terminators, name, func(s *chaosv1beta1.PodTerminatorSpec) { s.DryRun = true })
	time.Sleep(2 * time.Second)
	var deleted, total, metrics, events int
	defer func() {
		t.Logf("pods deleted %d (A %d, then B), status %d, metrics A+B %d, Events %d", deleted, byA, total, metrics, events)
	}()
	e2etest.Eventually(t, 20*time.Second, "the counts agree", func() bool {
		pt, err := terminators.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deleted, total = pods.deletedCount(), int(pt.Status.TerminatedTotal)
		metrics = 0
		for _, reg := range []*prom.Registry{regA, regB} {
			metrics += int(e2etest.Metric(t, reg, "kooper_pod_terminator_terminated_pods_total", map[string]string{"terminator": name, "dry_run": "false"}))
		}
		events = 0
		for _, e := range periodEvents(t, admin, name, "Terminated") {
			events += e.n * e.count
		}
		// region: agree
		// Status and metrics are exact: the handler records a period even
		// while it is stopping. So are Events: A writes those still queued
		// when it stops (kooper/event's Shutdown flushes them).
		return deleted == total && total == metrics && events == deleted
		// endregion: agree
	})
	for _, e := range periodEvents(t, admin, name, "Terminated") {
		if want := chaos.Count(e.live, chaos.Policy{Percent: 30, Minimum: 8}); e.n != want {
			t.Errorf("event %q: %d of %d live, want %d", e.message, e.n, e.live, want)
		}
	}

	// No webhook runs in this test: an invalid spec the schema allows
	// reaches the operator, which marks it Invalid once and leaves it.
	slipped := name + "-slipped-past"
	_, err = terminators.Create(ctx, &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: slipped},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			Namespaces:  []string{"kube-system"},
			Termination: chaosv1beta1.Termination{Percent: 30},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteTerminator(t, terminators, slipped) })
	e2etest.Eventually(t, 10*time.Second, "the slipped-past PodTerminator is marked Invalid", func() bool {
		pt, err := terminators.Get(ctx, slipped, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pt.Status.Conditions {
			if c.Type == chaosv1beta1.ConditionInvalid && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, `"kube-system" is protected`) {
				return true
			}
		}
		return false
	})
	// Marked once, then left alone: no status rewrites, no retries.
	marked, err := terminators.Get(ctx, slipped, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	now, err := terminators.Get(ctx, slipped, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != marked.ResourceVersion {
		t.Errorf("the invalid PodTerminator was written again (resourceVersion %s, then %s): want it marked once and left", marked.ResourceVersion, now.ResourceVersion)
	}
	if m := pods.minimum(); m < 8 {
		t.Errorf("the live victims dropped to %d across the leader change, want never below 8", m)
	}
}

// readiness returns "<code> <body>" of a /readyz.
func readiness(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}
