package integration_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/kube"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
)

// runOperator runs the operator as its ServiceAccount, alone (no leader
// election, no webhook), until the test ends.
func runOperator(t *testing.T) *prom.Registry {
	t.Helper()
	reg := prom.NewRegistry()
	cfg := operator.Config{
		REST:                  e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100),
		Registry:              reg,
		DisableLeaderElection: true,
		Logger:                log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })
	return reg
}

func createNamespace(t *testing.T, client kubernetes.Interface, prefix string) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteNamespaceAtEnd(t, client, ns.Name)
	return ns.Name
}

// deleteNamespaceAtEnd deletes the namespace ns, with its pods, when the
// test ends: the kwok node holds 110 pods, and repeated runs against one
// cluster (-count=3) would fill it.
func deleteNamespaceAtEnd(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	t.Cleanup(func() {
		if err := client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("could not delete namespace %s: %v", ns, err)
		}
	})
}

// createTerminator creates a PodTerminator of the victims of ns, named after
// ns, and deletes it when the test ends, waiting until the operator (started
// before, so stopped after) has removed its finalizer.
func createTerminator(t *testing.T, ns string, edit func(*chaosv1beta1.PodTerminatorSpec)) {
	t.Helper()
	terminators := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators()
	pt := &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:   metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			Namespaces: []string{ns},
		},
	}
	edit(&pt.Spec)
	if _, err := terminators.Create(context.Background(), pt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteTerminator(t, terminators, ns) })
}

func readyCondition(t *testing.T, name string) metav1.Condition {
	t.Helper()
	pt, err := versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := findCondition(pt.Status.Conditions, chaosv1beta1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// Pending pods and running pods that are not Ready are no instances: they
// neither keep the minimum nor are chosen. 3 Ready and 3 never-Ready pods,
// 100% with a minimum of 2: exactly 1 goes, a Ready one.
func TestOnlyReadyPodsAreCountedAndTerminated(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ns := createNamespace(t, admin, "ready-")
	pods := watchPods(t, admin, ns)
	createVictims(t, admin, ns, 3)
	// No node has the label these pods select: they stay Pending, except
	// that "running" is said Running and not Ready, as a kubelet would for a
	// failing readiness probe (kwok would make it Ready).
	neverReady := []string{"pending-0", "pending-1", "running"}
	for _, name := range neverReady {
		p, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "victim"}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"no-such-label": "x"},
				Containers:   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if name == "running" {
			// The scheduler writes the pod's status too (Unschedulable):
			// retry on its conflicts.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p, err := admin.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessProbeFailed"})
				_, err = admin.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	e2etest.Eventually(t, 60*time.Second, "3 Ready victims", func() bool { return pods.live() == 3 })
	running, err := admin.CoreV1().Pods(ns).Get(ctx, "running", metav1.GetOptions{})
	if err != nil || running.Status.Phase != corev1.PodRunning || podReady(running) {
		t.Fatalf("got pod running %+v (err %v), want it Running and not Ready", running.Status, err)
	}

	runOperator(t)
	// One period only: the next is an hour away.
	createTerminator(t, ns, func(s *chaosv1beta1.PodTerminatorSpec) {
		s.Period = &metav1.Duration{Duration: time.Hour}
		s.Termination.Percent = 100
		s.Termination.MinimumInstances = ptr.To[int32](2)
	})
	e2etest.Eventually(t, 30*time.Second, "the period is recorded", func() bool {
		return readyCondition(t, ns).Reason == chaosv1beta1.ReasonReconciled
	})
	// The Event is queued and written after the status (kooper/event): wait
	// for it, then check it is the only one.
	var events []periodEvent
	e2etest.Eventually(t, 10*time.Second, "the period's Terminated Event is written", func() bool {
		events = periodEvents(t, admin, ns, "Terminated")
		return len(events) > 0
	})
	if len(events) != 1 || events[0].n != 1 || events[0].live != 3 {
		t.Errorf("got Terminated events %+v, want one of 1 of 3 live pods", events)
	}
	if got := pods.deletedCount(); got != 1 {
		t.Errorf("got %d pods deleted, want 1", got)
	}
	for _, name := range neverReady {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Errorf("the never-Ready pod %s was terminated (err %v)", name, err)
		}
	}
}

// With the default method, evictions honour a PodDisruptionBudget: pods it
// protects are left, reported in status and in a Warning Event, and tried
// again next period. Delete ignores the budget.
func TestADisruptionBudgetHoldsEvictionsButNotDeletes(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ns := createNamespace(t, admin, "budget-")
	pods := watchPods(t, admin, ns)
	createVictims(t, admin, ns, 4)
	_, err := admin.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "victim"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(3)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Eventually(t, 60*time.Second, "4 Ready victims and the budget allows 1 disruption", func() bool {
		pdb, err := admin.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "victim", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pods.live() == 4 && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == 1
	})
	pods.startCountingMinimum()

	runOperator(t)
	createTerminator(t, ns, func(s *chaosv1beta1.PodTerminatorSpec) {
		s.Period = &metav1.Duration{Duration: 2 * time.Second}
		s.Termination.Percent = 100
		s.Termination.MinimumInstances = ptr.To[int32](0)
	})
	var c metav1.Condition
	e2etest.Eventually(t, 30*time.Second, "the status says a budget refused evictions", func() bool {
		c = readyCondition(t, ns)
		return c.Reason == chaosv1beta1.ReasonDisruptionBudget
	})
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "a disruption budget refused evicting") || !strings.Contains(c.Message, ns+"/victim-") {
		t.Errorf("got Ready %+v, want False with a message naming the refused pods", c)
	}
	e2etest.Eventually(t, 30*time.Second, "a Warning Event DisruptionBudget", func() bool {
		list, err := admin.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=PodTerminator,involvedObject.name=" + ns + ",reason=" + chaosv1beta1.ReasonDisruptionBudget,
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items) > 0 && list.Items[0].Type == corev1.EventTypeWarning && strings.Contains(list.Items[0].Message, "refused evicting")
	})
	// The next periods evict again, one pod at a time, as the budget allows.
	e2etest.Eventually(t, 60*time.Second, "3 pods evicted over several periods", func() bool { return pods.deletedCount() >= 3 })
	if m := pods.minimum(); m < 3 {
		t.Errorf("got %d Ready victims at the fewest while evicting, want never below the budget's 3", m)
	}

	updateSpec(t, versioned.NewForConfigOrDie(cluster.Config()).ChaosV1beta1().PodTerminators(), ns,
		func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Method = chaosv1beta1.TerminationMethodDelete })
	e2etest.Eventually(t, 60*time.Second, "Delete takes the Ready victims below the budget", func() bool { return pods.minimum() < 3 })
	e2etest.Eventually(t, 30*time.Second, "the status no longer mentions the budget", func() bool {
		c := readyCondition(t, ns)
		return c.Status == metav1.ConditionTrue && c.Reason == chaosv1beta1.ReasonReconciled
	})
}

