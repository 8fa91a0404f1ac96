package handler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	chaosv1beta1 "github.com/kooperkit/kooper/apis/chaos/v1beta1"
	"github.com/kooperkit/kooper/apis/client/clientset/versioned/fake"
	"github.com/kooperkit/kooper/kooper/controller"
	"github.com/kooperkit/kooper/kooper/finalizer"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/chaos"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/handler"
	"github.com/kooperkit/kooper/operators/pod-terminator/internal/validation"
)

type pods struct {
	live    int
	prefix  string // of the pods' names; default "p"
	deleted []string
	methods []chaos.Method
	refuse  bool  // every eviction is refused by a budget
	listErr error // ListPods fails with it
}

func (p *pods) ListPods(context.Context, chaos.Target) ([]chaos.Pod, error) {
	if p.listErr != nil {
		return nil, p.listErr
	}
	prefix := p.prefix
	if prefix == "" {
		prefix = "p"
	}
	var out []chaos.Pod
	for i := range p.live {
		out = append(out, chaos.Pod{Namespace: "ns", Name: fmt.Sprintf("%s%d", prefix, i), Ready: true})
	}
	return out, nil
}

func (p *pods) DeletePod(_ context.Context, pod chaos.Pod, m chaos.Method) error {
	p.methods = append(p.methods, m)
	if p.refuse && m == chaos.Evict {
		return fmt.Errorf("%w: %s", chaos.ErrDisruptionBudget, pod)
	}
	p.deleted = append(p.deleted, pod.Name)
	return nil
}

type events struct{ types, reasons, messages []string }

func (e *events) Normal(_ runtime.Object, reason, format string, args ...any) {
	e.types = append(e.types, "Normal")
	e.reasons = append(e.reasons, reason)
	e.messages = append(e.messages, fmt.Sprintf(format, args...))
}
func (e *events) Warning(_ runtime.Object, reason, format string, args ...any) {
	e.types = append(e.types, "Warning")
	e.reasons = append(e.reasons, reason)
	e.messages = append(e.messages, fmt.Sprintf(format, args...))
}

type metrics struct {
	terminated, dryRun int
	forgotten          []string
}

func (m *metrics) Forget(terminator string) { m.forgotten = append(m.forgotten, terminator) }

func (m *metrics) AddTerminated(_ string, dryRun bool, n int) {
	if dryRun {
		m.dryRun += n
	} else {
		m.terminated += n
	}
}

type env struct {
	h       *handler.Handler
	client  *fake.Clientset
	pods    *pods
	events  *events
	metrics *metrics
	now     time.Time
}

func newEnv(t *testing.T, pt *chaosv1beta1.PodTerminator, live int) *env {
	t.Helper()
	e := &env{client: fake.NewClientset(pt), pods: &pods{live: live}, events: &events{}, metrics: &metrics{},
		now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	// region: optimistic
	// The fake ignores resourceVersions; make updates optimistic like the
	// API server's: a stale resourceVersion conflicts, a write bumps it.
	e.client.PrependReactor("update", "podterminators", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().(*chaosv1beta1.PodTerminator)
		cur, err := e.client.Tracker().Get(a.GetResource(), "", obj.Name)
		if err != nil {
			return true, nil, err
		}
		rv := cur.(*chaosv1beta1.PodTerminator).ResourceVersion
		if obj.ResourceVersion != rv {
			return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), obj.Name, fmt.Errorf("resourceVersion %s is not the latest %s", obj.ResourceVersion, rv))
		}
		n, _ := strconv.Atoi(rv)
		obj.ResourceVersion = strconv.Itoa(n + 1)
		return false, nil, nil
	})
	// The finalizer is written with a merge patch that names the
	// resourceVersion it read: the same rule.
	e.client.PrependReactor("patch", "podterminators", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		var read struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &read); err != nil {
			return true, nil, err
		}
		cur, err := e.client.Tracker().Get(a.GetResource(), "", p.GetName())
		if err != nil {
			return true, nil, err
		}
		rv := cur.(*chaosv1beta1.PodTerminator).ResourceVersion
		if read.Metadata.ResourceVersion != rv {
			return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), p.GetName(), fmt.Errorf("resourceVersion %s is not the latest %s", read.Metadata.ResourceVersion, rv))
		}
		n, _ := strconv.Atoi(rv)
		bumped := cur.DeepCopyObject().(*chaosv1beta1.PodTerminator)
		bumped.ResourceVersion = strconv.Itoa(n + 1)
		if err := json.Unmarshal(p.GetPatch(), &struct{ Metadata *metav1.ObjectMeta }{&bumped.ObjectMeta}); err != nil {
			return true, nil, err
		}
		bumped.ResourceVersion = strconv.Itoa(n + 1)
		return true, bumped, e.client.Tracker().Update(a.GetResource(), bumped, "")
	})
	// endregion: optimistic
	e.h = &handler.Handler{
		Client:     e.client,
		Terminator: &chaos.Terminator{Pods: e.pods, Deleter: e.pods, Rand: rand.New(rand.NewPCG(1, 1))},
		Events:     e.events,
		Metrics:    e.metrics,
		Now:        func() time.Time { return e.now },
	}
	return e
}

