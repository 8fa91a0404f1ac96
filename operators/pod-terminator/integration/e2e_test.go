package integration_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/kooper/log"
	"github.com/kooperkit/kooper/operators/internal/conversion"
	"github.com/kooperkit/kooper/operators/internal/devloop"
	"github.com/kooperkit/kooper/operators/internal/e2etest"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/operator"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/webhook"
)

const crdDir = "../../../manifests/crds"

// The whole operator, run as its ServiceAccount (impersonation) with leader
// election and the webhook on, against a Deployment whose pods the
// ReplicaSet controller re-creates.
func TestThePodTerminatorEndToEnd(t *testing.T) {
	ctx := context.Background()
	applyManifests(t)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	chaosAdmin := versioned.NewForConfigOrDie(cluster.Config())
	terminators := chaosAdmin.ChaosV1beta1().PodTerminators()

	// The webhook, registered by URL on 127.0.0.1 with no CA: the operator
	// generates its certificate and injects the CA, as in a cluster.
	addr := e2etest.FreeAddr(t)
	registerWebhook(t, admin, addr)

	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "victims-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteNamespaceAtEnd(t, admin, ns.Name)
	pods := watchPods(t, admin, ns.Name)
	createVictims(t, admin, ns.Name, 10)
	e2etest.Eventually(t, 60*time.Second, "10 victim pods are live", func() bool { return pods.live() == 10 })
	pods.startCountingMinimum()

	registry := prom.NewRegistry()
	httpAddr := e2etest.FreeAddr(t)
	counted, requests := e2etest.CountRequests(e2etest.AsServiceAccount(cluster.Config(), "kooper-pod-terminator", "pod-terminator", 50, 100)) // the command's defaults
	cfg := operator.Config{
		REST:     counted,
		Registry: registry,
		Webhook:  operator.Webhook{Addr: addr, Hosts: []string{"127.0.0.1"}},
		HTTPAddr: httpAddr,
		Logger:   log.NewStd(t.Output(), log.StdOptions{}),
	}
	e2etest.Run(t, func(ctx context.Context) error { return operator.Run(ctx, cfg) })

	t.Run("invalid objects are refused with clear messages and never handled", func(t *testing.T) {
		queuedBefore := e2etest.Metric(t, registry, "kooper_controller_queued_events_total", nil)
		valid := func(edit func(*chaosv1beta1.PodTerminatorSpec)) *chaosv1beta1.PodTerminator {
			pt := &chaosv1beta1.PodTerminator{
				ObjectMeta: metav1.ObjectMeta{Name: "invalid"},
				Spec: chaosv1beta1.PodTerminatorSpec{
					Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
					Termination: chaosv1beta1.Termination{Percent: 30},
				},
			}
			edit(&pt.Spec)
			return pt
		}
		tests := []struct {
			name string
			pt   *chaosv1beta1.PodTerminator
			want string
		}{
			{"empty selector (schema, CEL)", valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Selector = metav1.LabelSelector{} }),
				"selector must not be empty: set matchLabels or matchExpressions"},
			{"percent 0 (schema)", valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Percent = 0 }),
				"spec.termination.percent: Invalid value: 0: spec.termination.percent in body should be greater than or equal to 1"},
			{"percent 150 (schema)", valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Percent = 150 }),
				"spec.termination.percent in body should be less than or equal to 100"},
			{"negative minimum (schema)", valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.MinimumInstances = ptr.To[int32](-1) }),
				"spec.termination.minimumInstances in body should be greater than or equal to 0"},
			{"kube-system (webhook)", valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Namespaces = []string{"kube-system"} }),
				`admission webhook "podterminators.chaos.kooperkit.io" denied the request: invalid PodTerminator: spec.namespaces: "kube-system" is protected`},
			{"selector by exclusion (webhook)", valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}
			}), "matches by exclusion only"},
			{"the operator's own pods (webhook)", valid(func(s *chaosv1beta1.PodTerminatorSpec) {
				s.Selector = metav1.LabelSelector{MatchLabels: operator.DefaultPodLabels}
			}), "matches the pod-terminator's own pods"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				// Until the API server has the injected CA, webhook calls
				// fail with a TLS error: wait for the real answer.
				var err error
				e2etest.Eventually(t, 20*time.Second, "the API server answers with the check's message", func() bool {
					_, err = terminators.Create(ctx, tt.pt, metav1.CreateOptions{})
					return err != nil && strings.Contains(err.Error(), tt.want)
				})
				if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) && !apierrors.IsBadRequest(err) {
					t.Errorf("got %v, want a refusal", err)
				}
				if _, err := terminators.Get(ctx, tt.pt.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("got %v reading it, want NotFound", err)
				}
			})
		}
		t.Run("a risky spec is accepted with a warning", func(t *testing.T) {
			warnings := &warningRecorder{}
			cfg := rest.CopyConfig(cluster.Config())
			cfg.WarningHandler = warnings
			pt := valid(func(s *chaosv1beta1.PodTerminatorSpec) { s.Termination.Percent = 80 })
			_, err := versioned.NewForConfigOrDie(cfg).ChaosV1beta1().PodTerminators().Create(ctx, pt, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatal(err)
			}
			if got := warnings.String(); !strings.Contains(got, "termination.percent 80 without dryRun or maxPods terminates most matching pods") {
				t.Errorf("got warnings %q, want the high-percent warning", got)
			}
		})
		if after := e2etest.Metric(t, registry, "kooper_controller_queued_events_total", nil); after != queuedBefore {
			t.Errorf("the controller queued %v events while only invalid objects were written, want 0", after-queuedBefore)
		}
	})

	// Named after the namespace: unique, so that a second run against the
	// same cluster (-count=2) never counts the first run's Events.
	name := ns.Name
	var periodsBefore int
	requestsBefore := requests.Counts()
	t.Run("each period terminates what the rule says and never goes below the minimum", func(t *testing.T) {
		_, err := terminators.Create(ctx, &chaosv1beta1.PodTerminator{
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
		e2etest.Eventually(t, 30*time.Second, "12 pods are terminated", func() bool { return pods.deletedCount() >= 12 })
		pt, err := terminators.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slicesContains(pt.Finalizers, "chaos.kooperkit.io/pod-terminator") {
			t.Errorf("got finalizers %v, want the operator's", pt.Finalizers)
		}
		if c := findCondition(pt.Status.Conditions, chaosv1beta1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("got conditions %+v, want Ready", pt.Status.Conditions)
		}
	})

	t.Run("a spec change (dry run) takes effect from the next period", func(t *testing.T) {
		changed := updateSpec(t, terminators, name, func(s *chaosv1beta1.PodTerminatorSpec) { s.DryRun = true })
		e2etest.Eventually(t, 10*time.Second, "a DryRun event", func() bool {
			return len(periodEvents(t, admin, name, "DryRun")) > 0
		})
		time.Sleep(2 * time.Second)
		if late := pods.deletedAfter(changed.Add(time.Second + 500*time.Millisecond)); late > 0 {
			t.Errorf("got %d pods deleted more than a period after the switch to a dry run, want 0", late)
		}
		// The last pods deleted are replaced, and Ready again, within a
		// few seconds; then none goes.
		e2etest.Eventually(t, 30*time.Second, "all 10 pods are live during the dry run", func() bool { return pods.live() == 10 })
		periodsBefore = len(periodEvents(t, admin, name, "Terminated"))
	})

	t.Run("events, status and the metric agree with the pods deleted", func(t *testing.T) {
		var deleted, total, metric, fromEvents, dryRunMetric, dryRunEvents int
		defer func() {
			t.Logf("pods deleted %d, status.terminatedTotal %d, metric %d, Events %d (%d periods); dry run: metric %d, Events %d",
				deleted, total, metric, fromEvents, periodsBefore, dryRunMetric, dryRunEvents)
		}()
		e2etest.Eventually(t, 10*time.Second, "the counts agree", func() bool {
			pt, err := terminators.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			deleted = pods.deletedCount()
			total = int(pt.Status.TerminatedTotal)
			metric = int(e2etest.Metric(t, registry, "kooper_pod_terminator_terminated_pods_total", map[string]string{"terminator": name, "dry_run": "false"}))
			dryRunMetric = int(e2etest.Metric(t, registry, "kooper_pod_terminator_terminated_pods_total", map[string]string{"terminator": name, "dry_run": "true"}))
			fromEvents, dryRunEvents = 0, 0
			for _, e := range periodEvents(t, admin, name, "Terminated") {
				fromEvents += e.n * e.count
			}
			for _, e := range periodEvents(t, admin, name, "DryRun") {
				dryRunEvents += e.n * e.count
			}
			return deleted > 0 && deleted == total && total == metric && metric == fromEvents && dryRunMetric > 0 && dryRunEvents == dryRunMetric
		})
		// What the periods asked of the API server: a consistent LIST of
		// the pods each (one page here), the claim and the record in the
		// status, the evictions and the Event.
		periods, during := 0, requests.Counts()
		for _, reason := range []string{"Terminated", "DryRun"} {
			for _, e := range periodEvents(t, admin, name, reason) {
				periods += e.count
			}
		}
		var perPeriod []string
		for _, kind := range slices.Sorted(maps.Keys(during)) {
			if n := during[kind] - requestsBefore[kind]; n > 0 && !strings.Contains(kind, "leases") {
				perPeriod = append(perPeriod, fmt.Sprintf("%s %.2f", kind, float64(n)/float64(max(periods, 1))))
			}
		}
		t.Logf("API requests per period over %d periods (leader election's aside): %s", periods, strings.Join(perPeriod, ", "))
		if during["LIST pods"]-requestsBefore["LIST pods"] < periods {
			t.Errorf("got %d LISTs of pods in %d periods, want one a period at least", during["LIST pods"]-requestsBefore["LIST pods"], periods)
		}
		for _, reason := range []string{"Terminated", "DryRun"} {
			for _, e := range periodEvents(t, admin, name, reason) {
				if want := chaos.Count(e.live, chaos.Policy{Percent: 30, Minimum: 8}); e.n != want {
					t.Errorf("%s event %q: %d of %d live, want %d by the rounding rule", reason, e.message, e.n, e.live, want)
				}
			}
		}
	})

	// The operator's clients come from observe's TrackWrites config: a
	// PodTerminator whose handling wrote (its finalizer, each period's
	// claim and record in status) is not handled again before the cache
	// has seen those writes. Over the periods above some key came out of
	// the queue before then (the claim's event comes while the period
	// runs) and waited; the dry-run periods go on meanwhile.
	t.Run("keys wait for the cache to see their handlings' own writes", func(t *testing.T) {
		e2etest.CheckCacheWaits(t, "http://"+httpAddr+"/metrics", operator.DefaultName, 60*time.Second)
	})

	t.Run("deleting the PodTerminator stops it within one period and removes the finalizer and its metrics", func(t *testing.T) {
		updateSpec(t, terminators, name, func(s *chaosv1beta1.PodTerminatorSpec) { s.DryRun = false })
		resumed := pods.deletedCount()
		e2etest.Eventually(t, 10*time.Second, "terminations resume", func() bool { return pods.deletedCount() > resumed })
		if n := seriesOf(t, registry, "kooper_pod_terminator_terminated_pods_total", "terminator", name); n != 2 {
			t.Errorf("got %d series of the PodTerminator before deleting it, want 2 (dry_run true and false)", n)
		}
		if err := terminators.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		deletedAt := time.Now()
		e2etest.Eventually(t, 10*time.Second, "the PodTerminator is gone", func() bool {
			_, err := terminators.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		time.Sleep(2 * time.Second)
		if late := pods.deletedAfter(deletedAt.Add(time.Second + 500*time.Millisecond)); late > 0 {
			t.Errorf("got %d pods deleted more than a period after the PodTerminator was deleted, want 0", late)
		}
		// Both of its series (dry_run true and false) went with it.
		if n := seriesOf(t, registry, "kooper_pod_terminator_terminated_pods_total", "terminator", name); n != 0 {
			t.Errorf("got %d series of the deleted PodTerminator, want none", n)
		}
	})

	t.Run("the metrics pass promtool check metrics", func(t *testing.T) {
		e2etest.CheckMetrics(t, "http://"+httpAddr+"/metrics")
	})

	if m := pods.minimum(); m < 8 {
		t.Errorf("the live victims dropped to %d, want never below the minimum 8", m)
	} else {
		t.Logf("fewest live victims seen: %d (minimum 8); pods deleted in total: %d", m, pods.deletedCount())
	}
}

// seriesOf counts the series of family name with label=value.
func seriesOf(t *testing.T, g prom.Gatherer, name, label, value string) int {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					n++
				}
			}
		}
	}
	return n
}