// requestLog records the query of every LIST of pods across all namespaces.
type requestLog struct {
	mu    sync.Mutex
	lists []url.Values
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && req.URL.Path == "/api/v1/pods" && req.URL.Query().Get("watch") == "" {
			l.mu.Lock()
			l.lists = append(l.lists, req.URL.Query())
			l.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (l *requestLog) take() []url.Values {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lists
	l.lists = nil
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A broad selector (every namespace) is read in pages of PageSize running
// pods, and more pages than MaxPages fail the period with a clear error.
func TestPodsAreListedInBoundedPages(t *testing.T) {
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	ns := createNamespace(t, admin, "paged-")
	match := map[string]string{"paged": ns} // a label no other test's pods have
	createPods(t, admin, ns, "paged", match, 12)
	// And one pending pod, which the server leaves out.
	_, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Labels: match},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"no-such-label": "x"},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Eventually(t, 60*time.Second, "12 Ready pods", func() bool {
		list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.FormatLabels(match)})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := range list.Items {
			if podReady(&list.Items[i]) {
				n++
			}
		}
		return n == 12
	})

	log := &requestLog{}
	cfg := rest.CopyConfig(cluster.Config())
	cfg.WrapTransport = log.wrap
	client := kubernetes.NewForConfigOrDie(cfg)
	target := chaos.Target{Selector: labels.SelectorFromSet(match)} // every namespace

	got, err := kube.Pods{Client: client, PageSize: 5}.ListPods(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, p := range got {
		if p.Live() {
			live++
		}
	}
	lists := log.take()
	if len(got) != 12 || live != 12 || len(lists) != 3 {
		t.Errorf("got %d pods (%d live) in %d LISTs, want the 12 Ready pods in 3 pages of 5", len(got), live, len(lists))
	}
	for i, q := range lists {
		if q.Get("limit") != "5" || q.Get("fieldSelector") != "status.phase=Running" || (i > 0) != (q.Get("continue") != "") {
			t.Errorf("got LIST %d with %v, want limit=5, running pods, and a continue token after the first", i, q)
		}
	}

	_, err = kube.Pods{Client: client, PageSize: 5, MaxPages: 2}.ListPods(ctx, target)
	if !errors.Is(err, kube.ErrTooManyPods) || !strings.Contains(err.Error(), "narrow spec.selector or spec.namespaces") {
		t.Errorf("got %v, want ErrTooManyPods asking to narrow the selector", err)
	}
	if n := len(log.take()); n != 2 {
		t.Errorf("got %d LISTs, want the bound of 2", n)
	}
}