// handle runs one handling of the stored object, as the controller would.
func (e *env) handle(t *testing.T) error {
	t.Helper()
	pt, err := e.client.ChaosV1beta1().PodTerminators().Get(context.Background(), "pt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e.h.Handle(context.Background(), pt)
}

func (e *env) stored(t *testing.T) *chaosv1beta1.PodTerminator {
	t.Helper()
	pt, err := e.client.ChaosV1beta1().PodTerminators().Get(context.Background(), "pt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

func terminator(percent, minimum int32, dryRun bool) *chaosv1beta1.PodTerminator {
	return &chaosv1beta1.PodTerminator{
		ObjectMeta: metav1.ObjectMeta{Name: "pt", Generation: 1, ResourceVersion: "1"},
		Spec: chaosv1beta1.PodTerminatorSpec{
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"app": "victim"}},
			Period:      &metav1.Duration{Duration: 10 * time.Second},
			Termination: chaosv1beta1.Termination{Percent: percent, MinimumInstances: ptr.To(minimum)},
			DryRun:      dryRun,
		},
	}
}

func TestAPeriodTerminatesRecordsAndRequeues(t *testing.T) {
	e := newEnv(t, terminator(30, 8, false), 10)
	err := e.handle(t)
	if d, ok := controller.RequeueDelay(err); !ok || d != 10*time.Second {
		t.Fatalf("got %v, want a requeue after the 10s period", err)
	}
	if len(e.pods.deleted) != 2 {
		t.Errorf("got %v deleted, want 2 (30%% of 10 capped by minimum 8)", e.pods.deleted)
	}
	pt := e.stored(t)
	if !finalizer.Has(pt, handler.Finalizer) {
		t.Error("got no finalizer after the first handling")
	}
	if pt.Status.TerminatedTotal != 2 || len(pt.Status.LastTerminated) != 2 || pt.Status.LastTerminationTime == nil ||
		!pt.Status.LastTerminationTime.Time.Equal(e.now) || pt.Status.ObservedGeneration != 1 {
		t.Errorf("got status %+v, want 2 terminated at %s for generation 1", pt.Status, e.now)
	}
	if !meta.IsStatusConditionTrue(pt.Status.Conditions, chaosv1beta1.ConditionReady) {
		t.Errorf("got conditions %+v, want Ready", pt.Status.Conditions)
	}
	if e.metrics.terminated != 2 || len(e.events.reasons) != 1 || e.events.reasons[0] != handler.ReasonTerminated {
		t.Fatalf("got metric %d and events %v, want 2 and one Terminated event", e.metrics.terminated, e.events.reasons)
	}
	want := fmt.Sprintf("terminated 2 of 10 live pods (30%%, minimum 8): ns/%s, ns/%s", e.pods.deleted[0], e.pods.deleted[1])
	if e.events.messages[0] != want {
		t.Errorf("got event message %q, want %q", e.events.messages[0], want)
	}
}

func TestMaxPodsCapsAPeriod(t *testing.T) {
	pt := terminator(50, 1, false)
	pt.Spec.Termination.MaxPods = ptr.To[int32](2)
	e := newEnv(t, pt, 10)
	_ = e.handle(t)
	if len(e.pods.deleted) != 2 {
		t.Errorf("got %v deleted, want 2 (50%% of 10 is 5, at most 2)", e.pods.deleted)
	}
	if want := "terminated 2 of 10 live pods (50%, at most 2, minimum 1): "; len(e.events.messages) != 1 || !strings.HasPrefix(e.events.messages[0], want) {
		t.Errorf("got events %q, want one starting %q", e.events.messages, want)
	}
}

func TestBeforeThePeriodEndsNothingHappensButARequeue(t *testing.T) {
	e := newEnv(t, terminator(30, 0, false), 10)
	_ = e.handle(t)
	e.now = e.now.Add(4 * time.Second)
	err := e.handle(t)
	if d, ok := controller.RequeueDelay(err); !ok || d != 6*time.Second {
		t.Errorf("got %v, want a requeue after the remaining 6s", err)
	}
	if len(e.pods.deleted) != 3 {
		t.Errorf("got %d deleted in total, want only the first period's 3", len(e.pods.deleted))
	}
}

func TestADryRunDeletesNothingAndSaysWhatItWouldHave(t *testing.T) {
	e := newEnv(t, terminator(50, 0, true), 10)
	_ = e.handle(t)
	pt := e.stored(t)
	if len(e.pods.deleted) != 0 || pt.Status.TerminatedTotal != 0 {
		t.Errorf("got %v deleted and total %d in a dry run, want none", e.pods.deleted, pt.Status.TerminatedTotal)
	}
	if e.metrics.dryRun != 5 || len(e.events.reasons) != 1 || e.events.reasons[0] != handler.ReasonDryRun ||
		!strings.HasPrefix(e.events.messages[0], "would terminate 5 of 10 live pods (50%, minimum 0): ns/p") {
		t.Errorf("got dry-run metric %d and events %v %q, want 5 and one DryRun event naming them", e.metrics.dryRun, e.events.reasons, e.events.messages)
	}
}

func TestADeletedTerminatorLosesItsFinalizerAndStops(t *testing.T) {
	pt := terminator(30, 0, false)
	pt.Finalizers = []string{handler.Finalizer}
	pt.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	e := newEnv(t, pt, 10)
	if err := e.handle(t); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	if len(e.pods.deleted) != 0 {
		t.Errorf("got %v deleted for a deleted terminator", e.pods.deleted)
	}
	if got := e.stored(t); finalizer.Has(got, handler.Finalizer) {
		t.Error("the finalizer is still there")
	}
	if len(e.metrics.forgotten) != 1 || e.metrics.forgotten[0] != "pt" {
		t.Errorf("got metrics forgotten for %v, want pt once", e.metrics.forgotten)
	}
}

func TestALiveTerminatorKeepsItsMetrics(t *testing.T) {
	e := newEnv(t, terminator(30, 0, false), 10)
	_ = e.handle(t)
	e.now = e.now.Add(10 * time.Second)
	_ = e.handle(t)
	if len(e.metrics.forgotten) != 0 {
		t.Errorf("got metrics forgotten for %v, want none while the PodTerminator exists", e.metrics.forgotten)
	}
}

func TestTheSpecsMethodIsUsed(t *testing.T) {
	tests := []struct {
		name   string
		method chaosv1beta1.TerminationMethod
		want   chaos.Method
	}{
		{"unset (an object older than the field)", "", chaos.Evict},
		{"Eviction", chaosv1beta1.TerminationMethodEviction, chaos.Evict},
		{"Delete", chaosv1beta1.TerminationMethodDelete, chaos.Delete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pt := terminator(20, 0, false)
			pt.Spec.Termination.Method = tt.method
			e := newEnv(t, pt, 10)
			_ = e.handle(t)
			if len(e.pods.methods) != 2 || e.pods.methods[0] != tt.want || e.pods.methods[1] != tt.want {
				t.Errorf("got methods %v, want %v twice", e.pods.methods, tt.want)
			}
		})
	}
}