// applyManifests applies the CRDs and the RBAC with kubectl and waits until
// the CRD is served.
func applyManifests(t *testing.T) {
	t.Helper()
	applyKustomizations(t, crdDir, rbacDir)
	client := versioned.NewForConfigOrDie(cluster.Config())
	e2etest.Eventually(t, 30*time.Second, "the PodTerminator CRD is served", func() bool {
		_, err := client.ChaosV1beta1().PodTerminators().List(context.Background(), metav1.ListOptions{})
		return err == nil
	})
}

// registerWebhook registers the operator's webhook as webhook.yaml does,
// but at https://addr and without a CA bundle, and removes it when the test
// ends.
func registerWebhook(t *testing.T, client kubernetes.Interface, addr string) {
	t.Helper()
	registerWebhookOn(t, cluster.Config(), client, addr)
}

// registerWebhookOn is registerWebhook on the cluster of cfg, whose client
// client is.
func registerWebhookOn(t *testing.T, cfg *rest.Config, client kubernetes.Interface, addr string) {
	t.Helper()
	url := "https://" + addr + webhook.Path
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	readManifest(t, "webhook.yaml", vwc)
	if len(vwc.Webhooks) != 1 {
		t.Fatalf("webhook.yaml has %d webhooks, want 1", len(vwc.Webhooks))
	}
	vwc.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Registered after startOperator's cleanup, so it runs first: nothing
	// should call a webhook that is gone.
	t.Cleanup(func() {
		err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
		if err != nil {
			t.Errorf("could not remove the webhook configuration: %v", err)
		}
	})
	registerConversion(t, cfg, addr)
}