func TestEvictionsABudgetRefusesAreReportedAndLeftForTheNextPeriod(t *testing.T) {
	tests := []struct {
		name        string
		live        int
		wantMessage string
	}{
		{"few refused, all named", 3, "0 of 3 live pods terminated; a disruption budget refused evicting 3 pods, tried again next period: ns/p"},
		{"many refused, the first few named", 20, ", and 15 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, terminator(100, 0, false), tt.live)
			e.pods.refuse = true
			err := e.handle(t)
			if d, ok := controller.RequeueDelay(err); !ok || d != 10*time.Second {
				t.Fatalf("got %v, want a requeue after the period, not a retry", err)
			}
			if len(e.pods.methods) != tt.live {
				t.Errorf("got %d evictions asked, want each of the %d chosen pods asked once", len(e.pods.methods), tt.live)
			}
			pt := e.stored(t)
			c := meta.FindStatusCondition(pt.Status.Conditions, chaosv1beta1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != chaosv1beta1.ReasonDisruptionBudget || !strings.Contains(c.Message, tt.wantMessage) {
				t.Errorf("got Ready %+v, want False, reason DisruptionBudget and a message containing %q", c, tt.wantMessage)
			}
			if n := strings.Count(c.Message, "ns/p"); n > 5 {
				t.Errorf("got %d pods named in %q, want at most 5", n, c.Message)
			}
			if pt.Status.TerminatedTotal != 0 || e.metrics.terminated != 0 {
				t.Errorf("got total %d and metric %d, want nothing counted as terminated", pt.Status.TerminatedTotal, e.metrics.terminated)
			}
			if len(e.events.reasons) != 1 || e.events.types[0] != "Warning" || e.events.reasons[0] != chaosv1beta1.ReasonDisruptionBudget ||
				!strings.Contains(e.events.messages[0], "refused evicting") {
				t.Errorf("got events %v %v %q, want one Warning DisruptionBudget event", e.events.types, e.events.reasons, e.events.messages)
			}
			// The next period tries again, and reports success once the budget allows.
			e.pods.refuse = false
			e.now = e.now.Add(10 * time.Second)
			_ = e.handle(t)
			if c := meta.FindStatusCondition(e.stored(t).Status.Conditions, chaosv1beta1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || len(e.pods.deleted) != tt.live {
				t.Errorf("got Ready %+v and %d deleted in the next period, want Ready and %d deleted", c, len(e.pods.deleted), tt.live)
			}
		})
	}
}

func TestAnInvalidSpecIsMarkedAndNotRetried(t *testing.T) {
	e := newEnv(t, terminator(0, 0, false), 10) // slipped past validation
	err := e.handle(t)
	if !controller.IsTerminal(err) {
		t.Errorf("got %v, want a terminal error", err)
	}
	pt := e.stored(t)
	if !meta.IsStatusConditionTrue(pt.Status.Conditions, chaosv1beta1.ConditionInvalid) || meta.IsStatusConditionTrue(pt.Status.Conditions, chaosv1beta1.ConditionReady) {
		t.Errorf("got conditions %+v, want Invalid and not Ready", pt.Status.Conditions)
	}
	if len(e.pods.deleted) != 0 {
		t.Errorf("got %v deleted for an invalid spec", e.pods.deleted)
	}
}

func TestAProtectedNamespaceIsInvalidAndNeverSearched(t *testing.T) {
	pt := terminator(30, 0, false)
	pt.Spec.Namespaces = []string{"kube-system"}
	e := newEnv(t, pt, 10)
	e.h.Rules = validation.Rules{Namespace: "kooper-pod-terminator"}
	if err := e.handle(t); !controller.IsTerminal(err) {
		t.Errorf("got %v, want a terminal error", err)
	}
	got := e.stored(t)
	c := meta.FindStatusCondition(got.Status.Conditions, chaosv1beta1.ConditionInvalid)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, `"kube-system" is protected`) {
		t.Errorf("got Invalid condition %+v, want true with the validation message", c)
	}
	if len(e.pods.deleted) != 0 {
		t.Errorf("got %v deleted, want none", e.pods.deleted)
	}
}

func TestTheLastTerminatedListKeepsTheNewestTen(t *testing.T) {
	e := newEnv(t, terminator(100, 0, false), 7)
	_ = e.handle(t)
	e.now = e.now.Add(10 * time.Second)
	_ = e.handle(t)
	pt := e.stored(t)
	if got := len(pt.Status.LastTerminated); got != chaosv1beta1.MaxLastTerminated {
		t.Errorf("got %d in lastTerminated, want %d", got, chaosv1beta1.MaxLastTerminated)
	}
	if pt.Status.TerminatedTotal != 14 || !pt.Status.LastTerminated[0].Time.Time.Equal(e.now) {
		t.Errorf("got total %d and newest %v, want 14 and the second period first", pt.Status.TerminatedTotal, pt.Status.LastTerminated[0].Time)
	}
}

// A dry-run period on a full lastTerminated list changes only the entries,
// not their number: the status is still written, so it names this period's
// pods.
func TestADryRunPeriodOnAFullListIsRecorded(t *testing.T) {
	e := newEnv(t, terminator(100, 0, true), chaosv1beta1.MaxLastTerminated)
	_ = e.handle(t)
	first := e.stored(t).Status.LastTerminated
	if len(first) != chaosv1beta1.MaxLastTerminated {
		t.Fatalf("got %d in lastTerminated after the first period, want a full list of %d", len(first), chaosv1beta1.MaxLastTerminated)
	}
	e.now = e.now.Add(10 * time.Second)
	e.pods.prefix = "q" // the second period sees other pods
	_ = e.handle(t)
	got := e.stored(t).Status.LastTerminated
	if len(got) != chaosv1beta1.MaxLastTerminated || got[0].Name[0] != 'q' || !got[0].Time.Time.Equal(e.now) {
		t.Errorf("got lastTerminated %+v, want the second period's pods (q*) at %v", got, e.now)
	}
}