// registerConversion points the PodTerminator CRD (of the cluster of cfg)'s conversion webhook at
// the operator's webhook server at addr, with no CA (the operator writes
// its own, as in a cluster), and puts the CRD's conversion back at the end
// of the test.
func registerConversion(t *testing.T, cfg *rest.Config, addr string) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	url := "https://" + addr + conversion.Path
	restore, err := devloop.PointConversion(context.Background(), crds, webhook.CRDName, apiextensionsv1.WebhookClientConfig{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restore(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// createVictims creates the Deployment "victim" of pods labelled
// app=victim in ns.
func createVictims(t *testing.T, client kubernetes.Interface, ns string, replicas int32) {
	t.Helper()
	createPods(t, client, ns, "victim", map[string]string{"app": "victim"}, replicas)
}

// createPods creates a Deployment name of pause pods with labels in ns.
func createPods(t *testing.T, client kubernetes.Interface, ns, name string, labels map[string]string, replicas int32) {
	t.Helper()
	_, err := client.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func updateSpec(t *testing.T, c interface {
	Get(context.Context, string, metav1.GetOptions) (*chaosv1beta1.PodTerminator, error)
	Update(context.Context, *chaosv1beta1.PodTerminator, metav1.UpdateOptions) (*chaosv1beta1.PodTerminator, error)
}, name string, edit func(*chaosv1beta1.PodTerminatorSpec)) time.Time {
	t.Helper()
	for {
		pt, err := c.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		edit(&pt.Spec)
		_, err = c.Update(context.Background(), pt, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue // the operator wrote its finalizer meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
}

// podWatch follows the pods of a namespace through a watch.
type podWatch struct {
	mu       sync.Mutex
	pods     map[string]bool // name: live (Ready, not deleted, not finished)
	deleted  map[string]time.Time
	counting bool
	min      int
}

func watchPods(t *testing.T, client kubernetes.Interface, ns string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=victim"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	pw := &podWatch{pods: map[string]bool{}, deleted: map[string]time.Time{}, min: 1 << 30}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			pw.observe(ev.Type, pod)
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return pw
}

func (pw *podWatch) observe(typ watch.EventType, pod *corev1.Pod) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	gone := typ == watch.Deleted || pod.DeletionTimestamp != nil
	if gone {
		if _, seen := pw.deleted[pod.Name]; !seen {
			pw.deleted[pod.Name] = time.Now()
		}
	}
	if typ == watch.Deleted {
		delete(pw.pods, pod.Name)
	} else {
		pw.pods[pod.Name] = !gone && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && podReady(pod)
	}
	if pw.counting {
		pw.min = min(pw.min, pw.liveLocked())
	}
}

// podReady reports whether the pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (pw *podWatch) liveLocked() int {
	n := 0
	for _, live := range pw.pods {
		if live {
			n++
		}
	}
	return n
}

func (pw *podWatch) live() int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.liveLocked()
}

// startCountingMinimum starts tracking the fewest live pods, from now.
func (pw *podWatch) startCountingMinimum() {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.counting = true
	pw.min = pw.liveLocked()
}

func (pw *podWatch) minimum() int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.min
}

func (pw *podWatch) deletedCount() int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return len(pw.deleted)
}

func (pw *podWatch) deletedAfter(t time.Time) int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	n := 0
	for _, at := range pw.deleted {
		if at.After(t) {
			n++
		}
	}
	return n
}

// periodEvent is one Event the operator recorded for a period.
type periodEvent struct {
	message string
	n, live int
	count   int
}

var periodMessage = regexp.MustCompile(`^(?:terminated|would terminate) (\d+) of (\d+) live pods \(\d+%(?:, at most \d+)?, minimum \d+\): `)

// periodEvents lists the Events about the PodTerminator name with reason.
func periodEvents(t *testing.T, client kubernetes.Interface, name, reason string) []periodEvent {
	t.Helper()
	list, err := client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=PodTerminator,involvedObject.name=" + name + ",reason=" + reason,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []periodEvent
	for _, e := range list.Items {
		m := periodMessage.FindStringSubmatch(e.Message)
		if m == nil {
			t.Fatalf("got %s event %q, want the period message format", reason, e.Message)
		}
		n, _ := strconv.Atoi(m[1])
		live, _ := strconv.Atoi(m[2])
		out = append(out, periodEvent{message: e.Message, n: n, live: live, count: int(e.Count)})
	}
	return out
}

type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, message)
}

func (w *warningRecorder) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.messages, "\n")
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