// region: stale

// The cache may hand out a copy older than the operator's own last write: its
// status says no period ran yet. The claim conflicts and nothing is deleted.
func TestAStaleCopyTerminatesNothing(t *testing.T) {
	e := newEnv(t, terminator(30, 0, false), 10)
	stale := e.stored(t) // before any handling
	_ = e.handle(t)      // adds the finalizer and runs the first period
	deleted := len(e.pods.deleted)
	stale.Finalizers = []string{handler.Finalizer} // only status and resourceVersion are behind
	if err := e.h.Handle(context.Background(), stale); err != nil {
		t.Errorf("got %v, want nil: a newer version is queued", err)
	}
	if len(e.pods.deleted) != deleted {
		t.Errorf("got %d more pods deleted from a stale copy, want 0", len(e.pods.deleted)-deleted)
	}
}

// endregion: stale

// Too many matching pods (the lister's page bound) fail the period: status
// and a Warning Event say what to narrow, and the next period tries again.
func TestAListingFailureIsReportedAndRetriedNextPeriod(t *testing.T) {
	e := newEnv(t, terminator(30, 0, false), 10)
	e.pods.listErr = errors.New("too many matching pods: narrow spec.selector or spec.namespaces")
	err := e.handle(t)
	if d, ok := controller.RequeueDelay(err); !ok || d != 10*time.Second {
		t.Fatalf("got %v, want a requeue after the period", err)
	}
	c := meta.FindStatusCondition(e.stored(t).Status.Conditions, chaosv1beta1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != chaosv1beta1.ReasonTerminationFailed || !strings.Contains(c.Message, "narrow spec.selector") {
		t.Errorf("got Ready %+v, want False, TerminationFailed, with the lister's message", c)
	}
	if len(e.events.types) != 1 || e.events.types[0] != "Warning" || e.events.reasons[0] != chaosv1beta1.ReasonTerminationFailed {
		t.Errorf("got events %v %v, want one Warning TerminationFailed", e.events.types, e.events.reasons)
	}
}

// The finalizer is written as a patch of metadata alone: the spec goes
// back to the API server untouched (an Update would rewrite a period of
// "60s" as "1m0s" and bump the generation), at the resourceVersion read,
// so that a stale copy conflicts.
func TestTheFinalizerIsAPatchOfMetadataAlone(t *testing.T) {
	e := newEnv(t, terminator(30, 0, true), 10)
	stale := e.stored(t)
	_ = e.handle(t)
	var patches []string
	for _, a := range e.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "" {
			t.Errorf("got an update of the PodTerminator, want a patch of its metadata")
		}
		if p, ok := a.(k8stesting.PatchAction); ok {
			patches = append(patches, string(p.GetPatch()))
		}
	}
	want := `{"metadata":{"finalizers":["` + handler.Finalizer + `"],"resourceVersion":"` + stale.ResourceVersion + `"}}`
	if len(patches) != 1 || patches[0] != want {
		t.Errorf("got patches %q, want one: %s", patches, want)
	}
}
